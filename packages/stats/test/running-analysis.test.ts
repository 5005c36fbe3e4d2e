/**
 * analyseExperiment across several looks (issue 39; docs/statistics.md §9–§13): the running
 * minimum p-value and the interval intersection carried from look to look, corrections on the
 * always-valid p-values, the hybrid, the Bayesian engine's verdict, guardrails and the sequential
 * SRM. Expected values are derived by hand from the documented formulas, written out below.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AnalysisSettings, ArmMetricData, EventMetric } from '@switchyard/core';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import { analyseExperiment, runningSettingsKey } from '../src/index.ts';
import type { AnalysisArm } from '../src/index.ts';

const metric = (key: string, extra: Partial<EventMetric> = {}): EventMetric => ({
  kind: 'event', key, eventKey: key, aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null, ...extra,
});
const summary = (n: number, mean: number, variance: number): ArmMetricData => ({ moments: { n, means: [mean], comoments: [[variance * (n - 1)]] }, uncappedMean: mean });
const settings = (extra: Partial<AnalysisSettings> = {}): AnalysisSettings => ({ ...DEFAULT_ANALYSIS, ...extra });
const close = (actual: number | null | undefined, expected: number, tolerance = 1e-9, label = '') => {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)), `${label}: ${actual} vs ${expected}`);
};

/** Relative effect by the delta method (§2): r = (ȳT − ȳC)/|ȳC|, V = s²T/(nT ȳC²) + ȳT² s²C/(nC ȳC⁴). */
function relative(c: [number, number, number], t: [number, number, number]): { r: number; v: number } {
  const [nC, mC, sC] = c;
  const [nT, mT, sT] = t;
  return { r: (mT - mC) / Math.abs(mC), v: sT / (nT * mC * mC) + (mT * mT * sC) / (nC * mC ** 4) };
}
/** §9 two-sided: ρ² = (l + ln(l + 1))/N*, l = −2 ln α; r = nρ²; e = exp(r z²/(2(1 + r)))/√(1 + r); b² = ((1 + r)/r)(ln(1 + r) − 2 ln α). */
function twoSided(estimate: number, variance: number, n: number, alpha: number, tuningN: number) {
  const l = -2 * Math.log(alpha);
  const r = (n * (l + Math.log(l + 1))) / tuningN;
  const z = estimate / Math.sqrt(variance);
  const logE = (r * z * z) / (2 * (1 + r)) - 0.5 * Math.log(1 + r);
  const b = Math.sqrt(((1 + r) / r) * (Math.log(1 + r) - 2 * Math.log(alpha)));
  return { p: Math.min(1, Math.exp(-logE)), low: estimate - b * Math.sqrt(variance), high: estimate + b * Math.sqrt(variance) };
}

const arms = (participants: [number, number], c: [number, number, number], t: [number, number, number], extra: Record<string, [ArmMetricData, ArmMetricData]> = {}): AnalysisArm[] => [
  { variantKey: 'control', participants: participants[0], plannedWeight: 1, metrics: { revenue: summary(...c), ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v[0]])) } },
  { variantKey: 'treatment', participants: participants[1], plannedWeight: 1, metrics: { revenue: summary(...t), ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v[1]])) } },
];

// Look 1: a large lift (significant); look 2: more data, a small lift (not significant by itself).
const LOOK1 = { c: [1000, 10, 100], t: [1000, 12, 100] } as const;
const LOOK2 = { c: [2000, 10, 100], t: [2000, 10.3, 100] } as const;
const SEQUENTIAL = settings({ sequential: { tuningN: 5000 } });

