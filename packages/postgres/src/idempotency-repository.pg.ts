import { notFound, type DrainedCounts, type EnvironmentScope, type IdempotencyRepository, type IdempotentRows } from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql } from './connect.ts';
import { insertEventsStatement, insertExposuresStatement, retryingStaleSession } from './ingest-writes.pg.ts';
import { isUuid } from './pg-errors.ts';
import { reportCountsStatements, summaryCountsStatements } from './insights-repository.pg.ts';

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * Idempotency-Key answers in `idempotency_keys`. The table holds only environment_id, so each
 * statement joins `environments` on the whole scope: another org's request never sees an answer.
 */
export class PgIdempotencyRepository implements IdempotencyRepository {
  constructor(private readonly sql: Sql) {}

  async get(scope: EnvironmentScope, key: string, nowMs: number): Promise<unknown | null> {
    if (!validScope(scope)) return null;
    const [row] = await this.sql<{ answer: unknown }[]>`
      SELECT k.answer FROM idempotency_keys k
      JOIN environments e ON e.id = k.environment_id
      WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        AND k.environment_id = ${scope.environmentId} AND k.key = ${key} AND k.expires_at_ms > ${nowMs}`;
    return row ? row.answer : null;
  }

  async putIfAbsent(
    scope: EnvironmentScope,
    key: string,
    answer: unknown,
    expiresAtMs: number,
    nowMs: number = Date.now(),
  ): Promise<unknown> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    // 1. Insert, or replace a row that has expired. ON CONFLICT makes concurrent callers wait for
    //    the winner's row instead of failing, and the WHERE leaves a live answer untouched.
    const [written] = await this.sql<{ answer: unknown }[]>`
      INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms)
      SELECT e.id, ${key}::text, ${this.sql.json((answer ?? null) as postgres.JSONValue)}, ${expiresAtMs}::int8
      FROM environments e
      WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
      ON CONFLICT (environment_id, key) DO UPDATE
        SET answer = EXCLUDED.answer, expires_at_ms = EXCLUDED.expires_at_ms
        WHERE idempotency_keys.expires_at_ms <= ${nowMs}
      RETURNING answer`;
    if (written) return written.answer;
    // 2. Nothing written: either a live answer exists (a new statement, so it sees the winner's
    //    committed row) or the environment is not in the scope.
    const [stored] = await this.sql<{ answer: unknown }[]>`
      SELECT k.answer FROM idempotency_keys k
      JOIN environments e ON e.id = k.environment_id
      WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        AND k.environment_id = ${scope.environmentId} AND k.key = ${key}`;
    if (!stored) throw notFound('environment', scope.environmentId);
    return stored.answer;
  }

  async storeOnce(
    scope: EnvironmentScope,
    key: string,
    rows: IdempotentRows,
    answer: unknown,
    expiresAtMs: number,
    nowMs: number = Date.now(),
  ): Promise<{ answer: unknown; stored: boolean }> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    const receivedAtMs = Date.now();
    // 1. ONE statement, so the claim and the rows commit together or not at all (and no explicit
    //    transaction: see PgIngestWrites for why the ingest path avoids sql.begin). The primary key
    //    makes a concurrent statement with the same key wait on the claim until ours commits, then
    //    see our row: its claim returns nothing and its rows (conditioned on the claim) are skipped.
    const onlyIfClaimed = () => this.sql`AND EXISTS (SELECT 1 FROM claimed)`;
    const summary = rows.evaluationCounts !== undefined && rows.evaluationCounts.counts.length > 0 ? summaryCountsStatements(this.sql, scope, rows.evaluationCounts, onlyIfClaimed()) : null;
    const [won] = await retryingStaleSession(() => this.sql<{ answer: unknown }[]>`
      WITH claimed AS (
        INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms)
        SELECT e.id, ${key}::text, ${this.sql.json((answer ?? null) as postgres.JSONValue)}, ${expiresAtMs}::int8
        FROM environments e
        WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        ON CONFLICT (environment_id, key) DO UPDATE
          SET answer = EXCLUDED.answer, expires_at_ms = EXCLUDED.expires_at_ms
          WHERE idempotency_keys.expires_at_ms <= ${nowMs}
        RETURNING answer
      ),
      stored_events AS (${insertEventsStatement(this.sql, scope, rows.events ?? [], receivedAtMs, onlyIfClaimed())}),
      stored_exposures AS (${insertExposuresStatement(this.sql, scope, rows.exposures ?? [], receivedAtMs, onlyIfClaimed())})
      ${summary === null ? this.sql`` : this.sql`, summary_last AS (${summary.last}), summary_hours AS (${summary.hours})`}
      SELECT answer FROM claimed`);
    if (won) return { answer: won.answer, stored: true };
    // 2. A live answer (a new statement sees the winner's committed row) or a foreign scope.
    const [stored] = await this.sql<{ answer: unknown }[]>`
      SELECT k.answer FROM idempotency_keys k
      JOIN environments e ON e.id = k.environment_id
      WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        AND k.environment_id = ${scope.environmentId} AND k.key = ${key}`;
    if (!stored) throw notFound('environment', scope.environmentId);
    return { answer: stored.answer, stored: false };
  }

  async storeCountsOnce(key: string, report: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>, expiresAtMs: number, nowMs: number = Date.now()): Promise<number> {
    // The environments the report names, each with the org and project it names them in (a
    // report spans tenants; the key is claimed in each, since the table is per environment).
    const named = new Map<string, EnvironmentScope>();
    for (const row of [...report.counts, ...report.lastEvaluated]) {
      const scope = { orgId: row.orgId, projectId: row.projectId, environmentId: row.environmentId };
      if (validScope(scope)) named.set(`${scope.orgId}/${scope.projectId}/${scope.environmentId}`, scope);
    }
    const environments = [...named.values()];
    // Only the rows of an environment whose claim this statement made are written.
    const statements = reportCountsStatements(this.sql, report, this.sql`AND e.id IN (SELECT environment_id FROM claimed)`);
    if (statements === null || environments.length === 0) return 0;
    // 1. ONE statement, as storeOnce: the claims and the counts commit together or not at all. The
    //    primary key makes a concurrent statement with the same key wait on each claim until ours
    //    commits, then see our row and claim nothing; claims are made in environment id order, so
    //    two such statements wait on each other in one order.
    const written = await retryingStaleSession(() => this.sql`
      WITH report_environments AS (
        SELECT DISTINCT e.id
        FROM unnest(${this.sql.array(environments.map((e) => e.orgId))}::uuid[], ${this.sql.array(environments.map((e) => e.projectId))}::uuid[],
                    ${this.sql.array(environments.map((e) => e.environmentId))}::uuid[]) AS u (org_id, project_id, environment_id)
        JOIN environments e ON e.id = u.environment_id AND e.project_id = u.project_id AND e.org_id = u.org_id
      ), claimed AS (
        INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms)
        SELECT id, ${key}::text, 'true'::jsonb, ${expiresAtMs}::int8 FROM report_environments ORDER BY id
        ON CONFLICT (environment_id, key) DO UPDATE
          SET answer = EXCLUDED.answer, expires_at_ms = EXCLUDED.expires_at_ms
          WHERE idempotency_keys.expires_at_ms <= ${nowMs}
        RETURNING environment_id
      ), ${statements.inputs}, last_written AS (${statements.last})
      ${statements.hours}`);
    return written.count;
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    // Maintenance across every environment (no tenant asks for it). The batch is picked on the
    // expiry index, so each statement touches `limit` rows however large the table is.
    const result = await this.sql`
      DELETE FROM idempotency_keys k
      USING (
        SELECT environment_id, key FROM idempotency_keys
        WHERE expires_at_ms <= ${nowMs}::int8
        ORDER BY expires_at_ms
        LIMIT ${limit}
      ) expired
      WHERE k.environment_id = expired.environment_id AND k.key = expired.key
        AND k.expires_at_ms <= ${nowMs}::int8`;
    return result.count;
  }
}
