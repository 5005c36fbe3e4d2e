import type { IngestPartition, IngestStorage, IngestTable } from '@switchyard/core';
import type { Sql } from './connect.ts';

/** A DDL statement that waits longer than this for its lock gives up; the next run tries again. */
const LOCK_TIMEOUT = '5s';

/** The default partition of each table (schema.sql). */
const DEFAULT_PARTITION: Record<IngestTable, string> = { events: 'events_default', exposures: 'exposures_default' };

/**
 * DDL takes no bind parameters, so partition statements are assembled here — from names this
 * file makes (checked against a plain identifier pattern) and integers it computes (checked to be
 * safe integers), never from request input.
 */
function identifier(name: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a partition name made here: ${name}`);
  return `"${name}"`;
}
function bound(ms: number | null): string {
  if (ms === null) return 'MINVALUE';
  if (!Number.isSafeInteger(ms)) throw new Error(`not a safe integer bound: ${ms}`);
  return String(ms);
}

/** `20261127` for the UTC day of `ms`. */
function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
}

/** `FOR VALUES FROM ('1764201600000') TO ('1764288000000')`, MINVALUE, or DEFAULT. */
function parseBound(text: string): { fromMs: number | null; toMs: number | null } | null {
  if (text.trim() === 'DEFAULT') return { fromMs: null, toMs: null };
  const match = /FROM \((MINVALUE|'?(-?\d+)'?)\) TO \((MAXVALUE|'?(-?\d+)'?)\)/.exec(text);
  if (!match) return null;
  return { fromMs: match[2] === undefined ? null : Number(match[2]), toMs: match[4] === undefined ? null : Number(match[4]) };
}

/** IngestStorage on PostgreSQL's declarative partitions of `events` and `exposures`. */
export class PgIngestStorage implements IngestStorage {
  constructor(private readonly sql: Sql) {}

  async partitions(table: IngestTable): Promise<IngestPartition[]> {
    const rows = await this.sql<{ name: string; bound: string }[]>`
      SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = ${table}::regclass
      ORDER BY c.relname`;
    const partitions: IngestPartition[] = [];
    for (const row of rows) {
      const parsed = parseBound(row.bound);
      if (parsed === null) continue;
      partitions.push({ name: row.name, ...parsed, isDefault: row.bound.trim() === 'DEFAULT' });
    }
    return partitions;
  }

  async defaultRowSpan(table: IngestTable): Promise<{ minMs: number; maxMs: number } | null> {
    // A read (ACCESS SHARE): ingest goes on meanwhile. The default is small except before the
    // first run, when it holds every row stored so far.
    const [row] = await this.sql.unsafe<{ min: string | null; max: string | null }[]>(
      `SELECT min(received_at_ms)::text AS min, max(received_at_ms)::text AS max FROM ${identifier(DEFAULT_PARTITION[table])}`,
    );
    return row?.min == null || row.max == null ? null : { minMs: Number(row.min), maxMs: Number(row.max) };
  }

  async relabelDefault(table: IngestTable, fromMs: number | null, toMs: number): Promise<string> {
    const current = identifier(DEFAULT_PARTITION[table]);
    const name = `${table}_r${fromMs === null ? 'start' : day(fromMs)}_${day(toMs)}`;
    const check = identifier(`${table}_default_range`);
    const range = fromMs === null ? `received_at_ms < ${bound(toMs)}` : `received_at_ms >= ${bound(fromMs)} AND received_at_ms < ${bound(toMs)}`;
    // 1. The range as a constraint: NOT VALID is a catalog change; VALIDATE reads every row but
    //    takes SHARE UPDATE EXCLUSIVE, which lets ingest go on writing into the default meanwhile.
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await tx.unsafe(`ALTER TABLE ${current} DROP CONSTRAINT IF EXISTS ${check}`);
      await tx.unsafe(`ALTER TABLE ${current} ADD CONSTRAINT ${check} CHECK (${range}) NOT VALID`);
    });
    // 2. The swap, catalog changes only: the proven constraint spares ATTACH its scan, and with the
    //    old default detached first there is no default to scan either.
    try {
      await this.sql.unsafe(`ALTER TABLE ${current} VALIDATE CONSTRAINT ${check}`);
      await this.swapDefault(table, name, fromMs, toMs, check);
    } catch (error) {
      // Left in place, the constraint would refuse rows past its bound once that day comes.
      await this.sql.begin(async (tx) => {
        await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
        await tx.unsafe(`ALTER TABLE ${current} DROP CONSTRAINT IF EXISTS ${check}`);
      }).catch(() => {});
      throw error;
    }
    return name;
  }

  private async swapDefault(table: IngestTable, name: string, fromMs: number | null, toMs: number, check: string): Promise<void> {
    const current = identifier(DEFAULT_PARTITION[table]);
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await tx.unsafe(`ALTER TABLE ${identifier(table)} DETACH PARTITION ${current}`);
      await tx.unsafe(`ALTER TABLE ${current} RENAME TO ${identifier(name)}`);
      await tx.unsafe(`ALTER TABLE ${identifier(table)} ATTACH PARTITION ${identifier(name)} FOR VALUES FROM (${bound(fromMs)}) TO (${bound(toMs)})`);
      await tx.unsafe(`ALTER TABLE ${identifier(name)} DROP CONSTRAINT ${check}`);
      await tx.unsafe(`CREATE TABLE ${current} PARTITION OF ${identifier(table)} DEFAULT`);
    });
  }

  async createPartition(table: IngestTable, fromMs: number, toMs: number): Promise<string> {
    const name = `${table}_p${day(fromMs)}`;
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await tx.unsafe(`CREATE TABLE ${identifier(name)} PARTITION OF ${identifier(table)} FOR VALUES FROM (${bound(fromMs)}) TO (${bound(toMs)})`);
    });
    return name;
  }

  async dropPartition(table: IngestTable, name: string): Promise<void> {
    if (name === DEFAULT_PARTITION[table]) throw new Error('the default partition is never dropped');
    await this.sql.begin(async (tx) => {
      await tx.unsafe(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      await tx.unsafe(`DROP TABLE ${identifier(name)}`);
      await tx`DELETE FROM ingest_row_counts WHERE partition_name = ${name}`;
    });
  }

  async countRows(table: IngestTable, partition: string, final: boolean): Promise<void> {
    // Maintenance across every environment: one GROUP BY over one partition (an index-only scan
    // of its leading environment_id), replacing what was counted there before.
    await this.sql.begin(async (tx) => {
      const counts = await tx.unsafe<{ environment_id: string; rows: number }[]>(
        `SELECT environment_id, count(*)::int8 AS rows FROM ${identifier(partition)} GROUP BY environment_id`,
      );
      await tx`DELETE FROM ingest_row_counts WHERE partition_name = ${partition}`;
      if (counts.length === 0 && !final) return;
      const rows = counts.length > 0
        ? counts.map((c) => ({ partition_name: partition, table_name: table, environment_id: c.environment_id, row_count: c.rows, is_final: final }))
        // An empty final partition still gets a row, so later runs know it was counted.
        : [{ partition_name: partition, table_name: table, environment_id: null, row_count: 0, is_final: true }];
      await tx`INSERT INTO ingest_row_counts ${tx(rows, 'partition_name', 'table_name', 'environment_id', 'row_count', 'is_final')}`;
    });
  }

  async finalCounts(): Promise<Set<string>> {
    const rows = await this.sql<{ partition_name: string }[]>`SELECT DISTINCT partition_name FROM ingest_row_counts WHERE is_final`;
    return new Set(rows.map((row) => row.partition_name));
  }

  async rowsByEnvironment(): Promise<Map<string, number>> {
    const rows = await this.sql<{ environment_id: string; rows: number }[]>`
      SELECT environment_id, sum(row_count)::int8 AS rows FROM ingest_row_counts
      WHERE environment_id IS NOT NULL GROUP BY environment_id`;
    return new Map(rows.map((row) => [row.environment_id, row.rows]));
  }

  async earliestRunningIterationStartMs(): Promise<number | null> {
    const [row] = await this.sql<{ started: number | null }[]>`
      SELECT min(started_at_ms)::int8 AS started FROM experiment_iterations WHERE ended_at_ms = 0`;
    return row?.started ?? null;
  }
}
