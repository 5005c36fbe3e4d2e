/** The two append-only tables partitioned by receipt time (schema.sql). */
export type IngestTable = 'events' | 'exposures';

export const INGEST_TABLES: readonly IngestTable[] = ['events', 'exposures'];

/** One partition of an ingest table: a receipt-time range [fromMs, toMs), or the default one. */
export interface IngestPartition {
  name: string;
  /** null: unbounded below (MINVALUE). */
  fromMs: number | null;
  /** null for the default partition. */
  toMs: number | null;
  isDefault: boolean;
}

/**
 * The storage of metric events and exposures as whole partitions (PostgreSQL range partitions by
 * `received_at_ms`): what the maintenance run creates ahead, drops past retention and counts for
 * the row quota. Every DDL call holds its locks briefly (a lock wait beyond a few seconds gives
 * up and the next run tries again) and never rewrites rows.
 */
export interface IngestStorage {
  /** The table's partitions, default included. */
  partitions(table: IngestTable): Promise<IngestPartition[]>;
  /** The oldest and newest receipt time in the default partition, or null when it is empty. */
  defaultRowSpan(table: IngestTable): Promise<{ minMs: number; maxMs: number } | null>;
  /**
   * Turns the rows of the default partition into the range partition [fromMs, toMs) (fromMs null:
   * unbounded) and gives the table a new, empty default: no row is copied. The range is first
   * proved by a CHECK constraint validated without blocking writes; the swap itself holds the
   * table's lock for catalog changes only. Returns the new partition's name.
   * @throws when a row of the default lies outside the range (it stays where it is).
   */
  relabelDefault(table: IngestTable, fromMs: number | null, toMs: number): Promise<string>;
  /** Creates the range partition [fromMs, toMs); returns its name. */
  createPartition(table: IngestTable, fromMs: number, toMs: number): Promise<string>;
  /** Drops one range partition with its rows, and its row counts. */
  dropPartition(table: IngestTable, name: string): Promise<void>;
  /**
   * Counts the partition's rows per environment and keeps them (for the quota); `final` marks
   * a count that will not change any more (later runs skip the partition).
   */
  countRows(table: IngestTable, partition: string, final: boolean): Promise<void>;
  /** Partitions whose final count is kept (their rows are not counted again). */
  finalCounts(): Promise<Set<string>>;
  /** Rows per environment as last counted, events and exposures together. */
  rowsByEnvironment(): Promise<Map<string, number>>;
  /** The start of the earliest experiment iteration still running (ended_at 0), or null. */
  earliestRunningIterationStartMs(): Promise<number | null>;
}
