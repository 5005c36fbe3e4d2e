import { invalidArgument, SDK_KEY_USE_INTERVAL_MS, type Principal, type SdkKeyRepository, type SdkKeyUse } from '@switchyard/core';

/** At most this many uses in one report (a gateway sends at most this many per batch). */
export const MAX_KEY_USES_PER_REPORT = 500;

const isUse = (value: unknown): value is SdkKeyUse => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const use = value as Record<string, unknown>;
  return ['sdkKeyId', 'orgId', 'projectId', 'environmentId'].every((field) => typeof use[field] === 'string' && (use[field] as string).length <= 64);
};

/**
 * Writes keys' last uses (docs/contract.md "Last use of a key": `last_used_at_ms`). The single process
 * hands it its KeyUsageRecorder's batches; a gateway sends its own over the hop
 * (KeyUsageGatewayService.RecordUses, no caller: the batch names keys, not one credential). Each
 * use is written only in the scope it names and only once per SDK_KEY_USE_INTERVAL_MS per key,
 * whoever reports it, so a report can do no more than mark a key of the named scope as used.
 */
export class KeyUsageService {
  constructor(private readonly sdkKeys: Pick<SdkKeyRepository, 'recordUses'>) {}

  /** @throws INVALID_ARGUMENT for a report that is not a list of at most 500 uses. */
  async recordUses(uses: unknown): Promise<void> {
    if (!Array.isArray(uses) || uses.length > MAX_KEY_USES_PER_REPORT || !uses.every(isUse)) {
      throw invalidArgument(`uses must be a list of at most ${MAX_KEY_USES_PER_REPORT} {sdkKeyId, orgId, projectId, environmentId}`, 'uses');
    }
    const plain = uses.map(({ sdkKeyId, orgId, projectId, environmentId }) => ({ sdkKeyId, orgId, projectId, environmentId }));
    await this.sdkKeys.recordUses(plain, SDK_KEY_USE_INTERVAL_MS);
  }
}

export interface KeyUsageRecorderOptions {
  /** A key's use is reported at most this often by this process (default SDK_KEY_USE_INTERVAL_MS). */
  intervalMs?: number;
  /** Uses are gathered this long before they are sent in one batch (default 1 s). */
  batchDelayMs?: number;
  /** Keys remembered as reported; beyond it the entries older than the interval are dropped. */
  maxTrackedKeys?: number;
  now?: () => number;
  onError?: (error: unknown) => void;
}

/**
 * Notes the keys used on this instance — sync streams opened, evaluations answered — from the hot
 * path with no I/O: a key already reported within the interval costs one map lookup. New uses are
 * gathered for `batchDelayMs` and sent in batches of at most MAX_KEY_USES_PER_REPORT (to the
 * KeyUsageService in one process, over the gateway hop from a gateway). A batch that fails is
 * forgotten as reported, so the keys' next uses report them again.
 */
export class KeyUsageRecorder {
  private readonly reported = new Map<string, number>();
  private pending = new Map<string, SdkKeyUse>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private readonly intervalMs: number;
  private readonly batchDelayMs: number;
  private readonly maxTrackedKeys: number;
  private readonly now: () => number;

  constructor(
    private readonly send: (uses: SdkKeyUse[]) => Promise<unknown>,
    private readonly options: KeyUsageRecorderOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? SDK_KEY_USE_INTERVAL_MS;
    this.batchDelayMs = options.batchDelayMs ?? 1_000;
    this.maxTrackedKeys = options.maxTrackedKeys ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  /** Notes a use by the principal when it is a key (users' requests are not key uses). */
  used(principal: Principal): void {
    if (principal.kind === 'user') return;
    const now = this.now();
    const last = this.reported.get(principal.sdkKeyId);
    if (last !== undefined && now - last < this.intervalMs) return;
    if (this.reported.size >= this.maxTrackedKeys) this.forgetOlderThan(now - this.intervalMs);
    this.reported.set(principal.sdkKeyId, now);
    this.pending.set(principal.sdkKeyId, { sdkKeyId: principal.sdkKeyId, orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId });
    this.schedule();
  }

  /** Sends what is gathered now (and waits for a batch in flight). */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()].slice(0, MAX_KEY_USES_PER_REPORT);
    for (const use of batch) this.pending.delete(use.sdkKeyId);
    this.flushing = this.send(batch).then(
      () => undefined,
      (error: unknown) => {
        for (const use of batch) this.reported.delete(use.sdkKeyId);
        this.options.onError?.(error);
      },
    );
    try {
      await this.flushing;
    } finally {
      this.flushing = null;
    }
    if (this.pending.size > 0) await this.flush();
  }

  /** Sends what is gathered (at shutdown, before the hop or the pool closes). */
  stop(): Promise<void> {
    return this.flush();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.batchDelayMs);
    this.timer.unref();
  }

  private forgetOlderThan(cutoffMs: number): void {
    for (const [id, at] of this.reported) if (at <= cutoffMs) this.reported.delete(id);
    // Every key was used within the interval: forget them all rather than grow (the SQL guard holds).
    if (this.reported.size >= this.maxTrackedKeys) this.reported.clear();
  }
}
