import { DomainError, type EnvironmentScope, type MetricAggregateQuery } from '@switchyard/core';
import type { TransactionSql } from './connect.ts';
import { participantDefinition, participantValuesQuery, planParticipantValues, sourcesOf } from './participant-values.pg.ts';

/**
 * How much older than the transactions that insert them rows may be stamped: the ingest paths
 * stamp `received_at_ms` with the application's clock before their statement reaches PostgreSQL
 * (a wait for a pooled connection comes in between), and instances' clocks differ from the
 * database's. Each pass re-reads what was received from this long before the previous pass's
 * horizon (docs/statistics.md "Incremental aggregation"); a larger margin costs only re-reading
 * more recent arrivals.
 */
export const LATE_ARRIVAL_MARGIN_MS = 2 * 60_000;

/**
 * Brings the stored participants of a running iteration (experiment_participants) up to date
 * for `query`, inside the caller's transaction (READ COMMITTED: each statement sees what was
 * committed before it started):
 * 1. the pass's horizon, read before any data: the database clock, or the start of the oldest
 *    open transaction of another client session, if earlier (its rows, invisible to this pass,
 *    may be stamped before the clock; however long it stays open, the next pass reads from
 *    before it began). Any open transaction, not only those that have written: an insert waiting
 *    for a lock has not written yet. Saved as the set's watermark;
 * 2. the iteration's set row is created if missing and locked: two passes over one iteration
 *    take turns, the second sees the first's rows;
 * 3. a set computed for another definition (or new) is rebuilt: every participant from scratch;
 * 4. otherwise only the contexts with an exposure of the flag or an event of a metric's keys
 *    received since the watermark minus the margin are computed again, and written where they
 *    changed (a context re-read only because of the margin usually has not). Exposures
 *    are append-only, so a context once a participant stays one; a late exposure can move its
 *    t0 earlier (and change its variant), and late events change its values: recomputing the
 *    whole participant covers both. Everyone else's values cannot have changed.
 * Other iterations of the experiment lose their sets: only the current one is recomputed.
 * @throws NOT_FOUND when the iteration no longer exists.
 */
export async function refreshParticipants(
  tx: TransactionSql,
  scope: EnvironmentScope,
  query: MetricAggregateQuery,
  iterationId: string,
  marginMs: number,
): Promise<void> {
  const definition = participantDefinition(query);
  // floor, not the cast's rounding: rows are stamped with whole milliseconds (Date.now()), and a
  // horizon rounded up past a row stamped in the same millisecond would skip it.
  const [horizon] = await tx<{ ms: string }[]>`
    SELECT floor(extract(epoch FROM least(clock_timestamp(), (
      SELECT min(a.xact_start) FROM pg_stat_activity a
      WHERE a.backend_type = 'client backend' AND a.xact_start IS NOT NULL AND a.pid <> pg_backend_pid() AND a.datname = current_database()
    ))) * 1000)::int8 AS ms`;
  const watermark = Number(horizon?.ms ?? 0);
  // Only an iteration of an experiment in the scope gets a set.
  await tx`INSERT INTO experiment_participant_sets (iteration_id, org_id, environment_id, definition, watermark_ms)
    SELECT i.id, x.org_id, x.environment_id, '', 0 FROM experiment_iterations i JOIN experiments x ON x.id = i.experiment_id
    WHERE i.id = ${iterationId} AND x.org_id = ${scope.orgId} AND x.environment_id = ${scope.environmentId}
    ON CONFLICT (iteration_id) DO NOTHING`;
  const [set] = await tx<{ definition: string; watermark_ms: string }[]>`
    SELECT definition, watermark_ms FROM experiment_participant_sets
    WHERE iteration_id = ${iterationId} AND org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}
    FOR UPDATE`;
  if (!set) throw new DomainError('NOT_FOUND', 'iteration not found');
  await tx`DELETE FROM experiment_participant_sets s USING experiment_iterations i, experiment_iterations current
    WHERE current.id = ${iterationId} AND i.experiment_id = current.experiment_id AND i.id <> current.id AND s.iteration_id = i.id`;

  const columns = tx`iteration_id, context_type, context_key, variant_key, vals`;
  if (set.definition !== definition) {
    await tx`DELETE FROM experiment_participants WHERE iteration_id = ${iterationId}`;
    await planParticipantValues(tx, 'every participant');
    await tx`INSERT INTO experiment_participants (${columns})
      SELECT ${iterationId}::uuid, v.context_type, v.context_key, v.variant_key, v.vals FROM (${participantValuesQuery(tx, scope, query, null)}) v`;
  } else {
    const since = Number(set.watermark_ms) - marginMs;
    const eventKeys = [...new Set(query.metrics.flatMap((metric) => sourcesOf(metric).map((source) => source.eventKey)))];
    // received_at_ms has BRIN indexes and partitions: only the newest block ranges are read.
    const events = eventKeys.length === 0 ? tx`` : tx`UNION
      SELECT e.context_type, e.context_key FROM events e
      WHERE e.received_at_ms >= ${since}::int8 AND e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId}
        AND e.metric_key IN ${tx(eventKeys)}`;
    await planParticipantValues(tx, 'a few contexts');
    await tx`WITH dirty AS MATERIALIZED (
        SELECT p.context_type, p.context_key FROM exposures p
        WHERE p.received_at_ms >= ${since}::int8 AND p.org_id = ${scope.orgId} AND p.environment_id = ${scope.environmentId}
          AND p.flag_key = ${query.flagKey}
        ${events})
      INSERT INTO experiment_participants (${columns})
      SELECT ${iterationId}::uuid, v.context_type, v.context_key, v.variant_key, v.vals FROM (${participantValuesQuery(tx, scope, query, tx`dirty`)}) v
      ON CONFLICT (iteration_id, context_type, context_key) DO UPDATE SET variant_key = EXCLUDED.variant_key, vals = EXCLUDED.vals
        WHERE (experiment_participants.variant_key, experiment_participants.vals) IS DISTINCT FROM (EXCLUDED.variant_key, EXCLUDED.vals)`;
  }
  await tx`UPDATE experiment_participant_sets SET definition = ${definition}, watermark_ms = ${watermark}::int8 WHERE iteration_id = ${iterationId}`;
}

/** Drops an iteration's stored participants (an ended iteration is computed from scratch, once). */
export async function dropParticipants(tx: TransactionSql, scope: EnvironmentScope, iterationId: string): Promise<void> {
  await tx`DELETE FROM experiment_participant_sets WHERE iteration_id = ${iterationId} AND org_id = ${scope.orgId}`;
}
