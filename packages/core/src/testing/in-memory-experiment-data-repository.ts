import type { ArmMetricData, ExperimentMetric, JointMoments, MetricSource } from '../experiments/analysis-model.ts';
import type { ArmTotals, ExperimentDataRepository, MetricAggregateQuery } from '../ports/experiment-data-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const inScope = (row: { orgId: string; environmentId: string }, scope: EnvironmentScope): boolean =>
  row.orgId === scope.orgId && row.environmentId === scope.environmentId;

const inWindow = (timestampMs: number, query: { fromMs: number; toMs: number | null }): boolean =>
  timestampMs >= query.fromMs && (query.toMs === null || timestampMs < query.toMs);

/** PostgreSQL's percentile_cont: linear interpolation between the sorted values around q·(n − 1). */
function percentileCont(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const position = q * (sorted.length - 1);
  const below = Math.floor(position);
  const low = sorted[below] ?? 0;
  const high = sorted[Math.ceil(position)] ?? low;
  return low + (high - low) * (position - below);
}

/** Two-pass means and co-moments Σ(v_i − m_i)(v_j − m_j) of rows of k variables (all 0 without rows). */
function jointMomentsOf(rows: number[][], k: number): JointMoments {
  const n = rows.length;
  const means = Array.from({ length: k }, (_, i) => (n === 0 ? 0 : rows.reduce((sum, row) => sum + (row[i] ?? 0), 0) / n));
  const comoments = means.map((mi, i) =>
    means.map((mj, j) => rows.reduce((sum, row) => sum + ((row[i] ?? 0) - mi) * ((row[j] ?? 0) - mj), 0)),
  );
  return { n, means, comoments };
}

const clamp = (value: number, lower: number | null, upper: number | null): number =>
  Math.min(Math.max(value, lower ?? -Infinity), upper ?? Infinity);

