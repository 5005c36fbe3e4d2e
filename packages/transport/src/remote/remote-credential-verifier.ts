import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { unauthenticated, type Principal } from '@switchyard/core';
import { isApiToken, refuseExpiredKey, refuseExpiredToken, verifyOneCredential, type Credentials } from '@switchyard/services';
import { loadProto, lookup } from '../grpc/proto.ts';
import { CredentialWatch, type CredentialEventMessage, type WatchLog } from './credential-watch.ts';
import { linkCredential, type ForwardedCredential } from './forwarded-credential.ts';
import { fromGrpcError } from './grpc-status-errors.ts';
import { principalFromRbacContext, type RbacContextMessage } from './principal-from-rbac.ts';
import { ValidatedCredentialCache, credentialCacheKey } from './validated-credential-cache.ts';
import { SERVICES_CHANNEL_OPTIONS } from './services-channel.ts';

const AuthServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/auth/v1/auth.proto'), 'svc.auth.v1.AuthService');

type CredentialRequest = { bearer_token: string; client_address?: string } | { sdk_key: string };
type Callback<T> = (error: grpc.ServiceError | null, response?: T) => void;
interface AuthStub {
  validateCredential(request: CredentialRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback<RbacContextMessage>): grpc.ClientUnaryCall;
  watchCredentials(request: object, metadata: grpc.Metadata, options: grpc.CallOptions): grpc.ClientReadableStream<CredentialEventMessage>;
}

/** Longer keys are refused without asking, as the services' CredentialVerifier refuses them unread. */
const MAX_SDK_KEY_LENGTH = 256;
/** A refused SDK key is remembered at most this long: a key created just after stays refused no longer. */
const MAX_NEGATIVE_TTL_MS = 2_000;

export interface RemoteCredentialVerifierOptions {
  /** How long a validated credential is answered from memory. Default 30 s; never past a token's expiry. */
  cacheTtlMs?: number;
  /** How long an SDK key the services refused is refused from memory. Default and at most 2 s. */
  negativeCacheTtlMs?: number;
  /** Answers (and, separately, refusals) kept at most. Default 100,000. */
  maxCachedCredentials?: number;
  /** Deadline of each ValidateCredential call. Default 5 s. */
  callTimeoutMs?: number;
  /** Backoff between attempts to reopen the watch. Default 100 ms doubling up to 2 s, jittered. */
  minRetryMs?: number;
  maxRetryMs?: number;
  /** The clock of cache expiry. */
  now?: () => number;
  /** Told about the watch's state; never given a credential. */
  log?: WatchLog;
}

/**
 * The gateway's CredentialVerifier: the same questions, answered by the services
 * (svc.auth.v1.AuthService/ValidateCredential) since the gateway holds no database and no token
 * secret. Every principal is linked to the credential that produced it (forwarded-credential.ts),
 * so the gateway forwards that credential and the services authorize again.
 *
 * Answers are kept in memory only while the WatchCredentials stream is established: it reports
 * every revocation and ended session, which evicts the affected answers at once. When it drops,
 * the whole cache is dropped and nothing is cached until it is back, so no cached answer can
 * outlive a revocation. Without the watch every request asks the services.
 */
export class RemoteCredentialVerifier {
  private readonly client: grpc.Client;
  private readonly stub: AuthStub;
  private readonly cache: ValidatedCredentialCache;
  private readonly watch: CredentialWatch;
  private readonly events = new EventEmitter();
  private readonly cacheTtlMs: number;
  private readonly negativeTtlMs: number;
  private readonly callTimeoutMs: number;
  private readonly now: () => number;
  /** Concurrent lookups of one credential share one call (after a cache drop, many arrive at once). */
  private readonly inFlight = new Map<string, { generation: number; answer: Promise<Principal> }>();
  /**
   * Bumped by every eviction, by the watch's loss and by its (re)establishment. An answer asked for
   * before a bump may predate a revocation, so it is returned but neither cached nor shared.
   */
  private generation = 0;
  private wasReady = false;
  private readonly log: WatchLog;

