import type { EnvironmentScope } from '../ports/scopes.ts';
import type { DrainedCounts } from './evaluation-counter.ts';
import type { SummaryCounts } from '../ports/event-ports.ts';

/** Hourly or daily points of a series (docs/insights.md "Granularity"). */
export type InsightsGranularity = 'hour' | 'day';

/** One point of a flag's series: the start of its hour or UTC day, and its count per variant. */
export interface InsightsPoint {
  atMs: number;
  variants: Record<string, number>;
}

/** What the pruner's pass over the counts did (docs/insights.md "Retention"). */
export interface InsightsRetentionReport {
  /** Hourly rows whose (new) count was added to their day. */
  hoursRolled: number;
  hoursDeleted: number;
  daysDeleted: number;
}

/**
 * Where evaluation counts are kept (docs/insights.md). Every write adds (two instances flushing
 * the same hour add up); every read is scoped by the environment and a flag of its project.
 */
export interface InsightsRepository {
  /**
   * Adds the drained counts to their hourly rows and moves each flag's last evaluation time
   * forward, in one statement. Counts naming an environment outside its named org and project, or
   * a flag key not in that project, are not written. Returns how many count rows were written.
   */
  addCounts(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Promise<number>;
  /**
   * Adds an SDK's summary to the scope's environment in one statement (docs/insights.md "SDK
   * summaries"): counts of flags not in the project, or of variants the flag does not have, are
   * dropped. Returns how many count rows were written.
   */
  addSummary(scope: EnvironmentScope, summary: SummaryCounts): Promise<number>;
  /**
   * The flag's points in [fromMs, toMs): hours from the hourly rows; days from the daily rows plus
   * what of the hourly rows is not rolled up yet. Only points with a count; in time order.
   */
  series(scope: EnvironmentScope, flagKey: string, granularity: InsightsGranularity, fromMs: number, toMs: number): Promise<InsightsPoint[]>;
  /** When each of these flags (by key) was last evaluated in the environment; absent: never (or before retention). */
  lastEvaluated(scope: EnvironmentScope, flagKeys: readonly string[]): Promise<Map<string, number>>;
  /**
   * Adds the new counts of hourly rows older than `rollBeforeMs` to their days, deletes fully
   * rolled hourly rows older than `hoursBeforeMs` and daily rows older than `daysBeforeMs`, each
   * step in batches of at most `batchSize` rows.
   */
  prune(cutoffs: { rollBeforeMs: number; hoursBeforeMs: number; daysBeforeMs: number }, batchSize: number, isStopping: () => boolean): Promise<InsightsRetentionReport>;
}
