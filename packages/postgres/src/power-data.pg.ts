import type {
  ArmMetricData,
  ArmParticipantsQuery,
  EnvironmentScope,
  PowerDataRepository,
  PowerWindowMoments,
  PowerWindowQuery,
} from '@switchyard/core';
import { DomainError } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { armMomentsStatement, type ArmMomentsRow } from './metric-aggregation.pg.ts';
import { participantValuesOver, planParticipantValues, variableCount } from './participant-values.pg.ts';
import { isUuid } from './pg-errors.ts';

/**
 * The bounds of the calculator's reads (docs/statistics.md §14), which any reader of an
 * environment can start:
 * - `maxParticipants`: the units (contexts) one statement keeps, by a LIMIT: a past window's
 *   units, or an experiment's participants counted per arm. Beyond it the answer says `truncated`
 *   (the moments are over the first units kept, the counts are lower bounds);
 * - `statementTimeoutMs`: PostgreSQL's statement_timeout for the transaction, which bounds the
 *   scan of the window's events itself; a read cut by it answers 503 UNAVAILABLE (retry with a
 *   shorter window), not 500.
 * The window itself is at most 90 days (the service checks it).
 */
export const POWER_MAX_PARTICIPANTS = 1_000_000;
export const POWER_STATEMENT_TIMEOUT_MS = 20_000;

const validScope = (scope: EnvironmentScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** SQLSTATE 57014 (query_canceled): the statement timeout cut the read. */
function timedOut(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '57014';
}

const tooSlow = () =>
  new DomainError('UNAVAILABLE', 'the power calculator read of this window took too long (statement timeout): try a shorter window_days or give mean, variance and exposures_per_day by hand');

export class PgPowerDataRepository implements PowerDataRepository {
  private readonly maxParticipants: number;
  private readonly statementTimeoutMs: number;

  constructor(private readonly sql: Sql, options: { maxParticipants?: number; statementTimeoutMs?: number } = {}) {
    this.maxParticipants = options.maxParticipants ?? POWER_MAX_PARTICIPANTS;
    this.statementTimeoutMs = options.statementTimeoutMs ?? POWER_STATEMENT_TIMEOUT_MS;
  }

  /**
   * The units: contexts with any event (of any key) in [fromMs, toMs), t0 their first event there,
   * at most maxParticipants of them; each metric aggregated per unit from t0 to toMs (within its
   * window_ms; CUPED's pre-values over [t0 − lookback, t0)) by participantValuesOver, capped, and
   * its moments over the units in one pass (armMomentsStatement, one "arm").
   */
  async windowMoments(scope: EnvironmentScope, query: PowerWindowQuery): Promise<PowerWindowMoments> {
    const metrics: Record<string, ArmMetricData> = {};
    for (const metric of query.metrics) {
      const k = variableCount(metric);
      metrics[metric.key] = { moments: { n: 0, means: new Array<number>(k).fill(0), comoments: Array.from({ length: k }, () => new Array<number>(k).fill(0)) }, uncappedMean: 0 };
    }
    if (!validScope(scope)) return { participants: 0, truncated: false, metrics };
    const limit = this.maxParticipants;
    let rows: ArmMomentsRow[];
    try {
      rows = await this.sql.begin(async (tx) => {
        await tx`SELECT set_config('statement_timeout', ${String(this.statementTimeoutMs)}, true), set_config('work_mem', '64MB', true),
          set_config('jit', 'off', true)`;
        await planParticipantValues(tx, 'every participant');
        const exposed = tx`SELECT e.context_type, e.context_key, 'window'::text AS variant_key, min(e.timestamp_ms) AS t0
          FROM events e
          WHERE e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId}
            AND e.timestamp_ms >= ${query.fromMs}::int8 AND e.timestamp_ms < ${query.toMs}::int8
          GROUP BY e.context_type, e.context_key
          LIMIT ${limit}::int8`;
        return tx<ArmMomentsRow[]>`${armMomentsStatement(tx, query.metrics, tx`participants AS MATERIALIZED (
          ${participantValuesOver(tx, scope, { metrics: query.metrics, valueTypes: query.valueTypes, toMs: query.toMs }, exposed)})`)}`;
      });
    } catch (error) {
      if (timedOut(error)) throw tooSlow();
      throw error;
    }
    const row = rows[0];
    if (!row) return { participants: 0, truncated: false, metrics };
    const participants = Number(row.n);
    query.metrics.forEach((metric, i) => {
      const n = Number(row[`n${i}`] ?? 0);
      if (n === 0) return;
      const k = variableCount(metric);
      const at = (column: string): number => Number(row[column] ?? 0);
      const means = Array.from({ length: k }, (_, a) => at(`m${i}_${a}`));
      const comoments = means.map((_, a) => means.map((__, b) => at(`c${i}_${Math.min(a, b)}${Math.max(a, b)}`)));
      metrics[metric.key] = { moments: { n, means, comoments }, uncappedMean: at(`u${i}`) };
    });
    return { participants, truncated: participants >= limit, metrics };
  }

  /**
   * Per variant, the contexts whose first exposure (by the studied rule, as aggregateMetrics
   * counts) in [fromMs, toMs) was to it; at most maxParticipants contexts are counted.
   */
  async armParticipants(scope: EnvironmentScope, query: ArmParticipantsQuery): Promise<{ counts: Record<string, number>; truncated: boolean }> {
    const counts: Record<string, number> = Object.fromEntries(query.variantKeys.map((key) => [key, 0]));
    if (!validScope(scope) || query.variantKeys.length === 0) return { counts, truncated: false };
    const limit = this.maxParticipants;
    let rows: { variant_key: string; n: string }[];
    try {
      rows = await this.sql.begin(async (tx) => {
        await tx`SELECT set_config('statement_timeout', ${String(this.statementTimeoutMs)}, true)`;
        return tx<{ variant_key: string; n: string }[]>`
          SELECT f.variant_key, count(*)::int8 AS n FROM (
            SELECT DISTINCT ON (p.context_type, p.context_key) p.variant_key
            FROM exposures p
            WHERE p.org_id = ${scope.orgId} AND p.environment_id = ${scope.environmentId} AND p.flag_key = ${query.flagKey}
              AND p.variant_key IN ${tx(query.variantKeys as string[])} AND p.timestamp_ms >= ${query.fromMs}::int8 AND p.timestamp_ms < ${query.toMs}::int8
              ${query.ruleId === null ? tx`` : tx`AND (p.rule_id IS NULL OR p.rule_id = ${query.ruleId})`}
            ORDER BY p.context_type, p.context_key, p.timestamp_ms, p.variant_key
            LIMIT ${limit}::int8
          ) f GROUP BY f.variant_key`;
      });
    } catch (error) {
      if (timedOut(error)) throw tooSlow();
      throw error;
    }
    let total = 0;
    for (const row of rows) {
      if (row.variant_key in counts) counts[row.variant_key] = Number(row.n);
      total += Number(row.n);
    }
    return { counts, truncated: total >= limit };
  }
}