  constructor(address: string, credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(), options: RemoteCredentialVerifierOptions = {}) {
    const minRetryMs = options.minRetryMs ?? 100;
    const maxRetryMs = options.maxRetryMs ?? 2_000;
    this.cacheTtlMs = options.cacheTtlMs ?? 30_000;
    this.negativeTtlMs = Math.min(options.negativeCacheTtlMs ?? MAX_NEGATIVE_TTL_MS, MAX_NEGATIVE_TTL_MS);
    this.callTimeoutMs = options.callTimeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.cache = new ValidatedCredentialCache({ maxEntries: options.maxCachedCredentials ?? 100_000, now: this.now });
    this.client = new AuthServiceClient(address, credentials, {
      ...SERVICES_CHANNEL_OPTIONS,
      // The channel's own reconnection follows the watch's backoff.
      'grpc.initial_reconnect_backoff_ms': minRetryMs,
      'grpc.max_reconnect_backoff_ms': maxRetryMs,
    });
    this.stub = this.client as unknown as AuthStub;
    this.events.setMaxListeners(0);
    this.log = options.log ?? (() => {});
    this.watch = new CredentialWatch(
      () => this.stub.watchCredentials({}, new grpc.Metadata(), {}),
      {
        onReady: () => this.watchReady(),
        onLost: () => this.dropAll(),
        onRevoked: (sdkKeyId) => {
          this.generation++;
          // The id names an SDK key or an API token (both are announced on one channel).
          this.cache.forgetOwner('sdk_key', sdkKeyId);
          this.cache.forgetOwner('api_token', sdkKeyId);
          this.events.emit('revoked', sdkKeyId);
        },
        onSessionChanged: (userId) => {
          if (userId === null) this.dropAll();
          else {
            this.generation++;
            this.cache.forgetOwner('user', userId);
          }
          this.events.emit('session', userId);
        },
        onContextSecretsChanged: (environmentId) => this.events.emit('contextSecrets', environmentId),
      },
      { minRetryMs, maxRetryMs, startTimeoutMs: this.callTimeoutMs, log: this.log },
    );
  }

  /**
   * Opens the watch. Resolves once it is established or its first attempt failed (services down):
   * it keeps retrying in the background, and verification works meanwhile, uncached.
   */
  start(): Promise<void> {
    return this.watch.start();
  }

  async stop(): Promise<void> {
    this.watch.stop();
    this.client.close();
  }

  /** Whether the watch is established, i.e. answers are being cached (readiness reports it). */
  isWatching(): boolean {
    return this.watch.isReady();
  }

  /** Exactly one credential must be presented. @throws UNAUTHENTICATED, or UNAVAILABLE when the services cannot be reached. */
  verify(credentials: Credentials): Promise<Principal> {
    return verifyOneCredential(this, credentials);
  }

  /**
   * A bearer token's user with its role now, while its session is live (refusals are not cached);
   * or an API token (`swy_`), whose expiry is checked here on every use too. `clientAddress` travels
   * to the services, which throttle unknown API tokens by it.
   */
  async verifyBearer(token: string, clientAddress?: string): Promise<Principal> {
    const key = credentialCacheKey('bearer', token);
    const cached = this.cache.get(key);
    if (cached) return refuseExpiredToken(cached, this.now());
    return refuseExpiredToken(await this.validate(key, { bearer_token: token, client_address: clientAddress ?? '' }, { bearerToken: token }), this.now());
  }

  /** The SDK-key principal from memory; null for a key refused moments ago; undefined: ask the services. */
  cachedSdkKey(rawKey: string): Principal | null | undefined {
    return this.cache.get(credentialCacheKey('sdk_key', rawKey));
  }

  async verifySdkKey(rawKey: string): Promise<Principal> {
    const key = credentialCacheKey('sdk_key', rawKey);
    const cached = this.cache.get(key);
    if (cached) return refuseExpiredKey(cached, this.now());
    if (cached === null || rawKey.length === 0 || rawKey.length > MAX_SDK_KEY_LENGTH) throw unauthenticated('invalid SDK key');
    return refuseExpiredKey(await this.validate(key, { sdk_key: rawKey }, { sdkKey: rawKey }), this.now());
  }

