import { notFound, type EnvironmentScope, type IdempotencyRepository, type IdempotentRows } from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql } from './connect.ts';
import { INSERT_CHUNK_ROWS } from './event-repository.pg.ts';
import { isUuid } from './pg-errors.ts';

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
    return this.sql.begin(async (tx) => {
      // 1. Claim the key first. The primary key makes a concurrent transaction with the same key
      //    wait on this INSERT until ours ends, and then see our row: it writes nothing (no
      //    RETURNING row) and reads our answer. The SELECT from environments scopes the write.
      const [claimed] = await tx<{ answer: unknown }[]>`
        INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms)
        SELECT e.id, ${key}::text, ${tx.json((answer ?? null) as postgres.JSONValue)}, ${expiresAtMs}::int8
        FROM environments e
        WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
        ON CONFLICT (environment_id, key) DO UPDATE
          SET answer = EXCLUDED.answer, expires_at_ms = EXCLUDED.expires_at_ms
          WHERE idempotency_keys.expires_at_ms <= ${nowMs}
        RETURNING answer`;
      if (!claimed) {
        // 2a. A live answer (a new statement sees the winner's committed row) or a foreign scope.
        const [stored] = await tx<{ answer: unknown }[]>`
          SELECT k.answer FROM idempotency_keys k
          JOIN environments e ON e.id = k.environment_id
          WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
            AND k.environment_id = ${scope.environmentId} AND k.key = ${key}`;
        if (!stored) throw notFound('environment', scope.environmentId);
        return { answer: stored.answer, stored: false };
      }
      // 2b. Ours: the rows commit together with the answer, or neither does.
      const events = (rows.events ?? []).map((event) => ({
        org_id: scope.orgId,
        environment_id: scope.environmentId,
        metric_key: event.metricKey,
        context_type: event.contextType,
        context_key: event.contextKey,
        value: event.value,
        timestamp_ms: event.timestampMs,
        received_at_ms: receivedAtMs,
      }));
      for (let start = 0; start < events.length; start += INSERT_CHUNK_ROWS) {
        await tx`
          INSERT INTO events ${tx(events.slice(start, start + INSERT_CHUNK_ROWS), 'org_id', 'environment_id', 'metric_key',
            'context_type', 'context_key', 'value', 'timestamp_ms', 'received_at_ms')}`;
      }
      const exposures = (rows.exposures ?? []).map((exposure) => ({
        org_id: scope.orgId,
        environment_id: scope.environmentId,
        flag_key: exposure.flagKey,
        variant_key: exposure.variantKey,
        context_type: exposure.contextType,
        context_key: exposure.contextKey,
        timestamp_ms: exposure.timestampMs,
        received_at_ms: receivedAtMs,
      }));
      for (let start = 0; start < exposures.length; start += INSERT_CHUNK_ROWS) {
        await tx`
          INSERT INTO exposures ${tx(exposures.slice(start, start + INSERT_CHUNK_ROWS), 'org_id', 'environment_id', 'flag_key',
            'variant_key', 'context_type', 'context_key', 'timestamp_ms', 'received_at_ms')}`;
      }
      return { answer: claimed.answer, stored: true };
    });
  }
}
