import { failedPrecondition, type EnvironmentScope, type IngestStorage } from '@switchyard/core';

/** Default rows (events and exposures together) one environment may hold: 50 million, about 15 GiB. */
export const DEFAULT_ROWS_PER_ENVIRONMENT = 50_000_000;
/** How often the counts are read again (one query, not one per request). */
const DEFAULT_REFRESH_MS = 60_000;

export interface RowQuotaOptions {
  maxRowsPerEnvironment?: number;
  refreshMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

/**
 * The row quota per environment, kept in memory. What an environment holds is its rows as the
 * maintenance run last counted them (IngestStorage.rowsByEnvironment, read every `refreshMs`),
 * plus the rows this instance stored since that count changed. Once that reaches the quota, new
 * events and exposures are refused with FAILED_PRECONDITION until retention frees room.
 *
 * Bounds of the approximation (docs/security.md): one request admitted just below the quota
 * stores all its entries (at most 10,000); rows other instances store count only once the
 * maintenance run has counted them (every PRUNE_INTERVAL_MS), so the overshoot is at most what
 * the rate limits let through in that interval.
 */
export class RowQuota {
  readonly maxRowsPerEnvironment: number;
  private readonly refreshMs: number;
  private readonly log: NonNullable<RowQuotaOptions['log']>;
  private counted = new Map<string, number>();
  /** Rows this instance stored since the environment's count last changed. */
  private readonly addedSinceCount = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly storage: Pick<IngestStorage, 'rowsByEnvironment'>,
    options: RowQuotaOptions = {},
  ) {
    this.maxRowsPerEnvironment = options.maxRowsPerEnvironment ?? DEFAULT_ROWS_PER_ENVIRONMENT;
    this.refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
    this.log = options.log ?? (() => {});
    if (!Number.isSafeInteger(this.maxRowsPerEnvironment) || this.maxRowsPerEnvironment < 1) throw new RangeError('maxRowsPerEnvironment must be a positive integer');
  }

  /** Reads the counts once, then again every refreshMs (a failed read keeps the previous counts). */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => {
      this.refresh().catch((error: unknown) => this.log('warn', 'row quota: counts could not be read; the previous ones stay', { err: { message: (error as Error).message } }));
    }, this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reads the counts now. An environment whose count changed forgets its local additions (the count holds them). */
  async refresh(): Promise<void> {
    const counted = await this.storage.rowsByEnvironment();
    for (const environmentId of [...this.addedSinceCount.keys()]) {
      if ((counted.get(environmentId) ?? 0) !== (this.counted.get(environmentId) ?? 0)) this.addedSinceCount.delete(environmentId);
    }
    this.counted = counted;
  }

  /** The rows the environment holds as far as this instance knows. */
  held(environmentId: string): number {
    return (this.counted.get(environmentId) ?? 0) + (this.addedSinceCount.get(environmentId) ?? 0);
  }

  /** @throws FAILED_PRECONDITION once the environment holds its quota. */
  check(scope: EnvironmentScope): void {
    if (this.held(scope.environmentId) < this.maxRowsPerEnvironment) return;
    throw failedPrecondition(
      `the environment holds its quota of ${this.maxRowsPerEnvironment} event and exposure rows; new ones are refused until retention drops old ones`,
    );
  }

  /** Counts rows this instance stored (after their commit). */
  added(scope: EnvironmentScope, rows: number): void {
    if (rows <= 0) return;
    this.addedSinceCount.set(scope.environmentId, (this.addedSinceCount.get(scope.environmentId) ?? 0) + rows);
  }
}
