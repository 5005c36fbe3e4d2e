import * as grpc from '@grpc/grpc-js';

/** svc.auth.v1.CredentialEvent as loaded by packages/transport/src/grpc/proto.ts (`event`: the member set). */
export type CredentialEventMessage =
  | { event: 'ready'; ready: boolean }
  | { event: 'sdk_key_revoked'; sdk_key_revoked: { sdk_key_id: string } }
  | { event: 'session_changed'; session_changed: { user_id: string } }
  | { event: 'context_secrets_changed'; context_secrets_changed: { environment_id: string } };

export type WatchLog = (level: 'debug' | 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;

export interface CredentialWatchHandlers {
  /** The watch is established (`ready` received): from now on no revocation is missed. */
  onReady(): void;
  /** An established watch ended, or an attempt failed: revocations may be missed from now on. */
  onLost(): void;
  onRevoked(sdkKeyId: string): void;
  /** `null`: the services may have missed changes of anyone (their own notifications were lost). */
  onSessionChanged(userId: string | null): void;
  /** `null`: every environment's context signing keys may have changed. */
  onContextSecretsChanged?(environmentId: string | null): void;
}

export interface CredentialWatchOptions {
  /** First delay before another attempt; doubles per failed attempt up to `maxRetryMs`. */
  minRetryMs: number;
  maxRetryMs: number;
  /** How long `start()` waits at most for the first attempt to be established or fail. */
  startTimeoutMs: number;
  log: WatchLog;
}

type OpenWatch = () => grpc.ClientReadableStream<CredentialEventMessage>;

/**
 * Keeps one svc.auth.v1.AuthService/WatchCredentials stream open to the services, reopening it
 * after any end with a jittered exponential backoff, for as long as it is not stopped. A gateway
 * must not depend on the services being up when it starts, so nothing here ever fails: it retries.
 */
export class CredentialWatch {
  private call: grpc.ClientReadableStream<CredentialEventMessage> | null = null;
  private ready = false;
  private started = false;
  private stopped = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private settleStart: (() => void) | null = null;

  constructor(
    private readonly open: OpenWatch,
    private readonly handlers: CredentialWatchHandlers,
    private readonly options: CredentialWatchOptions,
  ) {}

  /**
   * Opens the watch (once: later calls resolve at once); resolves once it is established, or its
   * first attempt failed, or at `startTimeoutMs`.
   */
  start(): Promise<void> {
    if (this.started) return Promise.resolve();
    this.started = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(), this.options.startTimeoutMs);
      timer.unref();
      this.settleStart = () => {
        clearTimeout(timer);
        resolve();
      };
      this.attempt();
    });
  }

  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const call = this.call;
    this.call = null;
    call?.cancel();
    if (this.ready) {
      this.ready = false;
      this.handlers.onLost();
    }
    this.settle();
  }

  isReady(): boolean {
    return this.ready;
  }

  private settle(): void {
    const settle = this.settleStart;
    this.settleStart = null;
    settle?.();
  }

  private attempt(): void {
    this.retryTimer = null;
    if (this.stopped) return;
    const call = this.open();
    this.call = call;
    call.on('data', (message: CredentialEventMessage) => {
      if (this.call === call) this.receive(message);
    });
    // 'status' follows every end, with or without an error; an 'error' listener must exist anyway.
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => this.ended(call, status));
  }

  private receive(message: CredentialEventMessage): void {
    switch (message.event) {
      case 'ready':
        if (this.ready) return;
        this.ready = true;
        this.failures = 0;
        this.options.log('info', 'credential watch established');
        this.handlers.onReady();
        this.settle();
        return;
      case 'sdk_key_revoked':
        this.handlers.onRevoked(message.sdk_key_revoked.sdk_key_id);
        return;
      case 'session_changed':
        this.handlers.onSessionChanged(message.session_changed.user_id || null);
        return;
      case 'context_secrets_changed':
        this.handlers.onContextSecretsChanged?.(message.context_secrets_changed.environment_id || null);
        return;
    }
  }

  private ended(call: grpc.ClientReadableStream<CredentialEventMessage>, status: grpc.StatusObject): void {
    if (this.call !== call) return;
    this.call = null;
    const wasReady = this.ready;
    this.ready = false;
    this.handlers.onLost();
    this.settle();
    if (this.stopped) return;
    const delayMs = this.nextDelayMs();
    const fields = { code: grpc.status[status.code] ?? status.code, details: status.details, retry_in_ms: delayMs };
    if (wasReady) this.options.log('warn', 'credential watch lost; cached credentials dropped', fields);
    else this.options.log(this.failures === 1 ? 'warn' : 'debug', 'credential watch unavailable; retrying', fields);
    this.retryTimer = setTimeout(() => this.attempt(), delayMs);
    this.retryTimer.unref();
  }

  /** min·2^failures, capped at max, then jittered down to half so gateways do not retry in step. */
  private nextDelayMs(): number {
    const ceiling = Math.min(this.options.maxRetryMs, this.options.minRetryMs * 2 ** this.failures);
    this.failures += 1;
    return Math.round(ceiling * (0.5 + Math.random() / 2));
  }
}