  /** Calls `listener` with the id of every SDK key revoked from now on. Returns the unsubscribe function. */
  onRevoked(listener: (sdkKeyId: string) => void): () => void {
    this.events.on('revoked', listener);
    return () => this.events.off('revoked', listener);
  }

  /**
   * Calls `listener` with the id of every user whose sessions or roles changed, or null when anyone's
   * may have: the services lost their notifications, or this watch was re-established after a loss
   * (changes in between were not heard). Returns the unsubscribe function.
   */
  onSessionChanged(listener: (userId: string | null) => void): () => void {
    this.events.on('session', listener);
    return () => this.events.off('session', listener);
  }

  /**
   * Calls `listener` with the environment whose context signing secrets changed, or null when any
   * may have (the watch was lost: nothing heard meanwhile). Returns the unsubscribe function.
   */
  onContextSecretsChanged(listener: (environmentId: string | null) => void): () => void {
    this.events.on('contextSecrets', listener);
    return () => this.events.off('contextSecrets', listener);
  }

  private validate(key: string, request: CredentialRequest, credential: ForwardedCredential): Promise<Principal> {
    const generation = this.generation;
    const shared = this.inFlight.get(key);
    if (shared && shared.generation === generation) return shared.answer;
    const answer = this.ask(key, request, credential, generation);
    this.inFlight.set(key, { generation, answer });
    const done = () => {
      if (this.inFlight.get(key)?.answer === answer) this.inFlight.delete(key);
    };
    answer.then(done, done);
    return answer;
  }

  private async ask(key: string, request: CredentialRequest, credential: ForwardedCredential, generation: number): Promise<Principal> {
    let context: RbacContextMessage;
    try {
      context = await this.call(request);
    } catch (error) {
      const refusal = fromGrpcError(error);
      if ('sdkKey' in credential && refusal.code === 'UNAUTHENTICATED' && this.mayCache(generation)) {
        this.cache.rememberRefusal(key, this.now() + this.negativeTtlMs);
      }
      throw refusal;
    }
    let principal: Principal;
    try {
      principal = linkCredential(principalFromRbacContext(context), credential);
    } catch (error) {
      this.log('warn', 'the services answered a credential context this gateway cannot read', { kind: context.kind });
      throw error;
    }
    if (this.mayCache(generation)) {
      const until = this.now() + this.cacheTtlMs;
      // An API token is no JWT: its answer lives as long as any (revocations evict it, its expiry is checked on every use).
      const tokenExpiry = 'bearerToken' in credential && !isApiToken(credential.bearerToken) ? tokenExpiresAtMs(credential.bearerToken) : until;
      // A token whose expiry cannot be read is not cached: its answer could outlive it.
      if (tokenExpiry !== undefined) this.cache.remember(key, principal, Math.min(until, tokenExpiry));
    }
    return principal;
  }

  private call(request: CredentialRequest): Promise<RbacContextMessage> {
    return new Promise((resolve, reject) => {
      this.stub.validateCredential(request, new grpc.Metadata(), { deadline: Date.now() + this.callTimeoutMs }, (error, response) =>
        error || !response ? reject(error) : resolve(response),
      );
    });
  }

  /** Only while the watch is established, and only an answer no eviction happened during. */
  private mayCache(generation: number): boolean {
    return this.watch.isReady() && generation === this.generation;
  }

  private watchReady(): void {
    this.generation++;
    const resumed = this.wasReady;
    this.wasReady = true;
    if (resumed) this.events.emit('session', null);
  }

  private dropAll(): void {
    this.generation++;
    this.cache.clear();
    this.events.emit('contextSecrets', null);
  }
}

/**
 * The `exp` of a JWT, read without verifying it: the services verified the token, this only keeps
 * its cached answer from outliving it.
 */
function tokenExpiresAtMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const { exp } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
