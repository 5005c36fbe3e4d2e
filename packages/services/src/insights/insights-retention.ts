import { DAY_MS, type InsightsRepository, type InsightsRetentionReport } from '@switchyard/core';

export const DEFAULT_INSIGHTS_ROLLUP_AFTER_MS = DAY_MS;
export const DEFAULT_INSIGHTS_HOURLY_RETENTION_MS = 30 * DAY_MS;
export const DEFAULT_INSIGHTS_DAILY_RETENTION_MS = 365 * DAY_MS;

export interface InsightsRetentionOptions {
  /** Hourly rows older than this are rolled up into their days (default one day). */
  rollupAfterMs?: number;
  /** Hourly rows older than this are deleted, once rolled up (default 30 days; INSIGHTS_HOURLY_RETENTION_DAYS). */
  hourlyRetentionMs?: number;
  /** Daily rows older than this are deleted (default 365 days; INSIGHTS_DAILY_RETENTION_DAYS). */
  dailyRetentionMs?: number;
  batchSize?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

/** The pruner's pass over evaluation counts (docs/insights.md "Retention"): roll hours up into days, then delete what is past retention. */
export class InsightsRetention {
  private readonly rollupAfterMs: number;
  private readonly hourlyRetentionMs: number;
  private readonly dailyRetentionMs: number;
  private readonly batchSize: number;

  constructor(
    private readonly repository: Pick<InsightsRepository, 'prune'>,
    private readonly options: InsightsRetentionOptions = {},
  ) {
    this.rollupAfterMs = options.rollupAfterMs ?? DEFAULT_INSIGHTS_ROLLUP_AFTER_MS;
    this.hourlyRetentionMs = options.hourlyRetentionMs ?? DEFAULT_INSIGHTS_HOURLY_RETENTION_MS;
    this.dailyRetentionMs = options.dailyRetentionMs ?? DEFAULT_INSIGHTS_DAILY_RETENTION_MS;
    this.batchSize = options.batchSize ?? 1_000;
    // Hours must be rolled up before they go, and days outlive hours, or counts would vanish early.
    if (!(this.rollupAfterMs > 0 && this.rollupAfterMs <= this.hourlyRetentionMs && this.hourlyRetentionMs <= this.dailyRetentionMs)) {
      throw new RangeError('insights retention: 0 < rollupAfterMs <= hourlyRetentionMs <= dailyRetentionMs');
    }
  }

  async run(nowMs: number, isStopping: () => boolean): Promise<InsightsRetentionReport> {
    const report = await this.repository.prune(
      { rollBeforeMs: nowMs - this.rollupAfterMs, hoursBeforeMs: nowMs - this.hourlyRetentionMs, daysBeforeMs: nowMs - this.dailyRetentionMs },
      this.batchSize,
      isStopping,
    );
    if (report.hoursRolled + report.hoursDeleted + report.daysDeleted > 0) {
      this.options.log?.('info', 'prune: evaluation counts rolled up and past retention deleted', { hours_rolled: report.hoursRolled, hours_deleted: report.hoursDeleted, days_deleted: report.daysDeleted });
    }
    return report;
  }
}
