import {
  normaliseStoredAnalysis,
  notFound,
  type EnvironmentScope,
  type AnalysisSettings,
  type ExperimentRunningState,
  type ExperimentResults,
  type ResultsRepository,
  type VariantResult,
} from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface ResultsRow {
  experiment_id: string;
  iteration_id: string | null;
  variant_results: VariantResult[];
  srm_p_value: number | null;
  computed_at_ms: number;
  next_run_at_ms: number;
  computation_status: string;
  srm_warning: boolean | null;
  analysis: AnalysisSettings | null;
  running_state: ExperimentRunningState | null;
  sequential_srm_p_value: number | null;
}

const validIds = (scope: EnvironmentScope, experimentId: string): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId) && isUuid(experimentId);

/**
 * Latest results per experiment in `experiment_results` (variant results as jsonb). Writes take
 * their tenant ids from the experiment row selected within the scope, so results can only be
 * saved for an experiment the caller's scope owns.
 */
export class PgResultsRepository implements ResultsRepository {
  constructor(private readonly sql: Sql) {}

  async save(scope: EnvironmentScope, results: ExperimentResults): Promise<void> {
    const written = await this.write(scope, results, this.sql``);
    if (written === 0) throw notFound('experiment', results.experimentId);
  }

  async saveIfUnchanged(scope: EnvironmentScope, results: ExperimentResults, previousComputedAtMs: number | null): Promise<boolean> {
    // No row yet: the insert's conflict updates nothing. A row: only the one computed at previousComputedAtMs.
    const condition = previousComputedAtMs === null ? this.sql`WHERE false` : this.sql`WHERE experiment_results.computed_at_ms = ${previousComputedAtMs}::int8`;
    if ((await this.write(scope, results, condition)) > 0) return true;
    if (!validIds(scope, results.experimentId)) throw notFound('experiment', results.experimentId);
    const [experiment] = await this.sql`
      SELECT 1 FROM experiments
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId} AND id = ${results.experimentId}`;
    if (!experiment) throw notFound('experiment', results.experimentId);
    return false;
  }

  /** The upsert; `condition` guards its update (empty: always). Answers the rows written. */
  private async write(scope: EnvironmentScope, results: ExperimentResults, condition: postgres.PendingQuery<postgres.Row[]>): Promise<number> {
    if (!validIds(scope, results.experimentId)) return 0;
    const variantResults = this.sql.json(results.variantResults as unknown as postgres.JSONValue);
    const analysis = results.analysis === undefined ? null : this.sql.json(results.analysis as unknown as postgres.JSONValue);
    const runningState = results.runningState == null ? null : this.sql.json(results.runningState as unknown as postgres.JSONValue);
    const written = await translateErrors(
      () => this.sql`
        INSERT INTO experiment_results (experiment_id, org_id, environment_id, iteration_id, variant_results,
          srm_p_value, computed_at_ms, next_run_at_ms, computation_status, srm_warning, analysis, running_state, sequential_srm_p_value)
        SELECT x.id, x.org_id, x.environment_id, ${results.iterationId}::uuid, ${variantResults}::jsonb,
          ${results.srmPValue}::float8, ${results.computedAtMs}::int8, ${results.nextRunAtMs}::int8,
          ${results.computationStatus}::text, ${results.srmWarning ?? null}::boolean, ${analysis}::jsonb,
          ${runningState}::jsonb, ${results.sequentialSrmPValue ?? null}::float8
        FROM experiments x
        WHERE x.org_id = ${scope.orgId} AND x.project_id = ${scope.projectId} AND x.environment_id = ${scope.environmentId}
          AND x.id = ${results.experimentId}
        ON CONFLICT (experiment_id) DO UPDATE SET
          iteration_id = EXCLUDED.iteration_id, variant_results = EXCLUDED.variant_results,
          srm_p_value = EXCLUDED.srm_p_value, computed_at_ms = EXCLUDED.computed_at_ms,
          next_run_at_ms = EXCLUDED.next_run_at_ms, computation_status = EXCLUDED.computation_status,
          srm_warning = EXCLUDED.srm_warning, analysis = EXCLUDED.analysis,
          running_state = EXCLUDED.running_state, sequential_srm_p_value = EXCLUDED.sequential_srm_p_value
        ${condition}`,
      // A malformed iteration id is the only value the database can refuse here.
      { resource: 'results', parent: 'iteration' },
    );
    return written.count;
  }

  async get(scope: EnvironmentScope, experimentId: string): Promise<ExperimentResults | null> {
    if (!validIds(scope, experimentId)) return null;
    const [row] = await this.sql<ResultsRow[]>`
      SELECT r.experiment_id, r.iteration_id, r.variant_results, r.srm_p_value, r.computed_at_ms, r.next_run_at_ms,
        r.computation_status, r.srm_warning, r.analysis, r.running_state, r.sequential_srm_p_value
      FROM experiment_results r
      JOIN experiments x ON x.id = r.experiment_id
      WHERE r.org_id = ${scope.orgId} AND r.environment_id = ${scope.environmentId} AND x.project_id = ${scope.projectId}
        AND r.experiment_id = ${experimentId}`;
    if (!row) return null;
    return {
      experimentId: row.experiment_id,
      iterationId: row.iteration_id,
      variantResults: row.variant_results,
      srmPValue: row.srm_p_value,
      computedAtMs: row.computed_at_ms,
      nextRunAtMs: row.next_run_at_ms,
      computationStatus: row.computation_status,
      // Absent, not null, in results computed before metric definitions (entities.ts).
      ...(row.srm_warning === null ? {} : { srmWarning: row.srm_warning }),
      ...(row.analysis === null ? {} : { analysis: normaliseStoredAnalysis(row.analysis) }),
      // Absent when null, as the fake does: null and absent mean the same (none).
      ...(row.sequential_srm_p_value === null ? {} : { sequentialSrmPValue: row.sequential_srm_p_value }),
      ...(row.running_state === null ? {} : { runningState: row.running_state }),
    };
  }
}