describe('sequential testing across looks', () => {
  test('the running minimum p-value and the interval intersection are carried; the verdict is not un-declared', () => {
    const e1 = relative([...LOOK1.c], [...LOOK1.t]);
    const e2 = relative([...LOOK2.c], [...LOOK2.t]);
    const s1 = twoSided(e1.r, e1.v, 2000, 0.05, 5000);
    const s2 = twoSided(e2.r, e2.v, 4000, 0.05, 5000);
    // By hand: r₁ = 0.2, V₁ = 0.001 + 0.00144; r₂ = 0.03, V₂ = 0.0005 + 0.00053045.
    close(e1.v, 0.00244, 1e-12, 'V1');
    close(e2.v, 0.00103045, 1e-12, 'V2');
    assert.ok(s1.p < 0.05 && s2.p === 1, `look 1 alone rejects (${s1.p}), look 2 alone does not (${s2.p})`);

    const first = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: SEQUENTIAL });
    const at1 = first.variantResults[1]!.metricStats.revenue!;
    close(at1.sequential?.p_value, s1.p, 1e-9, 'p1');
    close(at1.sequential?.ci_low, s1.low, 1e-9, 'low1');
    close(at1.sequential?.ci_high, s1.high, 1e-9, 'high1');
    close(at1.sequential?.estimate, 0.2, 1e-12, 'estimate1');
    assert.equal(at1.verdict, 'better');
    assert.deepEqual(first.running.sequential.treatment?.revenue?.looks, 1);

    const second = analyseExperiment({
      arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: SEQUENTIAL, previous: first.running,
    });
    const at2 = second.variantResults[1]!.metricStats.revenue!;
    // The running minimum keeps look 1's p; the interval is [max(lows), min(highs)]; the estimate is look 2's.
    close(at2.sequential?.p_value, Math.min(s1.p, s2.p), 1e-9, 'p2');
    close(at2.sequential?.ci_low, Math.max(s1.low, s2.low), 1e-9, 'low2');
    close(at2.sequential?.ci_high, Math.min(s1.high, s2.high), 1e-9, 'high2');
    close(at2.sequential?.estimate, 0.03, 1e-9, 'estimate2');
    assert.equal(at2.verdict, 'better', 'a later look never un-declares');
    // The fixed-horizon test at look 2 alone is not significant, and its fields are unchanged.
    assert.ok((at2.relative?.p_value ?? 0) > 0.05);
    assert.equal(second.running.sequential.treatment?.revenue?.looks, 2);
    assert.equal(second.running.sequential.treatment?.revenue?.disjoint, false);

    // Without the carried state, look 2 is inconclusive: the state is what keeps the declaration.
    const fresh = analyseExperiment({ arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: SEQUENTIAL });
    assert.equal(fresh.variantResults[1]!.metricStats.revenue!.verdict, 'inconclusive');
    // Without sequential, no sequential field, no state.
    const fixed = analyseExperiment({ arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings() });
    assert.equal('sequential' in fixed.variantResults[1]!.metricStats.revenue!, false);
    assert.deepEqual(fixed.running.sequential, {});
  });

  test('corrections apply to the always-valid p-values (Bonferroni over 2 metrics: 2p)', () => {
    const e1 = relative([...LOOK1.c], [...LOOK1.t]);
    const s1 = twoSided(e1.r, e1.v, 2000, 0.05, 5000);
    const out = analyseExperiment({
      arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t], { other: [summary(1000, 10, 100), summary(1000, 10, 100)] }),
      controlVariantKey: 'control', metrics: [metric('revenue'), metric('other')], settings: { ...SEQUENTIAL, correction: 'bonferroni' },
    });
    const stats = out.variantResults[1]!.metricStats;
    close(stats.revenue?.sequential?.adjusted_p_value, Math.min(1, 2 * s1.p), 1e-9, 'adjusted');
    // The other metric: Δ = 0, z = 0, e = 1/√(1 + r) < 1, p = 1, adjusted 1.
    assert.equal(stats.other?.sequential?.p_value, 1);
    assert.equal(stats.other?.sequential?.adjusted_p_value, 1);
  });

  test('hybrid: 2·p_seq (sequential at α/2) while running; at the end min(1, 2·min(p_seq, p_fixed)) with the intersected interval', () => {
    const e1 = relative([...LOOK1.c], [...LOOK1.t]);
    // The mixture is tuned at α/2 (ρ² depends on α) and its interval is at α/2.
    const s = twoSided(e1.r, e1.v, 2000, 0.025, 5000);
    const hybrid = { ...SEQUENTIAL, hybrid: true };
    const running = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: hybrid });
    const during = running.variantResults[1]!.metricStats.revenue!.sequential!;
    close(during.p_value, Math.min(1, 2 * s.p), 1e-9, 'hybrid p while running');
    close(during.ci_low, s.low, 1e-9, 'hybrid low while running');
    const ended = analyseExperiment({
      arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: hybrid, atEnd: true,
    });
    const end = ended.variantResults[1]!.metricStats.revenue!;
    // The fixed part: the relative effect's own Welch test; its p does not depend on α.
    const pFixed = end.relative!.p_value as number;
    close(end.sequential?.p_value, Math.min(1, 2 * Math.min(s.p, pFixed)), 1e-9, 'hybrid p at the end');
    assert.ok((end.sequential?.ci_high as number) <= s.high + 1e-12 && (end.sequential?.ci_low as number) >= s.low - 1e-12, 'the intersection is inside the sequential interval');
  });

  test('a change of the running settings changes the key (the states restart); the correction and engine do not', () => {
    const metrics = [metric('revenue')];
    const key = runningSettingsKey(metrics, SEQUENTIAL);
    assert.equal(runningSettingsKey(metrics, { ...SEQUENTIAL, correction: 'holm', engine: 'bayesian' }), key);
    assert.notEqual(runningSettingsKey(metrics, { ...SEQUENTIAL, alpha: 0.1 }), key);
    assert.notEqual(runningSettingsKey(metrics, { ...SEQUENTIAL, sequential: { tuningN: 10_000 } }), key);
    assert.notEqual(runningSettingsKey([metric('revenue', { guardrail: { margin: 0.01, marginKind: 'relative' } })], SEQUENTIAL), key);
  });
});

