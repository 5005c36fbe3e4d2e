import {
  DomainError,
  normaliseStoredAnalysis,
  normaliseStoredMetric,
  notFound,
  versionConflict,
  type EnvironmentScope,
  type Experiment,
  type ExperimentInput,
  type ExperimentIteration,
  type ExperimentRepository,
  type ExperimentStatus,
  type OrgScope,
  type AnalysisSettings,
  type ExperimentMetric,
} from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql, TransactionSql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid } from './pg-errors.ts';

const ACTIVE: ExperimentStatus = 'EXPERIMENT_STATUS_ACTIVE';

interface ExperimentRow {
  id: string;
  org_id: string;
  project_id: string;
  environment_id: string;
  name: string;
  description: string;
  flag_key: string;
  status: ExperimentStatus;
  variant_keys: string[];
  metric_keys: string[];
  traffic_allocation: number;
  rule_id: string | null;
  control_variant_key: string;
  metrics: ExperimentMetric[];
  analysis: AnalysisSettings;
  version: number;
  created_at_ms: number;
  updated_at_ms: number;
}

interface IterationRow {
  id: string;
  experiment_id: string;
  iteration_number: number;
  started_at_ms: number;
  ended_at_ms: number;
  metric_keys: string[];
  traffic_allocation: number;
}

const toExperiment = (row: ExperimentRow): Experiment => ({
  id: row.id,
  environmentId: row.environment_id,
  name: row.name,
  description: row.description,
  flagKey: row.flag_key,
  status: row.status,
  variantKeys: row.variant_keys,
  metricKeys: row.metric_keys,
  trafficAllocation: row.traffic_allocation,
  ruleId: row.rule_id,
  controlVariantKey: row.control_variant_key,
  // Rows written before margins and engines (migration 0026 rewrote them; an older instance may still write one).
  metrics: row.metrics.map(normaliseStoredMetric),
  analysis: normaliseStoredAnalysis(row.analysis),
  version: row.version,
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms,
});
const toScope = (row: ExperimentRow): EnvironmentScope => ({
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
});
const toIteration = (row: IterationRow): ExperimentIteration => ({
  id: row.id,
  experimentId: row.experiment_id,
  iterationNumber: row.iteration_number,
  startedAtMs: row.started_at_ms,
  endedAtMs: row.ended_at_ms,
  metricKeys: row.metric_keys,
  trafficAllocation: row.traffic_allocation,
});

const validIds = (scope: EnvironmentScope, experimentId: string): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId) && isUuid(experimentId);

/**
 * Experiments and their iterations. Every statement names the experiment's org, project and
 * environment (iterations through a join on `experiments`), except listActive, which is the
 * scheduler's deliberate view across all orgs. A transition is one transaction whose first
 * statement is a conditional UPDATE: of concurrent moves from the same status exactly one matches.
 */
export class PgExperimentRepository implements ExperimentRepository {
  constructor(private readonly sql: Sql) {}

  private columns(sql: Sql | TransactionSql = this.sql) {
    return sql`id, org_id, project_id, environment_id, name, description, flag_key, status, variant_keys,
      metric_keys, traffic_allocation, rule_id, control_variant_key, metrics, analysis, version,
      floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
      floor(extract(epoch FROM updated_at) * 1000)::int8 AS updated_at_ms`;
  }

  /**
   * A text[] built from a jsonb parameter. postgres.js types array parameters from a catalogue
   * it loads on a pool's first connection, and a query sent before that load completes sends
   * the array as 'a,b' (malformed). jsonb needs no catalogue, so the write is right every time.
   */
  private textArray(values: string[]) {
    return this.sql`ARRAY(SELECT value FROM jsonb_array_elements_text(${this.sql.json(values)}::jsonb)
      WITH ORDINALITY AS element(value, position) ORDER BY position)`;
  }

  /** A jsonb parameter (metrics, analysis: core's shapes as they are). */
  private jsonb(value: unknown) {
    return this.sql`${this.sql.json(value as postgres.JSONValue)}::jsonb`;
  }

  private metricKeys(metrics: readonly ExperimentMetric[]): string[] {
    return metrics.map((metric) => metric.key);
  }