/** The sources a metric reads, in its variables' order: [value] or [numerator, denominator]. */
const sourcesOf = (metric: ExperimentMetric): MetricSource[] =>
  metric.kind === 'event' ? [metric] : [metric.numerator, metric.denominator];

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

  async aggregateMetrics(scope: EnvironmentScope, query: MetricAggregateQuery): Promise<ArmTotals[]> {
    // 1. Participants: each context's first exposure in the window to one of the variants
    //    (earliest timestamp, then variant key) gives its arm and t0.
    const first = new Map<string, { variantKey: string; t0: number }>();
    for (const exposure of this.state.exposures) {
      if (!inScope(exposure, scope) || exposure.flagKey !== query.flagKey) continue;
      if (!query.variantKeys.includes(exposure.variantKey) || !inWindow(exposure.timestampMs, query)) continue;
      // Another rule's exposure (or no allocation's) is no participant; an unreported rule is.
      if (query.ruleId !== null && exposure.ruleId != null && exposure.ruleId !== query.ruleId) continue;
      const context = JSON.stringify([exposure.contextType, exposure.contextKey]);
      const seen = first.get(context);
      if (!seen || exposure.timestampMs < seen.t0 || (exposure.timestampMs === seen.t0 && exposure.variantKey < seen.variantKey)) {
        first.set(context, { variantKey: exposure.variantKey, t0: exposure.timestampMs });
      }
    }
    return this.aggregateOver(scope, query, first);
  }

  /**
   * Steps 2–5 over given participants (context as JSON [type, key] → arm and t0): also the power
   * calculator's units of a past window (InMemoryPowerDataRepository).
   */
  aggregateOver(scope: EnvironmentScope, query: Pick<MetricAggregateQuery, 'metrics' | 'valueTypes' | 'toMs' | 'variantKeys'>, first: ReadonlyMap<string, { variantKey: string; t0: number }>): ArmTotals[] {
    // The scope's events of the keys the metrics read, by key and context.
    const wanted = new Set(query.metrics.flatMap((metric) => sourcesOf(metric).map((source) => source.eventKey)));
    const eventsOf = new Map<string, Map<string, Array<{ value: number; timestampMs: number }>>>();
    for (const event of this.state.events) {
      if (!wanted.has(event.metricKey) || !inScope(event, scope)) continue;
      const byContext = eventsOf.get(event.metricKey) ?? new Map<string, Array<{ value: number; timestampMs: number }>>();
      eventsOf.set(event.metricKey, byContext);
      const context = JSON.stringify([event.contextType, event.contextKey]);
      const rows = byContext.get(context) ?? [];
      rows.push({ value: event.value, timestampMs: event.timestampMs });
      byContext.set(context, rows);
    }

    // 2. A source aggregated over one participant's events in [from, to); null: `mean` without events.
    const valueOf = (source: MetricSource, context: string, from: number, to: number): number | null => {
      const bool = query.valueTypes[source.eventKey] === 'bool';
      const values = (eventsOf.get(source.eventKey)?.get(context) ?? [])
        .filter((event) => event.timestampMs >= from && event.timestampMs < to)
        .map((event) => (bool ? (event.value !== 0 ? 1 : 0) : event.value));
      switch (source.aggregation) {
        case 'conversion':
          return (bool ? values.some((v) => v !== 0) : values.length > 0) ? 1 : 0;
        case 'sum':
          return values.reduce((sum, v) => sum + v, 0);
        case 'count':
          return values.length;
        case 'mean':
          return values.length === 0 ? null : values.reduce((sum, v) => sum + v, 0) / values.length;
      }
    };

    const metrics = query.metrics.map((metric) => {
      // 3. Per participant: the sources after t0 (within each one's window and the iteration's
      //    end), then with CUPED the same sources over [t0 − lookback, t0) (a `mean` without events: 0).
      const sources = sourcesOf(metric);
      const rows: Array<{ variantKey: string; values: number[] }> = [];
      for (const [context, { variantKey, t0 }] of first) {
        const outcome = sources.map((source) =>
          valueOf(source, context, t0, Math.min(source.windowMs === null ? Infinity : t0 + source.windowMs, query.toMs ?? Infinity)),
        );
        if (outcome.some((v) => v === null)) continue;
        const covariates = metric.cuped === null ? [] : sources.map((source) => valueOf(source, context, t0 - (metric.cuped?.lookbackMs ?? 0), t0) ?? 0);
        rows.push({ variantKey, values: [...(outcome as number[]), ...covariates] });
      }
      // 4. Capping of an event metric's value: absolute bounds, or percentiles of the values pooled
      //    over every arm (zeros left out when ignoreZeros); then every value is clamped, except
      //    zeros under ignoreZeros (a participant without events is not lifted to the lower bound).
      let lower: number | null = null;
      let upper: number | null = null;
      const capping = metric.kind === 'event' ? metric.capping : null;
      if (capping?.kind === 'absolute') [lower, upper] = [capping.lower, capping.upper];
      if (capping?.kind === 'percentile') {
        const pool = rows.map((row) => row.values[0] ?? 0).filter((v) => !capping.ignoreZeros || v !== 0);
        lower = capping.lower === null ? null : percentileCont(pool, capping.lower);
        upper = capping.upper === null ? null : percentileCont(pool, capping.upper);
      }
      return { metric, rows, lower, upper, width: sources.length * (metric.cuped === null ? 1 : 2) };
    });

    // 5. Per arm: participants, and per metric the joint moments of its (capped) variables.
    return query.variantKeys.map((variantKey) => {
      const data: Record<string, ArmMetricData> = {};
      for (const { metric, rows, lower, upper, width } of metrics) {
        const arm = rows.filter((row) => row.variantKey === variantKey).map((row) => row.values);
        const keepZeros = metric.kind === 'event' && metric.capping?.ignoreZeros === true;
        const capped = arm.map(([value = 0, ...rest]) => [keepZeros && value === 0 ? 0 : clamp(value, lower, upper), ...rest]);
        const uncapped = jointMomentsOf(arm.map((values) => values.slice(0, 1)), 1);
        data[metric.key] = { moments: jointMomentsOf(capped, width), uncappedMean: uncapped.means[0] ?? 0 };
      }
      const participants = [...first.values()].filter((exposure) => exposure.variantKey === variantKey).length;
      return { variantKey, participants, metrics: data };
    });
  }

  async dataArrivedSince(scope: EnvironmentScope, query: { flagKey: string; metricKeys: readonly string[]; sinceMs: number }): Promise<boolean> {
    return (
      this.state.exposures.some((row) => inScope(row, scope) && row.flagKey === query.flagKey && row.receivedAtMs > query.sinceMs) ||
      this.state.events.some((row) => inScope(row, scope) && query.metricKeys.includes(row.metricKey) && row.receivedAtMs > query.sinceMs)
    );
  }
}