describe('Bayesian engine in results', () => {
  test('chance to win, risks and credible interval of the relative effect (flat prior); the verdict reads them', () => {
    const e1 = relative([...LOOK1.c], [...LOOK1.t]);
    const out = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings({ engine: 'bayesian' }) });
    const stats = out.variantResults[1]!.metricStats.revenue!;
    const sd = Math.sqrt(e1.v);
    // Flat prior: posterior N(r, V); interval r ± z_{0.975}·sd; risk_control − risk_treatment = μ (§12).
    close(stats.bayesian?.ci_low, 0.2 - 1.959963984540054 * sd, 1e-9, 'low');
    close(stats.bayesian?.ci_high, 0.2 + 1.959963984540054 * sd, 1e-9, 'high');
    close((stats.bayesian?.risk_control ?? 0) - (stats.bayesian?.risk_treatment ?? 0), 0.2, 1e-9, 'risk difference');
    // z = 0.2/0.0494 = 4.05: Φ(z) > 0.9999.
    assert.ok((stats.bayesian?.chance_to_win ?? 0) > 0.9999);
    assert.equal(stats.verdict, 'better');
    // A decrease metric: the same data lose.
    const lower = analyseExperiment({
      arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue', { direction: 'decrease' })], settings: settings({ engine: 'bayesian' }),
    }).variantResults[1]!.metricStats.revenue!;
    assert.ok((lower.bayesian?.chance_to_win ?? 1) < 0.0001);
    assert.equal(lower.verdict, 'worse');
    // A small lift: inconclusive under the Bayesian engine.
    const small = analyseExperiment({ arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings({ engine: 'bayesian' }) });
    assert.equal(small.variantResults[1]!.metricStats.revenue!.verdict, 'inconclusive');
    // The frequentist engine reports no bayesian field.
    assert.equal('bayesian' in analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings() }).variantResults[1]!.metricStats.revenue!, false);
  });
});

