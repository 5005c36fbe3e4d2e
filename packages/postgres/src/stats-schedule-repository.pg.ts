import type { StatsJob, StatsScheduleRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid } from './pg-errors.ts';
import { toStatsJob, type StatsJobRow } from './stats-job-repository.pg.ts';

/** Any fixed number, distinct from the migration lock: every instance's scheduler serialises on it. */
const SCHEDULER_LOCK_KEY = 7_243_110_002;

/**
 * The stats scheduler's statements. They span every org on purpose (the schedule recomputes every
 * org's running experiments); jobs carry the experiment's org, which scopes every later read.
 */
export class PgStatsScheduleRepository implements StatsScheduleRepository {
  constructor(private readonly sql: Sql) {}

  async enqueueDue(nowMs: number, intervalMs: number): Promise<StatsJob[]> {
    return transaction(this.sql, async (tx) => {
      // Two instances ticking at once would both see "no open job" under READ COMMITTED; the
      // transaction-scoped advisory lock makes the check-and-insert one step across instances
      // (the INSERT's snapshot is taken after the lock is granted, so it sees the other's jobs).
      await tx`SELECT pg_advisory_xact_lock(${SCHEDULER_LOCK_KEY})`;
      const rows = await tx<StatsJobRow[]>`
        INSERT INTO stats_jobs (org_id, experiment_id, created_at_ms)
        SELECT x.org_id, x.id, ${nowMs}::int8
        FROM experiments x
        LEFT JOIN experiment_results r ON r.experiment_id = x.id
        WHERE x.status = 'EXPERIMENT_STATUS_ACTIVE'
          AND (r.experiment_id IS NULL OR r.next_run_at_ms <= ${nowMs}::int8)
          AND NOT EXISTS (
            SELECT 1 FROM stats_jobs j
            WHERE j.experiment_id = x.id
              AND (j.status IN ('pending', 'running') OR j.created_at_ms > ${nowMs - intervalMs}::int8))
        ORDER BY x.created_at, x.id
        -- A recompute triggered by hand since the check (it takes no lock) already queued one.
        ON CONFLICT (experiment_id) WHERE status = 'pending' DO NOTHING
        RETURNING id, org_id, experiment_id, status, error, created_at_ms, started_at_ms, completed_at_ms,
          lease_expires_at_ms, attempts`;
      return rows.map(toStatsJob);
    });
  }

  async renewLease(jobId: string, attempts: number, nowMs: number, leaseMs: number): Promise<boolean> {
    if (!isUuid(jobId)) return false;
    const renewed = await this.sql`
      UPDATE stats_jobs SET lease_expires_at_ms = ${nowMs + leaseMs}::int8
      WHERE id = ${jobId} AND status = 'running' AND attempts = ${attempts}`;
    return renewed.count === 1;
  }

  async pruneFinished(beforeMs: number): Promise<number> {
    const removed = await this.sql`
      DELETE FROM stats_jobs WHERE status IN ('completed', 'failed') AND completed_at_ms < ${beforeMs}::int8`;
    // Turns of orgs without jobs go too (one row per org that ever queued would only grow); such
    // an org counts as never served, which lately it has not been.
    await this.sql`DELETE FROM stats_job_turns t WHERE NOT EXISTS (SELECT 1 FROM stats_jobs j WHERE j.org_id = t.org_id)`;
    return removed.count;
  }
}
