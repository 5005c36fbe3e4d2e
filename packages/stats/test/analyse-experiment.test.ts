/** analyseExperiment: the whole engine over arms, metrics and settings (docs/statistics.md). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AnalysisSettings, ArmMetricData, EventMetric, ExperimentMetric, MetricStats, RatioMetric } from '@switchyard/core';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import {
  adjustPValues, analyseExperiment, compareMetric, comparisonEffects, jointMomentsFromRows, leadPValue,
} from '../src/index.ts';
import type { AnalysisArm } from '../src/index.ts';
import { seededNormals as normals } from './support/seeded-normals.ts';

const eventMetric = (key: string, extra: Partial<EventMetric> = {}): EventMetric => ({
  kind: 'event', key, eventKey: key, aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null, ...extra,
});
const ratioMetric = (key: string): RatioMetric => ({
  kind: 'ratio', key, direction: 'increase', cuped: null, guardrail: null,
  numerator: { eventKey: 'revenue', aggregation: 'sum', windowMs: null }, denominator: { eventKey: 'session', aggregation: 'count', windowMs: null },
});
const fromRows = (rows: number[][], uncappedMean?: number): ArmMetricData => {
  const moments = jointMomentsFromRows(rows);
  return { moments, uncappedMean: uncappedMean ?? moments.means[0] ?? 0 };
};
/** An arm's metric from (n, mean, sample variance), as the store would deliver it. */
const fromSummary = (n: number, mean: number, variance: number): ArmMetricData => ({
  moments: { n, means: [mean], comoments: [[variance * (n - 1)]] }, uncappedMean: mean,
});
const settings = (extra: Partial<AnalysisSettings> = {}): AnalysisSettings => ({ ...DEFAULT_ANALYSIS, ...extra });

