import * as grpc from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import { EvaluationCounter, permissionDenied, unauthenticated, type EnvironmentScope, type Principal } from '@switchyard/core';
import { ClientOriginUnion, ClientRateLimiter, ContextSigningKeys, ContextTokenVerifier, CountReportSender, EvaluationCountFlusher, EvaluationService, KeyUsageRecorder, SyncHub } from '@switchyard/services';
import { ClientAccess } from '@switchyard/transport/domains/client/rest-client-access.ts';
import type { GatewayConfig, ServicesConnection } from '@switchyard/transport/config.ts';
import { createHttpApp } from '@switchyard/transport/http/app.ts';
import { closeHttpApp } from '@switchyard/transport/http/close-app.ts';
import { registerHealthRoutes } from '@switchyard/transport/http/health-routes.ts';
import { registerMetricsRoute } from '@switchyard/transport/http/metrics-routes.ts';
import { registerBrowserRoutes } from '@switchyard/transport/http/browser-routes.ts';
import { registerOpenApi } from '@switchyard/transport/http/openapi.ts';
import { registerRestRoutes } from '@switchyard/transport/http/rest-routes.ts';
import type { GatewayServices } from '@switchyard/transport/gateway-services.ts';
import type { RootLogger } from '@switchyard/transport/logging.ts';
import { ServerMetrics } from '@switchyard/transport/metrics.ts';
import { actorOf, scopeActingFor } from '@switchyard/transport/remote/forwarded-credential.ts';
import { RemoteCredentialVerifier } from '@switchyard/transport/remote/remote-credential-verifier.ts';
import { RemoteDefinitionSnapshots } from '@switchyard/transport/remote/remote-definition-snapshots.ts';
import { RemoteListMembership } from '@switchyard/transport/remote/remote-list-membership.ts';
import { createRemoteServices } from '@switchyard/transport/remote/remote-services.ts';
import { SERVICES_CHANNEL_OPTIONS } from '@switchyard/transport/remote/services-channel.ts';
import { startPublicSyncServer } from '@switchyard/transport/public-sync-server.ts';
import { SHUTDOWN_GRACE_MS, ShutdownSequence } from '@switchyard/transport/shutdown-sequence.ts';
import { BrowserStreams } from '@switchyard/transport/domains/client/rest-event-streams.ts';
import { ChannelTokens } from '@switchyard/transport/domains/client/rest-channel-tokens.ts';
import { RemoteChannelKey } from '@switchyard/transport/domains/client/remote-channel-key.ts';

export interface RunningGateway {
  httpPort: number;
  syncGrpcPort: number;
  http: FastifyInstance;
  services: GatewayServices;
  metrics: ServerMetrics;
  /** Sends this gateway's evaluation counts to the services every INSIGHTS_FLUSH_MS and at stop (tests flush it directly too). */
  insightsFlusher: EvaluationCountFlusher;
  /** True while the gateway hears the services' credential events (its readiness). */
  isReady(): boolean;
  stop(): Promise<void>;
}

/**
 * How a gateway stops, first to last: its public streams and servers (draining requests, which
 * may still call the services), then its links to the services.
 */
const GATEWAY_SHUTDOWN_ORDER = [
  'sync streams',
  'public sync gRPC server',
  'REST server',
  'key uses',
  'evaluation counts',
  'client origins',
  'definitions',
  'list memberships',
  'credential verifier',
  'channel token key',
  'services channel',
] as const;

