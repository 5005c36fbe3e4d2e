import { INGEST_TABLES, type IngestPartition, type IngestStorage, type IngestTable } from '@switchyard/core';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** Days of partitions kept ready ahead of today: a maintenance run that stalls this long still finds them. */
export const PARTITION_DAYS_AHEAD = 7;
export const DEFAULT_EVENT_RETENTION_DAYS = 90;

export interface IngestRetentionOptions {
  /** Partitions whose whole range is older than this are dropped (default 90 days). */
  retentionMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}

/** What one run changed, per table name. */
export interface IngestRetentionReport {
  /** Default partitions turned into range partitions (their rows moved out without a copy). */
  relabeled: string[];
  created: string[];
  dropped: string[];
}

const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;
const overlaps = (p: IngestPartition, fromMs: number | null, toMs: number): boolean =>
  !p.isDefault && (p.fromMs === null || p.fromMs < toMs) && (fromMs === null || p.toMs === null || p.toMs > fromMs);

/**
 * The time partitions of `events` and `exposures`, run by the Pruner under its lock (one
 * instance at a time). For each table:
 * 1. Rows in the default partition (all of them before the first run; later only rows no day
 *    partition covered) become a range partition of their own: the gap between the partitions
 *    around them, or up to two days ahead when nothing lies above (IngestStorage.relabelDefault:
 *    no row copied, no long lock).
 * 2. A partition per UTC day, from today to PARTITION_DAYS_AHEAD days ahead, where none is.
 * 3. Partitions whose whole range ended before the retention cut-off are dropped — but the
 *    cut-off never passes the start of the earliest experiment iteration still running (less a
 *    day, for client clocks behind the server's): its data stays until it ends.
 * 4. Rows are counted per partition and environment for the row quota; a partition whose range
 *    ended over an hour ago is counted once and for all.
 * A step that fails (a lock not granted in time, say) is logged and the next step still runs;
 * the next run tries again.
 */
export class IngestRetention {
  readonly retentionMs: number;
  private readonly log: NonNullable<IngestRetentionOptions['log']>;

  constructor(
    private readonly storage: IngestStorage,
    options: IngestRetentionOptions = {},
  ) {
    this.retentionMs = options.retentionMs ?? DEFAULT_EVENT_RETENTION_DAYS * DAY_MS;
    if (!(this.retentionMs > 0)) throw new RangeError('retentionMs must be positive');
    this.log = options.log ?? (() => {});
  }

  /** One run at `nowMs`; `stopping` is asked between steps (the Pruner's stop()). */
  async run(nowMs: number, stopping: () => boolean = () => false): Promise<IngestRetentionReport> {
    const report: IngestRetentionReport = { relabeled: [], created: [], dropped: [] };
    const running = await this.storage.earliestRunningIterationStartMs();
    const cutoffMs = Math.min(nowMs - this.retentionMs, running === null ? Infinity : running - DAY_MS);
    for (const table of INGEST_TABLES) {
      if (stopping()) break;
      await this.step(table, 'move the default partition out', () => this.relabelDefault(table, nowMs, report));
      if (stopping()) break;
      await this.step(table, 'create partitions ahead', () => this.createAhead(table, nowMs, report));
      if (stopping()) break;
      await this.step(table, 'drop partitions past retention', () => this.dropBefore(table, cutoffMs, report));
      if (stopping()) break;
      await this.step(table, 'count rows', () => this.count(table, nowMs, stopping));
    }
    if (report.relabeled.length + report.created.length + report.dropped.length > 0) {
      this.log('info', 'ingest retention: partitions changed', { ...report, cutoff_ms: cutoffMs });
    }
    return report;
  }

  private async step(table: IngestTable, what: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      this.log('warn', `ingest retention: could not ${what}; the next run tries again`, { table, err: { message: (error as Error).message } });
    }
  }

  private async relabelDefault(table: IngestTable, nowMs: number, report: IngestRetentionReport): Promise<void> {
    const span = await this.storage.defaultRowSpan(table);
    if (span === null) return;
    const ranges = (await this.storage.partitions(table)).filter((p) => !p.isDefault);
    // The gap holding the rows: from the nearest partition end at or below the oldest row, to
    // the nearest partition start above the newest one (or two days ahead: rows keep arriving).
    const below = ranges.filter((p) => p.toMs !== null && p.toMs <= span.minMs).map((p) => p.toMs as number);
    const above = ranges.filter((p) => p.fromMs !== null && p.fromMs > span.maxMs).map((p) => p.fromMs as number);
    const fromMs = below.length > 0 ? Math.max(...below) : null;
    const toMs = above.length > 0 ? Math.min(...above) : dayStart(Math.max(nowMs, span.maxMs)) + 2 * DAY_MS;
    if (ranges.some((p) => overlaps(p, fromMs, toMs))) {
      throw new Error(`the default partition's rows straddle an existing partition (received_at_ms ${span.minMs} to ${span.maxMs})`);
    }
    report.relabeled.push(await this.storage.relabelDefault(table, fromMs, toMs));
  }

  private async createAhead(table: IngestTable, nowMs: number, report: IngestRetentionReport): Promise<void> {
    const partitions = await this.storage.partitions(table);
    for (let day = dayStart(nowMs); day <= dayStart(nowMs) + PARTITION_DAYS_AHEAD * DAY_MS; day += DAY_MS) {
      if (partitions.some((p) => overlaps(p, day, day + DAY_MS))) continue;
      report.created.push(await this.storage.createPartition(table, day, day + DAY_MS));
    }
  }

  private async dropBefore(table: IngestTable, cutoffMs: number, report: IngestRetentionReport): Promise<void> {
    for (const partition of await this.storage.partitions(table)) {
      if (partition.isDefault || partition.toMs === null || partition.toMs > cutoffMs) continue;
      await this.storage.dropPartition(table, partition.name);
      report.dropped.push(partition.name);
    }
  }

  private async count(table: IngestTable, nowMs: number, stopping: () => boolean): Promise<void> {
    const done = await this.storage.finalCounts();
    for (const partition of await this.storage.partitions(table)) {
      if (stopping()) return;
      if (done.has(partition.name)) continue;
      const final = !partition.isDefault && partition.toMs !== null && partition.toMs + HOUR_MS <= nowMs;
      await this.storage.countRows(table, partition.name, final);
    }
  }
}
