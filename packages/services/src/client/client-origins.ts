import { OriginPatternSet, type SdkKeyRepository } from '@switchyard/core';

/**
 * The allowed origins of every active client key (docs/client-side.md "CORS and origins"). A CORS
 * preflight carries no credential, so it can only be answered from what all keys allow together;
 * the actual request is then checked against its own key's list. A gateway has no database and
 * asks the services for this over the gateway hop (packages/transport/src/remote/gateway-interfaces.ts).
 */
export class ClientOriginService {
  constructor(private readonly sdkKeys: Pick<SdkKeyRepository, 'listActiveClientOrigins'>) {}

  /** The union of the active client keys' allowed-origin patterns, each once. */
  async activeClientOrigins(): Promise<string[]> {
    const union = new Set<string>();
    for (const key of await this.sdkKeys.listActiveClientOrigins()) for (const origin of key.allowedOrigins) union.add(origin);
    return [...union];
  }
}

export interface ClientOriginUnionOptions {
  /** A full re-read at this interval, whatever was heard: bounds staleness (expired keys, a missed notice). */
  refreshIntervalMs?: number;
  /** After a failed read (services or database unreachable), the next attempt comes this soon. */
  retryMs?: number;
  onError?: (error: unknown) => void;
}

/**
 * The union of allowed origins in memory, as CORS preflights read it (no I/O per preflight). Kept
 * current by `refresh()`, which the host calls on every SDK key notice (a client key created,
 * changed or revoked: SDK_KEY_REVOKED_CHANNEL in one process, the credential watch in a gateway)
 * and after any loss of notices. Notices that arrive during a read coalesce into one more read
 * after it, so a burst of changes costs two reads and the last change is always seen.
 */
export class ClientOriginUnion {
  private patterns = OriginPatternSet.EMPTY;
  private loading: Promise<void> | null = null;
  private pending: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly refreshIntervalMs: number;
  private readonly retryMs: number;

  constructor(
    private readonly load: () => Promise<readonly string[]>,
    private readonly options: ClientOriginUnionOptions = {},
  ) {
    this.refreshIntervalMs = options.refreshIntervalMs ?? 60_000;
    this.retryMs = options.retryMs ?? 2_000;
  }

  /** Reads the union once (a failure is reported, not thrown: the next attempt follows soon). */
  start(): Promise<void> {
    this.stopped = false;
    return this.refresh();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Whether some active client key allows `origin`. */
  allows(origin: string): boolean {
    return this.patterns.allows(origin);
  }

  /** How many distinct patterns are held (for tests and metrics). */
  get size(): number {
    return this.patterns.size;
  }

  /** Re-reads the union; resolves once a read that started after this call has finished. */
  refresh(): Promise<void> {
    if (this.loading !== null) {
      this.pending ??= this.loading.then(() => {
        this.pending = null;
        return this.refresh();
      });
      return this.pending;
    }
    this.loading = this.read().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async read(): Promise<void> {
    let ok = false;
    try {
      this.patterns = new OriginPatternSet(await this.load());
      ok = true;
    } catch (error) {
      this.options.onError?.(error);
    }
    this.schedule(ok ? this.refreshIntervalMs : this.retryMs);
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh(), delayMs);
    this.timer.unref();
  }
}