describe('guardrails in results', () => {
  const guarded = metric('revenue', { guardrail: { margin: 0.05, marginKind: 'relative' } });
  test('fixed horizon: a relative harm of 20 % beyond a 5 % margin fails; no harm is ok', () => {
    // Control 12, treatment 10: r = −1/6, a harm of 16.7 % against a 5 % margin.
    const out = analyseExperiment({ arms: arms([1000, 1000], [1000, 12, 100], [1000, 10, 100]), controlVariantKey: 'control', metrics: [guarded], settings: settings() });
    const stats = out.variantResults[1]!.metricStats.revenue!;
    assert.equal(stats.guardrail_status, 'failing');
    close(stats.guardrail?.estimate, -1 / 6, 1e-12, 'estimate');
    const fine = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [guarded], settings: settings() });
    assert.equal(fine.variantResults[1]!.metricStats.revenue!.guardrail_status, 'ok');
    assert.equal('guardrail_status' in fine.variantResults[1]!.metricStats.revenue!, true);
    // Not a guardrail: no status.
    const plain = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings() });
    assert.equal('guardrail_status' in plain.variantResults[1]!.metricStats.revenue!, false);
  });

  test('sequential: a guardrail that failed stays failing at a later harmless look (running minimum of the harm p)', () => {
    const first = analyseExperiment({ arms: arms([1000, 1000], [1000, 12, 100], [1000, 10, 100]), controlVariantKey: 'control', metrics: [guarded], settings: SEQUENTIAL });
    assert.equal(first.variantResults[1]!.metricStats.revenue!.guardrail_status, 'failing');
    const harmP = first.running.guardrails.treatment!.revenue!.harm_p_value;
    const later = analyseExperiment({
      arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [guarded], settings: SEQUENTIAL, previous: first.running,
    });
    const stats = later.variantResults[1]!.metricStats.revenue!;
    assert.equal(stats.guardrail_status, 'failing');
    assert.equal(stats.guardrail?.harm_p_value, harmP);
    close(stats.guardrail?.estimate, 0.03, 1e-9, 'the latest estimate');
    const fresh = analyseExperiment({ arms: arms([2000, 2000], [...LOOK2.c], [...LOOK2.t]), controlVariantKey: 'control', metrics: [guarded], settings: SEQUENTIAL });
    assert.equal(fresh.variantResults[1]!.metricStats.revenue!.guardrail_status, 'ok');
  });
});

describe('sequential SRM', () => {
  /** Σ_{k=from}^{to} ln k. */
  const lnRange = (from: number, to: number) => {
    let sum = 0;
    for (let k = from; k <= to; k++) sum += Math.log(k);
    return sum;
  };
  test('the Dirichlet–multinomial e-value (κ = 100, even split) and its running maximum', () => {
    // §11 with p₀ = ½, κp₀ = 50: ln e = Σᵢ [ln Γ(50 + xᵢ) − ln Γ(50) − xᵢ ln ½] − [ln Γ(100 + N) − ln Γ(100)],
    // and ln Γ(a + x) − ln Γ(a) = Σ_{k=a}^{a+x−1} ln k for integers.
    const logE = lnRange(50, 109) + lnRange(50, 69) + 80 * Math.LN2 - lnRange(100, 179);
    const first = analyseExperiment({ arms: arms([60, 20], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings() });
    close(first.sequentialSrmPValue, Math.min(1, Math.exp(-logE)), 1e-9, 'p at look 1');
    assert.ok((first.sequentialSrmPValue ?? 1) < 0.05);
    // A later well-split look: its own e is below 1, the running maximum keeps look 1's.
    const later = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings(), previous: first.running });
    close(later.sequentialSrmPValue, Math.exp(-logE), 1e-9, 'p carried');
    assert.equal(later.running.srm?.looks, 2);
    const alone = analyseExperiment({ arms: arms([1000, 1000], [...LOOK1.c], [...LOOK1.t]), controlVariantKey: 'control', metrics: [metric('revenue')], settings: settings() });
    assert.equal(alone.sequentialSrmPValue, 1);
  });
});
