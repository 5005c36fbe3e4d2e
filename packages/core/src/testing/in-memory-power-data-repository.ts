import type { ArmParticipantsQuery, PowerDataRepository, PowerWindowMoments, PowerWindowQuery } from '../ports/experiment-data-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import { InMemoryExperimentDataRepository } from './in-memory-experiment-data-repository.ts';
import type { InMemoryState } from './in-memory-state.ts';

const inScope = (row: { orgId: string; environmentId: string }, scope: EnvironmentScope) => row.orgId === scope.orgId && row.environmentId === scope.environmentId;

/**
 * The power calculator's reads over the fake's rows, as the port describes them (the PostgreSQL
 * adapter bounds them; this one reads everything).
 */
export class InMemoryPowerDataRepository implements PowerDataRepository {
  constructor(private readonly state: InMemoryState, private readonly maxParticipants = Infinity) {}

  async windowMoments(scope: EnvironmentScope, query: PowerWindowQuery): Promise<PowerWindowMoments> {
    const first = new Map<string, { variantKey: string; t0: number }>();
    for (const event of this.state.events) {
      if (!inScope(event, scope) || event.timestampMs < query.fromMs || event.timestampMs >= query.toMs) continue;
      const context = JSON.stringify([event.contextType, event.contextKey]);
      const seen = first.get(context);
      if (!seen && first.size >= this.maxParticipants) continue;
      if (!seen || event.timestampMs < seen.t0) first.set(context, { variantKey: 'window', t0: event.timestampMs });
    }
    const [arm] = new InMemoryExperimentDataRepository(this.state).aggregateOver(scope, { ...query, variantKeys: ['window'] }, first);
    return { participants: first.size, truncated: first.size >= this.maxParticipants, metrics: arm?.metrics ?? {} };
  }

  async armParticipants(scope: EnvironmentScope, query: ArmParticipantsQuery): Promise<{ counts: Record<string, number>; truncated: boolean }> {
    const first = new Map<string, { variantKey: string; t0: number }>();
    for (const exposure of this.state.exposures) {
      if (!inScope(exposure, scope) || exposure.flagKey !== query.flagKey || !query.variantKeys.includes(exposure.variantKey)) continue;
      if (exposure.timestampMs < query.fromMs || exposure.timestampMs >= query.toMs) continue;
      if (query.ruleId !== null && exposure.ruleId != null && exposure.ruleId !== query.ruleId) continue;
      const context = JSON.stringify([exposure.contextType, exposure.contextKey]);
      const seen = first.get(context);
      if (!seen || exposure.timestampMs < seen.t0 || (exposure.timestampMs === seen.t0 && exposure.variantKey < seen.variantKey)) {
        first.set(context, { variantKey: exposure.variantKey, t0: exposure.timestampMs });
      }
    }
    const counts: Record<string, number> = Object.fromEntries(query.variantKeys.map((key) => [key, 0]));
    for (const { variantKey } of first.values()) counts[variantKey] = (counts[variantKey] ?? 0) + 1;
    return { counts, truncated: first.size >= this.maxParticipants };
  }
}