/** The channel credentials for SERVICES_URL: plaintext, TLS, or TLS with this gateway's certificate. */
export function servicesChannelCredentials(connection: ServicesConnection): grpc.ChannelCredentials {
  const tls = connection.tls;
  if (!tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(tls.ca, tls.key, tls.cert);
}

/**
 * The composition root of a gateway (docs/architecture.md): the REST API and the public sync port
 * with no database. Credentials are checked by the services (cached here while their revocations
 * are heard), calls go to the services' `*GatewayService`s with the caller's credential, and
 * evaluation and sync run from definitions streamed by FlagService.Sync.
 */
export async function startGateway(config: GatewayConfig, logging: RootLogger): Promise<RunningGateway> {
  const log = logging.forModule('gateway');
  const shutdown = new ShutdownSequence(GATEWAY_SHUTDOWN_ORDER);
  const metrics = new ServerMetrics();
  const address = config.services.url;
  const credentials = servicesChannelCredentials(config.services);
  const channel = new grpc.Channel(address, credentials, SERVICES_CHANNEL_OPTIONS);
  shutdown.add('services channel', async () => channel.close());
  try {
    const verifier = new RemoteCredentialVerifier(address, credentials, {
      callTimeoutMs: config.services.deadlineMs,
      log: (level, message, fields) => log[level](fields ?? {}, message),
    });
    await verifier.start();
    shutdown.add('credential verifier', () => verifier.stop());
    const definitions = new RemoteDefinitionSnapshots(address, credentials, { logger: logging.forModule('definitions') });
    definitions.start();
    shutdown.add('definitions', async () => definitions.stop());
    const remote = createRemoteServices({
      channel,
      deadlineMs: config.services.deadlineMs,
      onDefinitionsChanged: (routeId) => definitions.forget(routeId),
      onCall: metrics.servicesCall,
    });
    const membership = new RemoteListMembership(address, credentials, definitions, { callTimeoutMs: config.services.deadlineMs });
    shutdown.add('list memberships', async () => membership.close());
    // Evaluations answered here are counted here, and only here (a client key's OFREP answers come
    // from the services, which count them): the drained counts go to InsightsGatewayService.RecordCounts.
    const evaluationCounter = new EvaluationCounter(config.insights.maxKeys);
    // Reports of at most 5,000 counts, each with an id the services apply once: one whose call
    // fails is sent again as it is, the ones after it go back into the counter.
    const countReports = new CountReportSender((report) => remote.insights.recordCounts(report), {
      onRefused: (report, error) => log.warn({ counts: report.counts.length, err: { message: (error as Error).message } }, 'evaluation counts refused by the services; dropped'),
    });
    const insightsFlusher = new EvaluationCountFlusher(
      evaluationCounter,
      (drained) => countReports.write(drained),
      {
        holdsUnsent: () => countReports.holdsUnsent,
        intervalMs: config.insights.flushMs,
        onError: (error) => log.warn({ err: { message: (error as Error).message } }, 'evaluation counts could not be sent to the services; the next flush sends them'),
        onDropped: (dropped) => log.warn({ dropped, max_keys: config.insights.maxKeys }, 'evaluation counts: evaluations not counted (INSIGHTS_MAX_KEYS distinct keys held)'),
      },
    );
    shutdown.add('evaluation counts', () => insightsFlusher.stop());
    const evaluation = new GatewayEvaluationService(
      { segments: membership },
      definitions,
      // Sent as the evaluation's caller, in its environment (resolved again by the services).
      async (scope, exposures) => {
        const caller = actorOf(scope);
        await remote.ingest.recordEvaluationExposures(caller, await remote.ingest.scope(caller, scope.environmentId), exposures);
      },
      Date.now,
      metrics,
      { budgetMs: config.evaluationBudgetMs, counter: config.insights.counting ? evaluationCounter : undefined },
    );
    const syncLog = logging.forModule('sync');
    const sync = new SyncHub(
      {
        snapshots: definitions,
        scopes: { environment: (principal, id) => environmentScope(remote, principal, id) },
        verifier,
        // A gateway cannot ask the sessions table: a bearer stream ends when its user's sessions change.
        sessions: { onChanged: (listener) => verifier.onSessionChanged(listener), currentAccess: () => Promise.reject(unauthenticated('the session has changed')) },
        // After a resync, the keys still active, asked as the caller that opened the environment.
        sdkKeys: { list: async (scope) => (await remote.management.activeSdkKeyIds(actorOf(scope), scope.environmentId)).map((id) => ({ id })) },
      },
      {
        maxStreamsPerKey: config.syncMaxStreamsPerKey,
        onError: (error, scope) => syncLog.warn({ err: { message: (error as Error).message }, environment_id: scope.environmentId }, 'sync: definitions could not be loaded; streams closed'),
      },
    );
    sync.start();
    metrics.watchSync(sync);
    // Browser event streams: their tokens sealed with the services' key, so any gateway opens any token.
    const channelKey = new RemoteChannelKey(address, credentials, config.services.deadlineMs);
    await channelKey.start();
    shutdown.add('channel token key', async () => channelKey.stop());
    const clientStreams = new BrowserStreams(sync, verifier, new ChannelTokens(channelKey.current, config.clientStreams.tokenWindowMs), config.clientStreams);
    metrics.watchClientStreams(clientStreams);
    // CORS preflights: the union of the client keys' origins, asked of the services and asked again
    // on every key notice the credential watch relays, and whenever notices may have been missed
    // (a null session change: the watch was re-established, or the services lost their own).
    const clientLog = logging.forModule('client');
    const originUnion = new ClientOriginUnion(() => remote.clientOrigins.activeClientOrigins(), {
      onError: (error) => clientLog.warn({ err: { message: (error as Error).message } }, 'client key origins could not be read; CORS preflights use the last ones read'),
    });
    const stopOriginNotices = verifier.onRevoked(() => void originUnion.refresh());
    const stopOriginResyncs = verifier.onSessionChanged((userId) => {
      if (userId === null) void originUnion.refresh();
    });
    // Not awaited: a gateway must start without its services (the read is retried until it succeeds).
    void originUnion.start();
    shutdown.add('client origins', async () => {
      stopOriginNotices();
      stopOriginResyncs();
      originUnion.stop();
    });
    const clientAccess = new ClientAccess({ origins: originUnion, publicUrl: () => config.publicUrl, metrics: metrics.client, log: clientLog });
    // Client keys' limits are the gateway's own: they hold before any call to the services.
    const clientLimits = new ClientRateLimiter(config.clientLimits);
    // Context tokens are verified here, in memory: each environment's keys are asked of the services
    // once (as the client key whose token is checked) and kept only while the credential watch is
    // established, which reports every create and delete of a secret (docs/client-side.md "4. Signed contexts").
    const contextSigningKeys = new ContextSigningKeys(
      (scope, caller) => remote.contextSigning.environmentSecrets(caller, scope.environmentId),
      () => verifier.isWatching(),
    );
    verifier.onContextSecretsChanged((environmentId) => contextSigningKeys.forget(environmentId));
    const contextTokens = new ContextTokenVerifier(contextSigningKeys);
    // Keys' last uses and their contexts' attribute names seen here, reported to the services in batches (KeyUsageGatewayService).
    const keyUses = new KeyUsageRecorder((uses, attributes) => remote.keyUsage.recordUses(uses, attributes), {
      onError: (error) => log.warn({ err: { message: (error as Error).message } }, 'keys\' last uses could not be reported to the services; their next uses report them'),
    });
    shutdown.add('key uses', () => keyUses.stop());
    const services: GatewayServices = {
      ...remote,
      verifier,
      evaluation,
      snapshots: definitions,
      sync,
      clientAccess,
      clientLimits,
      clientMetrics: metrics.client,
      clientStreams,
      contextTokens,
      keyUses,
      // The sync port is known once it listens (0 in the config: any free port).
      consoleAddresses: { publicUrl: () => config.publicUrl, syncPort: () => syncPort, syncTls: config.syncGrpcTls !== null },
    };
    let syncPort = config.syncGrpcPort;

    const http = createHttpApp(logging.forModule('http'), { trustProxy: config.trustProxy, timeouts: config.httpTimeouts, metrics });
    await registerOpenApi(http);
    await registerBrowserRoutes(http, { consoleDir: config.consoleDir });
    registerHealthRoutes(http, { isReady: async () => verifier.isWatching() });
    registerMetricsRoute(http, metrics.registry);
    registerRestRoutes(http, services);
    await http.listen({ host: config.httpHost, port: config.httpPort });
    shutdown.add('REST server', () => closeHttpApp(http));
    const httpPort = (http.server.address() as { port: number }).port;
    log.info({ port: httpPort, services: address }, 'gateway REST listening');

    const syncServer = await startPublicSyncServer({ config, sync, verifier, keyUses, metrics, logger: syncLog });
    insightsFlusher.start();
    syncPort = syncServer.port;
    shutdown.add('public sync gRPC server', () => syncServer.stop(SHUTDOWN_GRACE_MS));
    shutdown.add('sync streams', () => {
      clientStreams.stop();
      return sync.stop();
    });

    let stopping: Promise<void> | null = null;
    return {
      httpPort,
      syncGrpcPort: syncServer.port,
      http,
      services,
      metrics,
      insightsFlusher,
      isReady: () => verifier.isWatching(),
      stop() {
        stopping ??= shutdown.run((step, error) => log.warn({ step, err: { message: (error as Error).message } }, 'shutdown step failed'));
        return stopping;
      },
    };
  } catch (error) {
    await shutdown.run(() => {});
    throw error;
  }
}

/**
 * Evaluation from the streamed definitions. Its scopes act for their caller (scopeActingFor): the
 * definitions stream of the environment is opened with its credential, exposures sent as it.
 */
class GatewayEvaluationService extends EvaluationService {
  /**
   * The linked scope of each principal (the verifier hands out the same principal object for a
   * cached key): no new scope and WeakMap entry per evaluation. The check of scopeFor depends only
   * on the principal and the environment, so a scope found here was allowed before.
   */
  private readonly linkedScopes = new WeakMap<Principal, EnvironmentScope>();
  /**
   * clientScopeFor's, apart: its check (flag.client_evaluate) is not scopeFor's (flag.evaluate), so a
   * client key's scope found in one table must never answer the other (REST evaluate with a client key).
   */
  private readonly linkedClientScopes = new WeakMap<Principal, EnvironmentScope>();

  override scopeFor(principal: Principal, environmentId: string): EnvironmentScope {
    return this.linked(this.linkedScopes, principal, environmentId, () => super.scopeFor(principal, environmentId));
  }

  /** A client key's scope acts for it too (OFREP with a client key, docs/client-side.md). */
  override clientScopeFor(principal: Principal, environmentId: string): EnvironmentScope {
    return this.linked(this.linkedClientScopes, principal, environmentId, () => super.clientScopeFor(principal, environmentId));
  }

  private linked(table: WeakMap<Principal, EnvironmentScope>, principal: Principal, environmentId: string, check: () => EnvironmentScope): EnvironmentScope {
    const known = table.get(principal);
    if (known !== undefined && known.environmentId === environmentId) return known;
    const scope = scopeActingFor(check(), principal);
    table.set(principal, scope);
    return scope;
  }

}

/** The environment a sync caller asks for: an SDK key's own from its principal, anything else from the services. */
async function environmentScope(remote: Pick<GatewayServices, 'management'>, principal: Principal, id: string): Promise<EnvironmentScope> {
  if (principal.kind === 'sdk_key') {
    // As the services' ScopeResolver: a key grants its one environment, any other id is 403.
    if (id !== principal.environmentId) throw permissionDenied('the SDK key does not grant access to this environment');
    return scopeActingFor({ orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId }, principal);
  }
  return scopeActingFor(await remote.management.environmentScope(principal, id), principal);
}
