import { DomainError, notFound, versionConflict } from '../errors/domain-error.ts';
import type { Experiment, ExperimentIteration, ExperimentStatus } from '../model/entities.ts';
import type { ExperimentInput, ExperimentRepository } from '../ports/experiment-ports.ts';
import type { EnvironmentScope, OrgScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const ACTIVE: ExperimentStatus = 'EXPERIMENT_STATUS_ACTIVE';

/** Metrics and analysis travel through jsonb in PostgreSQL: copies here, so no caller shares the stored ones. */
const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const copyExperiment = (experiment: Experiment): Experiment => ({
  ...experiment,
  variantKeys: [...experiment.variantKeys],
  metricKeys: [...experiment.metricKeys],
  metrics: viaJson(experiment.metrics),
  analysis: viaJson(experiment.analysis),
});
const copyIteration = (iteration: ExperimentIteration): ExperimentIteration => ({
  ...iteration,
  metricKeys: [...iteration.metricKeys],
});
const sameScope = (a: EnvironmentScope, b: EnvironmentScope): boolean =>
  a.orgId === b.orgId && a.projectId === b.projectId && a.environmentId === b.environmentId;

/**
 * Experiments and their iterations in memory. Every call runs to completion without awaiting, so
 * each one is atomic the way the PostgreSQL adapter's transactions are.
 */
export class InMemoryExperimentRepository implements ExperimentRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async create(scope: EnvironmentScope, input: ExperimentInput): Promise<Experiment> {
    this.state.requireEnvironment(scope);
    const nowMs = this.state.now();
    const experiment: Experiment = {
      id: this.state.newId(),
      environmentId: scope.environmentId,
      name: input.name,
      description: input.description,
      flagKey: input.flagKey,
      status: 'EXPERIMENT_STATUS_DRAFT',
      variantKeys: [...input.variantKeys],
      metricKeys: input.metrics.map((metric) => metric.key),
      trafficAllocation: input.trafficAllocation,
      ruleId: input.ruleId,
      controlVariantKey: input.controlVariantKey,
      metrics: viaJson(input.metrics),
      analysis: viaJson(input.analysis),
      version: 1,
      createdAtMs: nowMs,
      updatedAtMs: nowMs,
    };
    const storedScope = { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId };
    this.state.experiments.set(experiment.id, { scope: storedScope, experiment });
    return copyExperiment(experiment);
  }

  async get(scope: EnvironmentScope, experimentId: string): Promise<Experiment | null> {
    const found = this.find(scope, experimentId);
    return found ? copyExperiment(found) : null;
  }

  async findInOrg(
    scope: OrgScope,
    experimentId: string,
  ): Promise<{ experiment: Experiment; scope: EnvironmentScope } | null> {
    const entry = this.state.experiments.get(experimentId);
    if (!entry || entry.scope.orgId !== scope.orgId) return null;
    return { experiment: copyExperiment(entry.experiment), scope: { ...entry.scope } };
  }

  async list(scope: EnvironmentScope): Promise<Experiment[]> {
    // Map iteration order is insertion order, i.e. creation order.
    return [...this.state.experiments.values()]
      .filter((entry) => sameScope(entry.scope, scope))
      .map((entry) => copyExperiment(entry.experiment));
  }

  async update(
    scope: EnvironmentScope,
    experimentId: string,
    patch: Partial<ExperimentInput>,
    expectedVersion?: number,
  ): Promise<Experiment> {
    const current = this.require(scope, experimentId, expectedVersion);
    const updated: Experiment = {
      ...current,
      name: patch.name ?? current.name,
      description: patch.description ?? current.description,
      flagKey: patch.flagKey ?? current.flagKey,
      variantKeys: patch.variantKeys ? [...patch.variantKeys] : current.variantKeys,
      metricKeys: patch.metrics ? patch.metrics.map((metric) => metric.key) : current.metricKeys,
      metrics: patch.metrics ? viaJson(patch.metrics) : current.metrics,
      trafficAllocation: patch.trafficAllocation ?? current.trafficAllocation,
      ruleId: patch.ruleId === undefined ? current.ruleId : patch.ruleId,
      controlVariantKey: patch.controlVariantKey ?? current.controlVariantKey,
      analysis: patch.analysis ? viaJson(patch.analysis) : current.analysis,
      version: current.version + 1,
      updatedAtMs: this.state.now(),
    };
    this.replace(updated);
    return copyExperiment(updated);
  }

  async delete(scope: EnvironmentScope, experimentId: string, expectedVersion?: number): Promise<Experiment> {
    const current = this.require(scope, experimentId, expectedVersion);
    // The PostgreSQL foreign keys cascade to iterations and results; so does the fake.
    this.state.experiments.delete(experimentId);
    this.state.results.delete(experimentId);
    for (let i = this.state.iterations.length - 1; i >= 0; i -= 1) {
      if (this.state.iterations[i]?.experimentId === experimentId) this.state.iterations.splice(i, 1);
    }
    return copyExperiment(current);
  }

  async transition(
    scope: EnvironmentScope,
    experimentId: string,
    move: { from: ExperimentStatus; to: ExperimentStatus; atMs: number },
    expectedVersion?: number,
  ): Promise<Experiment> {
    const current = this.require(scope, experimentId, expectedVersion);
    if (current.status !== move.from) {
      throw new DomainError('ABORTED', `experiment status changed: expected ${move.from}, stored ${current.status}`);
    }
    // 1. Leaving ACTIVE closes the running iteration.
    if (move.from === ACTIVE && move.to !== ACTIVE) {
      for (const iteration of this.state.iterations) {
        if (iteration.experimentId === experimentId && iteration.endedAtMs === 0) iteration.endedAtMs = move.atMs;
      }
    }
    // 2. Entering ACTIVE opens the next one, freezing the metrics and allocation it runs with.
    if (move.to === ACTIVE && move.from !== ACTIVE) {
      const previous = this.state.iterations.filter((iteration) => iteration.experimentId === experimentId);
      this.state.iterations.push({
        id: this.state.newId(),
        experimentId,
        iterationNumber: previous.reduce((max, iteration) => Math.max(max, iteration.iterationNumber), 0) + 1,
        startedAtMs: move.atMs,
        endedAtMs: 0,
        metricKeys: [...current.metricKeys],
        trafficAllocation: current.trafficAllocation,
      });
    }
    // 3. The status change itself, as one more version.
    const updated: Experiment = {
      ...current,
      status: move.to,
      version: current.version + 1,
      updatedAtMs: this.state.now(),
    };
    this.replace(updated);
    return copyExperiment(updated);
  }

  async listIterations(scope: EnvironmentScope, experimentId: string): Promise<ExperimentIteration[]> {
    if (!this.find(scope, experimentId)) return [];
    return this.state.iterations
      .filter((iteration) => iteration.experimentId === experimentId)
      .sort((a, b) => a.iterationNumber - b.iterationNumber)
      .map(copyIteration);
  }

  async listActive(): Promise<Array<{ experiment: Experiment; scope: EnvironmentScope }>> {
    return [...this.state.experiments.values()]
      .filter((entry) => entry.experiment.status === ACTIVE)
      .map((entry) => ({ experiment: copyExperiment(entry.experiment), scope: { ...entry.scope } }));
  }

  private find(scope: EnvironmentScope, experimentId: string): Experiment | null {
    const entry = this.state.experiments.get(experimentId);
    return entry && sameScope(entry.scope, scope) ? entry.experiment : null;
  }

  /** The stored experiment, or NOT_FOUND; ABORTED when `expectedVersion` is given and differs. */
  private require(scope: EnvironmentScope, experimentId: string, expectedVersion: number | undefined): Experiment {
    const current = this.find(scope, experimentId);
    if (!current) throw notFound('experiment', experimentId);
    if (expectedVersion !== undefined && expectedVersion !== current.version) {
      throw versionConflict('experiment', expectedVersion, current.version);
    }
    return current;
  }

  private replace(experiment: Experiment): void {
    const entry = this.state.experiments.get(experiment.id);
    if (entry) entry.experiment = experiment;
  }
}
