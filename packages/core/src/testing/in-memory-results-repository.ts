import { notFound } from '../errors/domain-error.ts';
import type { ExperimentResults, VariantResult } from '../model/entities.ts';
import type { ResultsRepository } from '../ports/experiment-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Results travel through JSON as they do through jsonb, so the fake returns what PostgreSQL would (null optional fields absent). */
const viaJson = ({ runningState, sequentialSrmPValue, ...results }: ExperimentResults): ExperimentResults => ({
  ...results,
  ...(sequentialSrmPValue == null ? {} : { sequentialSrmPValue }),
  variantResults: JSON.parse(JSON.stringify(results.variantResults)) as VariantResult[],
  ...(results.analysis === undefined ? {} : { analysis: JSON.parse(JSON.stringify(results.analysis)) as ExperimentResults['analysis'] }),
  ...(runningState == null ? {} : { runningState: JSON.parse(JSON.stringify(runningState)) as ExperimentResults['runningState'] }),
});

/** Latest results per experiment, in memory; saving needs the experiment to exist in the scope. */
export class InMemoryResultsRepository implements ResultsRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async save(scope: EnvironmentScope, results: ExperimentResults): Promise<void> {
    if (!this.experimentInScope(scope, results.experimentId)) throw notFound('experiment', results.experimentId);
    // The column is a uuid: PostgreSQL refuses anything else, and so does the fake.
    if (results.iterationId !== null && !UUID.test(results.iterationId)) throw notFound('iteration', results.iterationId);
    const storedScope = { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId };
    this.state.results.set(results.experimentId, { scope: storedScope, results: viaJson(results) });
  }

  async saveIfUnchanged(scope: EnvironmentScope, results: ExperimentResults, previousComputedAtMs: number | null): Promise<boolean> {
    if (!this.experimentInScope(scope, results.experimentId)) throw notFound('experiment', results.experimentId);
    const stored = this.state.results.get(results.experimentId);
    const unchanged = previousComputedAtMs === null ? stored === undefined : stored === undefined || stored.results.computedAtMs === previousComputedAtMs;
    if (!unchanged) return false;
    await this.save(scope, results);
    return true;
  }

  async get(scope: EnvironmentScope, experimentId: string): Promise<ExperimentResults | null> {
    if (!this.experimentInScope(scope, experimentId)) return null;
    const stored = this.state.results.get(experimentId);
    return stored ? viaJson(stored.results) : null;
  }

  private experimentInScope(scope: EnvironmentScope, experimentId: string): boolean {
    const entry = this.state.experiments.get(experimentId);
    return (
      !!entry &&
      entry.scope.orgId === scope.orgId &&
      entry.scope.projectId === scope.projectId &&
      entry.scope.environmentId === scope.environmentId
    );
  }
}
