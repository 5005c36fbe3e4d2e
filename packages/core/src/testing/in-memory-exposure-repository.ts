import type { Exposure } from '../model/entities.ts';
import type { ExposureRepository } from '../ports/event-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

/**
 * Append-only exposures in memory. Like the PostgreSQL adapter it stamps received_at_ms with the
 * wall clock and refuses an environment outside the scope (NOT_FOUND) before storing anything.
 */
export class InMemoryExposureRepository implements ExposureRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async insert(scope: EnvironmentScope, exposures: Array<Omit<Exposure, 'environmentId'>>): Promise<number> {
    if (exposures.length === 0) return 0;
    this.state.requireEnvironment(scope);
    const receivedAtMs = Date.now();
    for (const exposure of exposures) {
      this.state.exposures.push({
        orgId: scope.orgId,
        environmentId: scope.environmentId,
        flagKey: exposure.flagKey,
        variantKey: exposure.variantKey,
        contextType: exposure.contextType,
        contextKey: exposure.contextKey,
        timestampMs: exposure.timestampMs,
        ruleId: exposure.ruleId ?? null,
        receivedAtMs,
      });
    }
    return exposures.length;
  }

  async count(scope: EnvironmentScope, filter: { flagKey?: string } = {}): Promise<number> {
    return this.rowsOf(scope).filter((exposure) => filter.flagKey === undefined || exposure.flagKey === filter.flagKey)
      .length;
  }

  async lastReceivedAtMs(scope: EnvironmentScope): Promise<number> {
    return this.rowsOf(scope).reduce((latest, exposure) => Math.max(latest, exposure.receivedAtMs), 0);
  }

  private rowsOf(scope: EnvironmentScope): InMemoryState['exposures'] {
    return this.state.exposures.filter(
      (exposure) => exposure.orgId === scope.orgId && exposure.environmentId === scope.environmentId,
    );
  }
}
