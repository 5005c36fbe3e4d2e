import {
  failedPrecondition,
  invalidArgument,
  notFound,
  type OrgScope,
  type StatsJob,
  type StatsJobRepository,
  type StatsJobStatus,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

/** A `stats_jobs` row as the adapters select it. */
export interface StatsJobRow {
  id: string;
  org_id: string;
  experiment_id: string;
  status: StatsJobStatus;
  error: string;
  created_at_ms: number;
  started_at_ms: number;
  completed_at_ms: number;
  lease_expires_at_ms: number;
  attempts: number;
}

export const toStatsJob = (row: StatsJobRow): StatsJob => ({
  id: row.id,
  orgId: row.org_id,
  experimentId: row.experiment_id,
  status: row.status,
  error: row.error,
  createdAtMs: row.created_at_ms,
  startedAtMs: row.started_at_ms,
  completedAtMs: row.completed_at_ms,
  leaseExpiresAtMs: row.lease_expires_at_ms,
  attempts: row.attempts,
});

/**
 * Stats recompute jobs in `stats_jobs`. create and get are scoped by org; claimNext, complete and
 * fail are the workers' view by job id across orgs. claimNext is one UPDATE over a
 * FOR UPDATE SKIP LOCKED sub-select, so concurrent workers never claim the same job.
 *
 * startedAtMs records the FIRST claim and is kept when an expired lease is claimed again: it answers
 * "since when has this job been worked on"; `attempts` and the lease tell the retries apart.
 */
export class PgStatsJobRepository implements StatsJobRepository {
  constructor(private readonly sql: Sql) {}

  private columns() {
    return this.sql`id, org_id, experiment_id, status, error, created_at_ms, started_at_ms, completed_at_ms,
      lease_expires_at_ms, attempts`;
  }

  async create(scope: OrgScope, experimentId: string, nowMs: number): Promise<StatsJob> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    if (!isUuid(experimentId)) throw notFound('experiment', experimentId);
    const [row] = await translateErrors(
      () => this.sql<StatsJobRow[]>`
        INSERT INTO stats_jobs (org_id, experiment_id, created_at_ms)
        VALUES (${scope.orgId}, ${experimentId}, ${nowMs})
        RETURNING ${this.columns()}`,
      { resource: 'stats job', parent: 'experiment' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toStatsJob(row);
  }

  async get(scope: OrgScope, jobId: string): Promise<StatsJob | null> {
    if (!isUuid(scope.orgId) || !isUuid(jobId)) return null;
    const [row] = await this.sql<StatsJobRow[]>`
      SELECT ${this.columns()} FROM stats_jobs WHERE org_id = ${scope.orgId} AND id = ${jobId}`;
    return row ? toStatsJob(row) : null;
  }

  async claimNext(nowMs: number, leaseMs: number): Promise<StatsJob | null> {
    // SKIP LOCKED passes over a job another worker is claiming this instant; if that worker has
    // committed already, the re-check of the WHERE drops the row and the scan moves to the next.
    const [row] = await this.sql<StatsJobRow[]>`
      UPDATE stats_jobs SET
        status = 'running',
        started_at_ms = CASE WHEN started_at_ms = 0 THEN ${nowMs}::int8 ELSE started_at_ms END,
        lease_expires_at_ms = ${nowMs + leaseMs},
        attempts = attempts + 1
      WHERE id = (
        SELECT id FROM stats_jobs
        WHERE status = 'pending' OR (status = 'running' AND lease_expires_at_ms < ${nowMs})
        ORDER BY created_at_ms, id
        LIMIT 1
        FOR UPDATE SKIP LOCKED)
      RETURNING ${this.columns()}`;
    return row ? toStatsJob(row) : null;
  }

  async complete(jobId: string, nowMs: number): Promise<StatsJob> {
    if (!isUuid(jobId)) throw notFound('stats job', jobId);
    const [row] = await this.sql<StatsJobRow[]>`
      UPDATE stats_jobs SET status = 'completed', completed_at_ms = ${nowMs}
      WHERE id = ${jobId} AND status = 'running'
      RETURNING ${this.columns()}`;
    if (row) return toStatsJob(row);
    throw await this.whyNotRunning(jobId);
  }

  async fail(jobId: string, error: string, nowMs: number): Promise<StatsJob> {
    if (error.trim() === '') throw invalidArgument('a failed job needs an error text', 'error');
    if (!isUuid(jobId)) throw notFound('stats job', jobId);
    const [row] = await this.sql<StatsJobRow[]>`
      UPDATE stats_jobs SET status = 'failed', error = ${error}, completed_at_ms = ${nowMs}
      WHERE id = ${jobId} AND status = 'running'
      RETURNING ${this.columns()}`;
    if (row) return toStatsJob(row);
    throw await this.whyNotRunning(jobId);
  }

  private async whyNotRunning(jobId: string) {
    const [row] = await this.sql<{ status: StatsJobStatus }[]>`SELECT status FROM stats_jobs WHERE id = ${jobId}`;
    return row ? failedPrecondition(`stats job is ${row.status}, not running`) : notFound('stats job', jobId);
  }
}
