import type { AggregateQuery, ExperimentDataRepository, MetricTotals, VariantTotals } from '../ports/experiment-data-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const inScope = (row: { orgId: string; environmentId: string }, scope: EnvironmentScope): boolean =>
  row.orgId === scope.orgId && row.environmentId === scope.environmentId;

const inWindow = (timestampMs: number, query: AggregateQuery): boolean =>
  timestampMs >= query.fromMs && (query.toMs === null || timestampMs < query.toMs);

/** Two-pass mean and sample variance: the reference the SQL aggregates are checked against. */
function totalsOf(values: number[]): MetricTotals {
  const n = values.length;
  const mean = n === 0 ? null : values.reduce((sum, v) => sum + v, 0) / n;
  const variance = n < 2 || mean === null ? null : values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1);
  return { contributors: n, mean, variance, nonZero: values.filter((v) => v !== 0).length };
}

/**
 * The aggregation of ExperimentDataRepository computed in JS over the fake's rows, step by step
 * as the port describes it; the PostgreSQL adapter does the same in SQL, and the contract suite
 * holds the two to the same hand-computed numbers.
 */
export class InMemoryExperimentDataRepository implements ExperimentDataRepository {
  private readonly state: InMemoryState;

  constructor(state: InMemoryState) {
    this.state = state;
  }

  async aggregate(scope: EnvironmentScope, query: AggregateQuery): Promise<VariantTotals[]> {
    // 1. Each context's first exposure to one of the variants (earliest timestamp, then variant key).
    const first = new Map<string, { variantKey: string; timestampMs: number }>();
    for (const exposure of this.state.exposures) {
      if (!inScope(exposure, scope) || exposure.flagKey !== query.flagKey) continue;
      if (!query.variantKeys.includes(exposure.variantKey) || !inWindow(exposure.timestampMs, query)) continue;
      const context = JSON.stringify([exposure.contextType, exposure.contextKey]);
      const seen = first.get(context);
      if (!seen || exposure.timestampMs < seen.timestampMs || (exposure.timestampMs === seen.timestampMs && exposure.variantKey < seen.variantKey)) {
        first.set(context, { variantKey: exposure.variantKey, timestampMs: exposure.timestampMs });
      }
    }
    // 2. Each context's value per metric: the sum of its events (bool: 1 if any is true).
    const bool = new Set(query.metrics.filter((m) => m.valueType === 'bool').map((m) => m.key));
    const values = new Map<string, Map<string, number>>(query.metrics.map((m) => [m.key, new Map()]));
    for (const event of this.state.events) {
      const perContext = values.get(event.metricKey);
      if (!perContext || !inScope(event, scope) || !inWindow(event.timestampMs, query)) continue;
      const context = JSON.stringify([event.contextType, event.contextKey]);
      const before = perContext.get(context) ?? 0;
      perContext.set(context, bool.has(event.metricKey) ? (before !== 0 || event.value !== 0 ? 1 : 0) : before + event.value);
    }
    // 3. Per variant: participants, and per metric the totals over participants with events.
    return query.variantKeys.map((variantKey) => {
      const participants = [...first].filter(([, exposure]) => exposure.variantKey === variantKey).map(([context]) => context);
      const metrics: Record<string, MetricTotals> = {};
      for (const [metricKey, perContext] of values) {
        const observed = participants.filter((context) => perContext.has(context)).map((context) => perContext.get(context) ?? 0);
        if (observed.length > 0) metrics[metricKey] = totalsOf(observed);
      }
      return { variantKey, participants: participants.length, metrics };
    });
  }

  async dataArrivedSince(scope: EnvironmentScope, query: { flagKey: string; metricKeys: readonly string[]; sinceMs: number }): Promise<boolean> {
    return (
      this.state.exposures.some((row) => inScope(row, scope) && row.flagKey === query.flagKey && row.receivedAtMs > query.sinceMs) ||
      this.state.events.some((row) => inScope(row, scope) && query.metricKeys.includes(row.metricKey) && row.receivedAtMs > query.sinceMs)
    );
  }
}
