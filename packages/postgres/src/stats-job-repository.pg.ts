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
 * fail are the workers' view by job id across orgs. create hands back the experiment's queued job
 * if there is one. claimNext is one UPDATE over a FOR UPDATE SKIP LOCKED sub-select, so concurrent
 * workers never claim the same job, taking orgs in turn (`stats_job_turns`).
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
    // The partial unique index on pending jobs makes this race-free: of concurrent triggers one
    // inserts, the others wait for it and take the DO UPDATE branch, which changes nothing and
    // returns the queued job. A job being claimed meanwhile (no longer pending) lets the insert
    // through: a new job, since the running one may already have read the data.
    const [row] = await translateErrors(
      () => this.sql<StatsJobRow[]>`
        INSERT INTO stats_jobs (org_id, experiment_id, created_at_ms)
        VALUES (${scope.orgId}, ${experimentId}, ${nowMs})
        ON CONFLICT (experiment_id) WHERE status = 'pending'
        DO UPDATE SET status = stats_jobs.status WHERE stats_jobs.org_id = EXCLUDED.org_id
        RETURNING ${this.columns()}`,
      { resource: 'stats job', parent: 'experiment' },
    );
    // Only an experiment id queued under another org gets here (ids are UUIDs: not in practice).
    if (!row) throw notFound('experiment', experimentId);
    return toStatsJob(row);
  }

  async get(scope: OrgScope, jobId: string): Promise<StatsJob | null> {
    if (!isUuid(scope.orgId) || !isUuid(jobId)) return null;
    const [row] = await this.sql<StatsJobRow[]>`
      SELECT ${this.columns()} FROM stats_jobs WHERE org_id = ${scope.orgId} AND id = ${jobId}`;
    return row ? toStatsJob(row) : null;
  }

  async claimNext(nowMs: number, leaseMs: number): Promise<StatsJob | null> {
    // 1. Fairness: claimable jobs are ordered by their org's last turn (never served first), then
    //    age; so the orgs with queued jobs take turns, each turn its oldest job. The sort is over
    //    claimable jobs only, at most one pending per experiment (stats_jobs_one_pending).
    // 2. SKIP LOCKED passes over a job another worker is claiming this instant; if that worker has
    //    committed already, the re-check of the WHERE drops the row and the scan moves on.
    // 3. The claimed job's org gets the next turn number in the same statement.
    const [row] = await this.sql<StatsJobRow[]>`
      WITH next AS (
        SELECT j.id FROM stats_jobs j
        LEFT JOIN stats_job_turns t ON t.org_id = j.org_id
        WHERE j.status = 'pending' OR (j.status = 'running' AND j.lease_expires_at_ms < ${nowMs})
        ORDER BY COALESCE(t.last_turn, 0), j.created_at_ms, j.id
        LIMIT 1
        FOR UPDATE OF j SKIP LOCKED
      ), claimed AS (
        UPDATE stats_jobs SET
          status = 'running',
          started_at_ms = CASE WHEN started_at_ms = 0 THEN ${nowMs}::int8 ELSE started_at_ms END,
          lease_expires_at_ms = ${nowMs + leaseMs},
          attempts = attempts + 1
        WHERE id = (SELECT id FROM next)
        RETURNING ${this.columns()}
      ), turn AS (
        INSERT INTO stats_job_turns (org_id, last_turn)
        SELECT org_id, COALESCE((SELECT max(last_turn) FROM stats_job_turns), 0) + 1 FROM claimed
        ON CONFLICT (org_id) DO UPDATE SET last_turn = EXCLUDED.last_turn
      )
      SELECT * FROM claimed`;
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