describe('analyseExperiment', () => {
  const arms: AnalysisArm[] = [
    { variantKey: 'control', participants: 1000, plannedWeight: 500, metrics: { revenue: fromSummary(1000, 20, 400), checkout: fromSummary(1000, 0.12, 0.12 * (880 / 999)) } },
    { variantKey: 'treatment', participants: 1000, plannedWeight: 500, metrics: { revenue: fromSummary(1000, 21, 420), checkout: fromSummary(1000, 0.15, 0.15 * (850 / 999)) } },
  ];
  const metrics = [eventMetric('revenue'), eventMetric('checkout')];

  test('the pre-existing fields do not depend on the settings', () => {
    // Their values are checked against SciPy in experiment-results.test.ts; here they must not move
    // with the sides, α or correction.
    const result = analyseExperiment({ arms, controlVariantKey: 'control', metrics, settings: settings({ sides: 'one', alpha: 0.1, correction: 'holm' }) });
    const plain = analyseExperiment({ arms, controlVariantKey: 'control', metrics, settings: settings() });
    assert.equal(result.srmPValue, plain.srmPValue);
    assert.equal(result.srmWarning, false);
    result.variantResults.forEach((variant, i) => {
      const before = plain.variantResults[i];
      assert.ok(before !== undefined);
      assert.equal(variant.pValue, before.pValue);
      assert.equal(variant.pValuePresent, before.pValuePresent);
      assert.deepEqual(variant.metricValues, before.metricValues);
      for (const key of ['revenue', 'checkout']) {
        const pick = ({ mean, variance, lift, ci_low, ci_high, p_value }: MetricStats) => ({ mean, variance, lift, ci_low, ci_high, p_value });
        assert.deepEqual(pick(variant.metricStats[key] ?? assert.fail(key)), pick(before.metricStats[key] ?? assert.fail(key)));
      }
    });
    // The treatment's revenue p-value is the two-sided Welch one whatever `sides` says:
    // scipy.stats.ttest_ind_from_stats(21, √420, 1000, 20, √400, 1000, equal_var=False) (SciPy 1.17).
    const p = result.variantResults[1]?.metricStats.revenue?.p_value ?? assert.fail('p');
    assert.ok(Math.abs(p - 0.26958945744032725) < 1e-9 * 0.27);
    assert.equal(result.variantResults[1]?.pValue, p);
  });

  test('the control gets nulls for comparisons and no verdict; capped and uncapped means are reported', () => {
    const withCapping = arms.map((arm) => ({ ...arm, metrics: { ...arm.metrics, revenue: { ...(arm.metrics.revenue as ArmMetricData), uncappedMean: 25 } } }));
    const result = analyseExperiment({ arms: withCapping, controlVariantKey: 'control', metrics, settings: settings() });
    const control = result.variantResults[0]?.metricStats.revenue;
    assert.ok(control !== undefined);
    assert.deepEqual(
      [control.absolute, control.relative, control.adjusted_p_value, control.cuped, 'verdict' in control],
      [null, null, null, null, false],
    );
    assert.equal(control.capped_mean, 20);
    assert.equal(control.uncapped_mean, 25);
    const treatment = result.variantResults[1]?.metricStats.revenue;
    assert.equal(treatment?.capped_mean, 21);
    assert.equal(treatment?.uncapped_mean, 25);
    assert.equal(treatment?.absolute?.estimate, 1);
    assert.equal(treatment?.relative?.estimate, 0.05);
  });

  test('corrections within families, adjusted intervals at α\' = α·p/p_adj, verdicts', () => {
    const draw = normals(7);
    const sample = (n: number, mean: number): number[][] => Array.from({ length: n }, () => [draw(mean, 2)]);
    const shifts = [0, 0.05, 1.2, -1.2];
    const keys = ['a', 'b', 'c'];
    const many: AnalysisArm[] = shifts.map((shift, i) => ({
      variantKey: `v${i}`, participants: 60, plannedWeight: 1,
      metrics: Object.fromEntries(keys.map((key, k) => [key, fromRows(sample(60, 10 + shift * (k === 2 ? 0 : 1)))])),
    }));
    const ms: ExperimentMetric[] = keys.map((key) => eventMetric(key, key === 'b' ? { direction: 'decrease' } : {}));
    const raw = analyseExperiment({ arms: many, controlVariantKey: 'v0', metrics: ms, settings: settings() });
    for (const family of ['all', 'per_metric', 'per_variant'] as const) {
      for (const correction of ['bonferroni', 'holm', 'benjamini_hochberg'] as const) {
        const result = analyseExperiment({ arms: many, controlVariantKey: 'v0', metrics: ms, settings: settings({ correction, correctionFamily: family }) });
        // The families' members, by (variant, metric) index; every lead test is computable here.
        const groups = new Map<string, Array<[number, string]>>();
        for (let v = 1; v < shifts.length; v++) {
          for (const key of keys) {
            const group = family === 'all' ? 'all' : family === 'per_metric' ? key : `${v}`;
            groups.set(group, [...(groups.get(group) ?? []), [v, key]]);
          }
        }
        for (const members of groups.values()) {
          const rawP = members.map(([v, key]) => raw.variantResults[v]?.metricStats[key]?.relative?.p_value as number);
          const expected = adjustPValues(rawP, correction);
          members.forEach(([v, key], i) => {
            const stats = result.variantResults[v]?.metricStats[key];
            assert.ok(stats?.relative && stats.adjusted_p_value !== undefined && stats.adjusted_p_value !== null);
            assert.equal(stats.adjusted_p_value, expected[i], `${family} ${correction} v${v} ${key}`);
            assert.equal(stats.relative.p_value, rawP[i], 'the effect keeps its raw p-value');
            // The relative interval excludes 0 exactly when the adjusted p-value is below α.
            const excludes = (stats.relative.ci_low as number) > 0 || (stats.relative.ci_high as number) < 0;
            assert.equal(excludes, stats.adjusted_p_value < 0.05, `${family} ${correction} v${v} ${key} interval`);
            const metric = ms.find((m) => m.key === key) as ExperimentMetric;
            const lead = stats.relative.estimate;
            const expectedVerdict = stats.adjusted_p_value < 0.05 ? ((lead > 0) === (metric.direction === 'increase') ? 'better' : 'worse') : 'inconclusive';
            assert.equal(stats.verdict, expectedVerdict);
          });
        }
        if (correction === 'bonferroni' && family === 'all') {
          // Bonferroni over 9 tests: the intervals are the level-α/9 intervals.
          const comparison = compareMetric(ms[0] as ExperimentMetric, many[0]?.metrics.a, many[2]?.metrics.a, settings());
          const at = comparisonEffects(comparison, 0.05 / 9);
          const stats = result.variantResults[2]?.metricStats.a;
          assert.ok(stats?.absolute && at.absolute);
          assert.ok(Math.abs((stats.absolute.ci_low as number) - (at.absolute.ci_low as number)) < 1e-12);
          assert.ok(Math.abs((stats.relative?.ci_high as number) - (at.relative?.ci_high as number)) < 1e-12);
        }
      }
    }
    // Fieller's interval at α' agrees with the adjusted p-value as well (its p-value is the absolute one).
    const fieller = analyseExperiment({ arms: many, controlVariantKey: 'v0', metrics: ms, settings: settings({ correction: 'holm', relativeInterval: 'fieller' }) });
    let significant = 0;
    for (const variant of fieller.variantResults.slice(1)) {
      for (const key of keys) {
        const stats = variant.metricStats[key];
        assert.ok(stats?.relative && stats.absolute && typeof stats.adjusted_p_value === 'number');
        assert.equal(stats.relative.p_value, stats.absolute.p_value);
        const excludes = (stats.relative.ci_low as number) > 0 || (stats.relative.ci_high as number) < 0;
        assert.equal(excludes, stats.adjusted_p_value < 0.05, `fieller ${variant.variantKey} ${key}`);
        if (excludes) significant++;
      }
    }
    assert.ok(significant > 0 && significant < 9);
    // The data make every verdict appear: v2 up on a (increase: better) and b (decrease: worse), v3 the reverse.
    const verdicts = new Set(raw.variantResults.slice(1).flatMap((v) => keys.map((key) => v.metricStats[key]?.verdict)));
    assert.deepEqual([...verdicts].sort(), ['better', 'inconclusive', 'worse']);
  });

  test('not_enough_data when the lead test is not computable; pValuePresent follows the first metric', () => {
    const tiny: AnalysisArm[] = [
      { variantKey: 'c', participants: 1, plannedWeight: 1, metrics: { m: fromRows([[3]]) } },
      { variantKey: 't', participants: 10, plannedWeight: 1, metrics: { m: fromRows([[1], [2], [3]]) } },
    ];
    const result = analyseExperiment({ arms: tiny, controlVariantKey: 'c', metrics: [eventMetric('m')], settings: settings({ correction: 'holm' }) });
    const stats = result.variantResults[1]?.metricStats.m;
    assert.deepEqual([stats?.verdict, stats?.absolute, stats?.adjusted_p_value], ['not_enough_data', null, null]);
    assert.equal(result.variantResults[1]?.pValuePresent, false);
    // `mean` aggregation: n is the participants with events (3 here), not the arm's 10.
    assert.equal(stats?.mean, 2);
    assert.equal(stats?.variance, 1);
  });

  test('a ratio metric reports R and σ²_R as mean and variance', () => {
    // Control rows (1,1), (2,2), (6,3): R = 1.5, σ²_R = 0.4375 (effects.test.ts).
    const ratio: AnalysisArm[] = [
      { variantKey: 'c', participants: 3, plannedWeight: 1, metrics: { rps: fromRows([[1, 1], [2, 2], [6, 3]]) } },
      { variantKey: 't', participants: 3, plannedWeight: 1, metrics: { rps: fromRows([[2, 1], [4, 2], [5, 2]]) } },
    ];
    const result = analyseExperiment({ arms: ratio, controlVariantKey: 'c', metrics: [ratioMetric('rps')], settings: settings() });
    const control = result.variantResults[0]?.metricStats.rps;
    assert.equal(control?.mean, 1.5);
    assert.ok(Math.abs((control?.variance ?? 0) - 0.4375) < 1e-15);
    assert.equal(result.variantResults[0]?.metricValues.rps, 1.5);
    // Treatment R = 11/5 = 2.2; lift (2.2 − 1.5)/1.5.
    assert.ok(Math.abs((result.variantResults[1]?.metricStats.rps?.lift ?? 0) - 0.7 / 1.5) < 1e-15);
  });

  test('balance checks are Bonferroni-corrected over every check of the experiment', () => {
    const draw = normals(11);
    const rows = (n: number, shift: number): number[][] => Array.from({ length: n }, () => {
      const x = draw(10, 3);
      return [x + draw(shift, 1), x];
    });
    const cupedArms: AnalysisArm[] = ['c', 't1', 't2'].map((key, i) => ({
      variantKey: key, participants: 40, plannedWeight: 1, metrics: { m1: fromRows(rows(40, i * 0.3)), m2: fromRows(rows(40, 0)) },
    }));
    const ms = [eventMetric('m1', { cuped: { lookbackMs: 1 } }), eventMetric('m2', { cuped: { lookbackMs: 1 } })];
    const result = analyseExperiment({ arms: cupedArms, controlVariantKey: 'c', metrics: ms, settings: settings() });
    for (const [v, key] of [[1, 'm1'], [2, 'm2']] as const) {
      const comparison = compareMetric(ms[key === 'm1' ? 0 : 1] as ExperimentMetric, cupedArms[0]?.metrics[key], cupedArms[v]?.metrics[key], settings());
      const stats = result.variantResults[v]?.metricStats[key];
      assert.ok(stats?.cuped && comparison.balancePValue !== null);
      assert.equal(stats.cuped.balance_p_value, Math.min(1, 4 * comparison.balancePValue));
      assert.ok(stats.cuped.variance_reduction > 0.5, 'a strong covariate removes most of the variance');
      assert.equal(stats.adjusted_p_value, leadPValue(comparison), 'no correction: adjusted = raw');
    }
  });

  test('SRM warning and an unknown control', () => {
    const skewed: AnalysisArm[] = [
      { variantKey: 'c', participants: 600, plannedWeight: 1, metrics: {} },
      { variantKey: 't', participants: 400, plannedWeight: 1, metrics: {} },
    ];
    const result = analyseExperiment({ arms: skewed, controlVariantKey: 'c', metrics: [eventMetric('m')], settings: settings() });
    assert.equal(result.srmWarning, true);
    assert.equal(result.variantResults[1]?.metricStats.m?.verdict, 'not_enough_data');
    assert.throws(() => analyseExperiment({ arms: skewed, controlVariantKey: 'x', metrics: [], settings: settings() }), RangeError);
    assert.deepEqual(analyseExperiment({ arms: [], controlVariantKey: 'c', metrics: [eventMetric('m')], settings: settings() }), { variantResults: [], srmPValue: null, srmWarning: false, sequentialSrmPValue: null, running: { sequential: {}, guardrails: {}, srm: null } });
  });
});