  async create(scope: EnvironmentScope, input: ExperimentInput): Promise<Experiment> {
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId) || !isUuid(scope.environmentId)) {
      throw notFound('environment', scope.environmentId);
    }
    // INSERT ... SELECT from the scoped environment: an environment outside the scope inserts
    // nothing (NOT_FOUND). now() for both stamps, so updatedAtMs starts equal to createdAtMs.
    const [row] = await this.sql<ExperimentRow[]>`
      INSERT INTO experiments (org_id, project_id, environment_id, name, description, flag_key, variant_keys,
        metric_keys, traffic_allocation, rule_id, control_variant_key, metrics, analysis, created_at, updated_at)
      SELECT e.org_id, e.project_id, e.id, ${input.name}::text, ${input.description}::text, ${input.flagKey}::text,
        ${this.textArray(input.variantKeys)}, ${this.textArray(this.metricKeys(input.metrics))}, ${input.trafficAllocation}::float8,
        ${input.ruleId}::text, ${input.controlVariantKey}::text, ${this.jsonb(input.metrics)}, ${this.jsonb(input.analysis)},
        now(), now()
      FROM environments e
      WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
      RETURNING ${this.columns()}`;
    if (!row) throw notFound('environment', scope.environmentId);
    return toExperiment(row);
  }

  async get(scope: EnvironmentScope, experimentId: string): Promise<Experiment | null> {
    if (!validIds(scope, experimentId)) return null;
    const [row] = await this.sql<ExperimentRow[]>`
      SELECT ${this.columns()} FROM experiments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND id = ${experimentId}`;
    return row ? toExperiment(row) : null;
  }

  async findInOrg(
    scope: OrgScope,
    experimentId: string,
  ): Promise<{ experiment: Experiment; scope: EnvironmentScope } | null> {
    if (!isUuid(scope.orgId) || !isUuid(experimentId)) return null;
    const [row] = await this.sql<ExperimentRow[]>`
      SELECT ${this.columns()} FROM experiments WHERE org_id = ${scope.orgId} AND id = ${experimentId}`;
    return row ? { experiment: toExperiment(row), scope: toScope(row) } : null;
  }

  async list(scope: EnvironmentScope): Promise<Experiment[]> {
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId) || !isUuid(scope.environmentId)) return [];
    const rows = await this.sql<ExperimentRow[]>`
      SELECT ${this.columns()} FROM experiments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
      ORDER BY created_at, id`;
    return rows.map(toExperiment);
  }

  async update(
    scope: EnvironmentScope,
    experimentId: string,
    patch: Partial<ExperimentInput>,
    expectedVersion?: number,
  ): Promise<Experiment> {
    if (!validIds(scope, experimentId)) throw notFound('experiment', experimentId);
    const sql = this.sql;
    // Each absent field keeps its column; updated_at moves at least 1 ms so clients see the change.
    const [row] = await sql<ExperimentRow[]>`
      UPDATE experiments SET
        name = ${patch.name === undefined ? sql`name` : sql`${patch.name}`},
        description = ${patch.description === undefined ? sql`description` : sql`${patch.description}`},
        flag_key = ${patch.flagKey === undefined ? sql`flag_key` : sql`${patch.flagKey}`},
        variant_keys = ${patch.variantKeys === undefined ? sql`variant_keys` : this.textArray(patch.variantKeys)},
        metric_keys = ${patch.metrics === undefined ? sql`metric_keys` : this.textArray(this.metricKeys(patch.metrics))},
        metrics = ${patch.metrics === undefined ? sql`metrics` : this.jsonb(patch.metrics)},
        traffic_allocation = ${patch.trafficAllocation === undefined ? sql`traffic_allocation` : sql`${patch.trafficAllocation}::float8`},
        rule_id = ${patch.ruleId === undefined ? sql`rule_id` : sql`${patch.ruleId}::text`},
        control_variant_key = ${patch.controlVariantKey === undefined ? sql`control_variant_key` : sql`${patch.controlVariantKey}::text`},
        analysis = ${patch.analysis === undefined ? sql`analysis` : this.jsonb(patch.analysis)},
        version = version + 1,
        updated_at = greatest(clock_timestamp(), updated_at + interval '1 millisecond')
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND id = ${experimentId}
        ${expectedVersion === undefined ? sql`` : sql`AND version = ${expectedVersion}`}
      RETURNING ${this.columns()}`;
    if (row) return toExperiment(row);
    throw await this.whyUnchanged(scope, experimentId, expectedVersion);
  }

  async delete(scope: EnvironmentScope, experimentId: string, expectedVersion?: number): Promise<Experiment> {
    if (!validIds(scope, experimentId)) throw notFound('experiment', experimentId);
    // Iterations and results go with it (ON DELETE CASCADE).
    const [row] = await this.sql<ExperimentRow[]>`
      DELETE FROM experiments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND id = ${experimentId}
        ${expectedVersion === undefined ? this.sql`` : this.sql`AND version = ${expectedVersion}`}
      RETURNING ${this.columns()}`;
    if (row) return toExperiment(row);
    throw await this.whyUnchanged(scope, experimentId, expectedVersion);
  }

  async transition(
    scope: EnvironmentScope,
    experimentId: string,
    move: { from: ExperimentStatus; to: ExperimentStatus; atMs: number },
    expectedVersion?: number,
  ): Promise<Experiment> {
    if (!validIds(scope, experimentId)) throw notFound('experiment', experimentId);
    const moved = await transaction(this.sql, async (tx) => {
      // 1. The guarded status change. A concurrent mover waits on the row lock, then re-checks
      //    `status = from` against the committed row and matches nothing.
      const [row] = await tx<ExperimentRow[]>`
        UPDATE experiments SET status = ${move.to}, version = version + 1,
          updated_at = greatest(clock_timestamp(), updated_at + interval '1 millisecond')
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND id = ${experimentId} AND status = ${move.from}
          ${expectedVersion === undefined ? tx`` : tx`AND version = ${expectedVersion}`}
        RETURNING ${this.columns(tx)}`;
      if (!row) return null;
      // 2. Leaving ACTIVE closes the running iteration.
      if (move.from === ACTIVE && move.to !== ACTIVE) {
        await tx`
          UPDATE experiment_iterations i SET ended_at_ms = ${move.atMs}
          FROM experiments x
          WHERE x.id = i.experiment_id AND x.org_id = ${scope.orgId} AND x.project_id = ${scope.projectId}
            AND x.environment_id = ${scope.environmentId} AND x.id = ${experimentId} AND i.ended_at_ms = 0`;
      }
      // 3. Entering ACTIVE opens the next one with the metrics and allocation it will run with.
      if (move.to === ACTIVE && move.from !== ACTIVE) {
        await tx`
          INSERT INTO experiment_iterations (experiment_id, iteration_number, started_at_ms, metric_keys, traffic_allocation)
          SELECT x.id,
            coalesce((SELECT max(i.iteration_number) FROM experiment_iterations i WHERE i.experiment_id = x.id), 0) + 1,
            ${move.atMs}::int8, x.metric_keys, x.traffic_allocation
          FROM experiments x
          WHERE x.org_id = ${scope.orgId} AND x.project_id = ${scope.projectId}
            AND x.environment_id = ${scope.environmentId} AND x.id = ${experimentId}`;
      }
      return toExperiment(row);
    });
    if (moved) return moved;
    const stored = await this.get(scope, experimentId);
    if (stored && stored.status !== move.from) {
      throw new DomainError('ABORTED', `experiment status changed: expected ${move.from}, stored ${stored.status}`);
    }
    throw await this.whyUnchanged(scope, experimentId, expectedVersion);
  }

  async listIterations(scope: EnvironmentScope, experimentId: string): Promise<ExperimentIteration[]> {
    if (!validIds(scope, experimentId)) return [];
    const rows = await this.sql<IterationRow[]>`
      SELECT i.id, i.experiment_id, i.iteration_number, i.started_at_ms, i.ended_at_ms, i.metric_keys, i.traffic_allocation
      FROM experiment_iterations i
      JOIN experiments x ON x.id = i.experiment_id
      WHERE x.org_id = ${scope.orgId} AND x.project_id = ${scope.projectId} AND x.environment_id = ${scope.environmentId}
        AND x.id = ${experimentId}
      ORDER BY i.iteration_number`;
    return rows.map(toIteration);
  }

  async listActive(): Promise<Array<{ experiment: Experiment; scope: EnvironmentScope }>> {
    // Unscoped on purpose: the stats scheduler recomputes every org's running experiments.
    const rows = await this.sql<ExperimentRow[]>`
      SELECT ${this.columns()} FROM experiments WHERE status = ${ACTIVE} ORDER BY created_at, id`;
    return rows.map((row) => ({ experiment: toExperiment(row), scope: toScope(row) }));
  }

  /** After a guarded write matched nothing: NOT_FOUND, or ABORTED when only the version differs. */
  private async whyUnchanged(
    scope: EnvironmentScope,
    experimentId: string,
    expectedVersion: number | undefined,
  ): Promise<DomainError> {
    const stored = await this.get(scope, experimentId);
    if (!stored) return notFound('experiment', experimentId);
    return versionConflict('experiment', expectedVersion ?? stored.version, stored.version);
  }
}
