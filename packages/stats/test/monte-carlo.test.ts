/**
 * Seeded Monte Carlo checks of the engine's error rates (docs/statistics.md §1–§3, §6): interval
 * coverage at 95 % and the type-I error of the corrections under the null. Each rate is estimated
 * from N simulated experiments and must lie within 4 binomial standard errors √(p(1 − p)/N) of its
 * target (a false alarm about once in 16,000 runs for a correct engine — and the seeds are fixed,
 * so a pass is reproducible).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AnalysisSettings, EventMetric, MultipleTestingCorrection } from '@switchyard/core';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import { analyseExperiment, compareMetric, comparisonEffects, jointMomentsFromRows } from '../src/index.ts';
import type { AnalysisArm, EffectDetail } from '../src/index.ts';
import { seededNormals } from './support/seeded-normals.ts';

const metric: EventMetric = {
  kind: 'event', key: 'm', eventKey: 'm', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
};

function arm(draw: (mean: number, sd: number) => number, n: number, mean: number, sd: number) {
  const moments = jointMomentsFromRows(Array.from({ length: n }, () => [draw(mean, sd)]), 1);
  return { moments, uncappedMean: moments.means[0] ?? 0 };
}

const tolerance = (p: number, trials: number): number => 4 * Math.sqrt((p * (1 - p)) / trials);
const covers = (effect: EffectDetail | null, truth: number): boolean =>
  effect !== null && (effect.ci_low === null || effect.ci_low <= truth) && (effect.ci_high === null || truth <= effect.ci_high);

describe('Monte Carlo: 95 % interval coverage', () => {
  test('absolute (Welch), relative (delta) and relative (Fieller) each cover the truth 95 % ± 4 SE of 2,000 experiments', (t) => {
    // Control N(10, 4²) × 40, treatment N(11, 5²) × 50: Δ = 1, relative 0.1; unequal variances and n.
    const trials = 2000;
    const draw = seededNormals(20261127);
    let absolute = 0;
    let delta = 0;
    let fieller = 0;
    for (let i = 0; i < trials; i++) {
      const control = arm(draw, 40, 10, 4);
      const treatment = arm(draw, 50, 11, 5);
      const d = comparisonEffects(compareMetric(metric, control, treatment, { alpha: 0.05, sides: 'two', relativeInterval: 'delta' }));
      const f = comparisonEffects(compareMetric(metric, control, treatment, { alpha: 0.05, sides: 'two', relativeInterval: 'fieller' }));
      if (covers(d.absolute, 1)) absolute++;
      if (covers(d.relative, 0.1)) delta++;
      if (covers(f.relative, 0.1)) fieller++;
    }
    const margin = tolerance(0.95, trials);
    t.diagnostic(`coverage: absolute ${absolute / trials}, delta ${delta / trials}, fieller ${fieller / trials} (± ${margin.toFixed(4)})`);
    for (const [name, hits] of [['absolute', absolute], ['delta', delta], ['fieller', fieller]] as const) {
      const rate = hits / trials;
      assert.ok(Math.abs(rate - 0.95) <= margin, `${name} coverage ${rate}, expected 0.95 ± ${margin.toFixed(4)}`);
    }
  });

  test('one-sided intervals cover 95 % too (lower bound for increase)', (t) => {
    const trials = 1000;
    const draw = seededNormals(42);
    let hits = 0;
    for (let i = 0; i < trials; i++) {
      const effects = comparisonEffects(compareMetric(metric, arm(draw, 30, 5, 2), arm(draw, 30, 5.5, 3), { alpha: 0.05, sides: 'one', relativeInterval: 'delta' }));
      if (covers(effects.absolute, 0.5)) hits++;
    }
    t.diagnostic(`one-sided coverage ${hits / trials}`);
    assert.ok(Math.abs(hits / trials - 0.95) <= tolerance(0.95, trials), `coverage ${hits / trials}`);
  });
});

describe('Monte Carlo: type-I error of the corrections under the null', () => {
  test('Bonferroni and Holm keep the family-wise error ≤ α, BH the FDR (= FWER when every null is true); uncorrected does not', (t) => {
    // 1 control and 4 treatments, 1 metric, all N(10, 3²) × 30: every hypothesis is null, so any
    // rejection is a false one and FDR = FWER = P(at least one adjusted p < α).
    const trials = 1500;
    const draw = seededNormals(7);
    const settings: AnalysisSettings = { ...DEFAULT_ANALYSIS, correctionFamily: 'all' };
    const methods: MultipleTestingCorrection[] = ['none', 'bonferroni', 'holm', 'benjamini_hochberg'];
    const familyErrors = new Map(methods.map((method) => [method, 0]));
    for (let i = 0; i < trials; i++) {
      const arms: AnalysisArm[] = Array.from({ length: 5 }, (_, v) => ({
        variantKey: `v${v}`, participants: 30, plannedWeight: 1, metrics: { m: arm(draw, 30, 10, 3) },
      }));
      for (const correction of methods) {
        const result = analyseExperiment({ arms, controlVariantKey: 'v0', metrics: [metric], settings: { ...settings, correction } });
        const anyRejected = result.variantResults.some((v) => (v.metricStats.m?.adjusted_p_value ?? 1) < settings.alpha);
        if (anyRejected) familyErrors.set(correction, (familyErrors.get(correction) ?? 0) + 1);
      }
    }
    const margin = tolerance(0.05, trials);
    t.diagnostic(`family-wise error: ${methods.map((m) => `${m} ${(familyErrors.get(m) ?? 0) / trials}`).join(', ')} (limit 0.05 + ${margin.toFixed(4)})`);
    for (const method of ['bonferroni', 'holm', 'benjamini_hochberg'] as const) {
      const rate = (familyErrors.get(method) ?? 0) / trials;
      assert.ok(rate <= 0.05 + margin, `${method}: family-wise error ${rate} > 0.05 + ${margin.toFixed(4)}`);
    }
    // The check can fail: without a correction four tests reject far more often than α.
    const uncorrected = (familyErrors.get('none') ?? 0) / trials;
    assert.ok(uncorrected > 0.05 + margin, `uncorrected family-wise error ${uncorrected}`);
  });

  test('Benjamini–Hochberg keeps the false discovery rate ≤ α with a mix of null and real effects', (t) => {
    // 1 control and 6 treatments over 1 metric, N(10, 3²) × 40; treatments 1–3 null, 4–6 shifted by
    // +2.5. FDR = E[V/max(R, 1)] (V false rejections among R), estimated by its sample mean with a
    // margin of 4 sample standard errors.
    const trials = 1000;
    const draw = seededNormals(99);
    const settings: AnalysisSettings = { ...DEFAULT_ANALYSIS, correction: 'benjamini_hochberg', correctionFamily: 'all' };
    const proportions: number[] = [];
    let discoveries = 0;
    for (let i = 0; i < trials; i++) {
      const arms: AnalysisArm[] = Array.from({ length: 7 }, (_, v) => ({
        variantKey: `v${v}`, participants: 40, plannedWeight: 1, metrics: { m: arm(draw, 40, v >= 4 ? 12.5 : 10, 3) },
      }));
      const result = analyseExperiment({ arms, controlVariantKey: 'v0', metrics: [metric], settings });
      const rejected = result.variantResults.map((v, index) => ({ index, rejected: (v.metricStats.m?.adjusted_p_value ?? 1) < 0.05 })).filter((r) => r.rejected);
      const falseOnes = rejected.filter((r) => r.index >= 1 && r.index <= 3).length;
      discoveries += rejected.length;
      proportions.push(falseOnes / Math.max(rejected.length, 1));
    }
    const mean = proportions.reduce((a, b) => a + b, 0) / trials;
    const sd = Math.sqrt(proportions.reduce((a, b) => a + (b - mean) ** 2, 0) / (trials - 1));
    t.diagnostic(`FDR ${mean} (sd ${sd.toFixed(3)}), ${discoveries / trials} discoveries per experiment`);
    assert.ok(mean <= 0.05 + (4 * sd) / Math.sqrt(trials), `FDR ${mean}`);
    assert.ok(discoveries / trials > 2, 'the real effects are found');
  });
});
