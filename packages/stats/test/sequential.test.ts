/**
 * Issue 39's statistics by hand derivation and by properties that must hold whatever the numbers
 * (docs/statistics.md §9–§14). The reference values are in sequential-fixtures.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventMetric } from '@switchyard/core';
import {
  compareMetric, jointMomentsFromRows,
  advanceGuardrailState, advanceSequentialState, advanceSrmState, alwaysValidInference, bayesianEffect,
  boundaryInStandardErrors, durationDays, guardrailFixed, guardrailStatus, hybridAlphas, hybridInference, mixingRho2,
  normalUpperQuantile, powerAt, sampleSizePerArm, srmLogEValue,
} from '../src/index.ts';
import type { AlwaysValidResult, GuardrailResult, PowerSettings, SequentialRunningState } from '../src/index.ts';

const near = (actual: number, expected: number, tolerance: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} vs ${expected}`);

describe('always-valid inference (§9)', () => {
  test('ρ² = (−2 ln a + ln(1 − 2 ln a))/N*, a = α two-sided and 2α one-sided', () => {
    // −2 ln 0.05 = 5.991464547107979; ln(6.991464547107979) = 1.944691...; one-sided: −2 ln 0.1 = 4.605170185988091.
    near(mixingRho2(0.05, 5000, 'two'), (5.991464547107979 + Math.log(6.991464547107979)) / 5000, 1e-15, 'two-sided');
    near(mixingRho2(0.05, 10000, 'one'), (4.605170185988091 + Math.log(5.605170185988091)) / 10000, 1e-15, 'one-sided');
    assert.throws(() => mixingRho2(0.5, 5000, 'one'), RangeError);
    assert.throws(() => mixingRho2(0.05, 0, 'two'), RangeError);
  });

  test("N* = 10,000 is Eppo's published boundary, transcribed from its documentation", () => {
    // docs.geteppo.com "Statistical nitty-gritty": B = (1/√t)·√((t + ρ)·ln((t + ρ)/(ρ(1 − c)²))),
    // ρ = N_tune/(ln ln(e/(1 − c)²) − 2 ln(1 − c)), N_tune = 10,000, t = n_C + n_T.
    for (const alpha of [0.05, 0.1, 0.01]) {
      const rhoEppo = 10000 / (Math.log(Math.log(Math.E / alpha ** 2)) - 2 * Math.log(alpha));
      for (const t of [100, 2000, 10000, 1e6]) {
        const eppo = Math.sqrt((t + rhoEppo) * Math.log((t + rhoEppo) / (rhoEppo * alpha ** 2))) / Math.sqrt(t);
        const ours = boundaryInStandardErrors(alpha, t * mixingRho2(alpha, 10000, 'two'), 'two');
        near(ours, eppo, 1e-12 * eppo, `α ${alpha}, t ${t}`);
      }
    }
  });

  test('the tuning makes the boundary (in standard errors) nearly smallest at n = N*', () => {
    // The ρ of Waudby-Smith et al. approximately minimises b at the planned sample: scanning r = N*·ρ²
    // over a wide grid, nothing does more than 1 % better.
    for (const [alpha, sides] of [[0.05, 'two'], [0.1, 'two'], [0.05, 'one']] as const) {
      const tuned = boundaryInStandardErrors(alpha, 5000 * mixingRho2(alpha, 5000, sides), sides);
      let best = Number.POSITIVE_INFINITY;
      for (let r = 0.5; r < 200; r *= 1.01) best = Math.min(best, boundaryInStandardErrors(alpha, r, sides));
      assert.ok(tuned <= best * 1.01 && tuned >= best, `${sides} ${alpha}: tuned ${tuned}, best ${best}`);
    }
  });

  test('the sequence is never narrower than the fixed-horizon z interval (it is also valid at one look)', () => {
    for (let n = 1; n <= 1e9; n *= 3) {
      const r = n * mixingRho2(0.05, 5000, 'two');
      assert.ok(boundaryInStandardErrors(0.05, r, 'two') >= normalUpperQuantile(0.025), `two-sided n ${n}`);
      const r1 = n * mixingRho2(0.05, 5000, 'one');
      assert.ok(boundaryInStandardErrors(0.05, r1, 'one') >= normalUpperQuantile(0.05), `one-sided n ${n}`);
    }
  });

  test('the interval excludes the null exactly when p < α; at the boundary p = α', () => {
    const settings = { alpha: 0.05, tuningN: 5000, sides: 'two' as const, direction: 'increase' as const };
    const se = 0.1;
    const b = boundaryInStandardErrors(0.05, 4000 * mixingRho2(0.05, 5000, 'two'), 'two');
    const atBoundary = alwaysValidInference({ estimate: b * se, variance: se * se, n: 4000 }, settings);
    near(atBoundary?.p_value ?? 0, 0.05, 1e-12, 'p at the boundary');
    for (const estimate of [-0.5, -0.3, -0.1, 0, 0.05, 0.2, 0.31, 0.6]) {
      for (const sides of ['two', 'one'] as const) {
        for (const direction of ['increase', 'decrease'] as const) {
          const result = alwaysValidInference({ estimate, variance: se * se, n: 4000 }, { ...settings, sides, direction }) as AlwaysValidResult;
          const excludes = (result.ci_low !== null && result.ci_low > 0) || (result.ci_high !== null && result.ci_high < 0);
          assert.equal(excludes, result.p_value < 0.05, `${estimate} ${sides} ${direction}: p ${result.p_value}, [${result.ci_low}, ${result.ci_high}]`);
        }
      }
    }
  });

  test('nothing to test: null; the one-sided far side is unbounded', () => {
    const settings = { alpha: 0.05, tuningN: 5000, sides: 'two' as const, direction: 'increase' as const };
    assert.equal(alwaysValidInference({ estimate: 1, variance: 0, n: 100 }, settings), null);
    assert.equal(alwaysValidInference({ estimate: 1, variance: 1, n: 0 }, settings), null);
    assert.equal(alwaysValidInference({ estimate: Number.NaN, variance: 1, n: 10 }, settings), null);
    const up = alwaysValidInference({ estimate: 1, variance: 1, n: 10 }, { ...settings, sides: 'one' });
    assert.equal(up?.ci_high, null);
    const down = alwaysValidInference({ estimate: 1, variance: 1, n: 10 }, { ...settings, sides: 'one', direction: 'decrease' });
    assert.equal(down?.ci_low, null);
    assert.equal(down?.p_value, 1, 'an estimate on the wrong side has no evidence');
  });
});

describe('composition with §1–§5: the engine takes any effect as (estimate, se², n)', () => {
  test("a CUPED-adjusted relative effect (cuped.test.ts's hand case: r = 0.8, se² = 0.3425, n = 4)", () => {
    const metric: EventMetric = {
      kind: 'event', key: 'm', eventKey: 'm', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: { lookbackMs: 1 }, guardrail: null,
    };
    const arm = (rows: number[][]) => {
      const moments = jointMomentsFromRows(rows);
      return { moments, uncappedMean: moments.means[0] ?? 0 };
    };
    const relative = compareMetric(metric, arm([[1, 0], [3, 2]]), arm([[4, 1], [6, 3]]), { alpha: 0.05, sides: 'two', relativeInterval: 'delta' }).relative;
    assert.ok(relative !== null);
    const result = alwaysValidInference({ estimate: relative.estimate, variance: relative.se ** 2, n: 4 }, { alpha: 0.05, tuningN: 5000, sides: 'two', direction: 'increase' });
    // r = 4·ρ², b² = ((1 + r)/r)·(ln(1 + r) − 2 ln 0.05).
    const r = 4 * ((5.991464547107979 + Math.log(6.991464547107979)) / 5000);
    const halfWidth = Math.sqrt(((1 + r) / r) * (Math.log1p(r) - 2 * Math.log(0.05))) * Math.sqrt(0.3425);
    near(result?.ci_low ?? 0, 0.8 - halfWidth, 1e-12, 'low');
    near(result?.ci_high ?? 0, 0.8 + halfWidth, 1e-12, 'high');
    // e = exp(r·z²/(2(1 + r)))/√(1 + r) with z² = 0.64/0.3425: barely above 1 with four participants.
    const z2 = 0.64 / 0.3425;
    near(result?.p_value ?? 0, Math.exp(-((r * z2) / (2 * (1 + r)) - 0.5 * Math.log1p(r))), 1e-12, 'p');
    assert.ok((result?.p_value ?? 0) > 0.99);
  });
});

describe('running state across looks (§10)', () => {
  const look = (estimate: number, p: number, low: number | null, high: number | null): AlwaysValidResult =>
    ({ estimate, p_value: p, ci_low: low, ci_high: high, log_e_value: -Math.log(p) });

  test('running minimum p and running intersection; the estimate is the latest', () => {
    let state: SequentialRunningState | null = null;
    state = advanceSequentialState(state, look(0.5, 0.3, -1, 2));
    state = advanceSequentialState(state, look(0.8, 0.02, 0.1, 1.5));
    state = advanceSequentialState(state, look(0.2, 0.5, -0.5, 1.0));
    assert.deepEqual(state, { looks: 3, estimate: 0.2, p_value: 0.02, ci_low: 0.1, ci_high: 1.0, disjoint: false });
  });

  test('a later look cannot un-declare: p stays below α and the interval keeps excluding 0', () => {
    let state = advanceSequentialState(null, look(1, 0.001, 0.5, 1.5));
    state = advanceSequentialState(state, look(0.1, 0.9, -0.8, 1.0));
    assert.equal(state?.p_value, 0.001);
    assert.equal(state?.ci_low, 0.5);
  });

  test('no result leaves the state alone; one-sided (null) bounds intersect as ±∞', () => {
    assert.equal(advanceSequentialState(null, null), null);
    let state = advanceSequentialState(null, look(1, 0.2, 0.1, null));
    assert.deepEqual(advanceSequentialState(state, null), state);
    state = advanceSequentialState(state, look(2, 0.1, 0.4, null));
    assert.equal(state?.ci_low, 0.4);
    assert.equal(state?.ci_high, null);
  });

  test('disjoint intervals: flagged, and the intersection restarts from the look', () => {
    let state = advanceSequentialState(null, look(0.5, 0.01, 0, 1));
    state = advanceSequentialState(state, look(2.5, 0.001, 2, 3));
    assert.deepEqual(state, { looks: 2, estimate: 2.5, p_value: 0.001, ci_low: 2, ci_high: 3, disjoint: true });
    state = advanceSequentialState(state, look(2.2, 0.01, 1.5, 2.6));
    assert.equal(state?.disjoint, true, 'stays flagged');
    assert.equal(state?.ci_high, 2.6);
  });

  test('hybrid: α/2 each; 2·p before the end, 2·min(p) and the intersection at the end', () => {
    assert.deepEqual(hybridAlphas(0.05), { sequential: 0.025, fixed: 0.025 });
    const sequential = { p_value: 0.03, ci_low: -0.1, ci_high: 0.9 };
    assert.deepEqual(hybridInference(sequential, null), { p_value: 0.06, ci_low: -0.1, ci_high: 0.9 });
    assert.deepEqual(hybridInference(sequential, { p_value: 0.01, ci_low: 0.05, ci_high: 1.2 }), { p_value: 0.02, ci_low: 0.05, ci_high: 0.9 });
    assert.equal(hybridInference({ p_value: 0.7, ci_low: null, ci_high: null }, null).p_value, 1, 'capped at 1');
    assert.deepEqual(hybridInference({ p_value: 0.01, ci_low: 2, ci_high: 3 }, { p_value: 0.2, ci_low: -1, ci_high: 1 }),
      { p_value: 0.02, ci_low: -1, ci_high: 1 }, 'disjoint parts: the fixed-horizon interval');
  });
});

describe('sequential SRM (§11)', () => {
  test('the e-value by hand: κ = 2 on a 50/50 plan is the Pólya urn of Beta(1, 1)', () => {
    // First unit: predictive ½ over plan ½ = 1; second to the same arm: (1 + 1)/(2 + 1) over ½ = 4/3.
    near(srmLogEValue([1, 0], [1, 1], 2) as number, 0, 1e-15, 'one unit');
    near(srmLogEValue([2, 0], [1, 1], 2) as number, Math.log(4 / 3), 1e-15, 'two units');
    // One in each arm: 1 · (1/3)/(1/2) = 2/3.
    near(srmLogEValue([1, 1], [1, 1], 2) as number, Math.log(2 / 3), 1e-15, 'split');
    assert.equal(srmLogEValue([0, 0], [1, 1], 2), 0, 'no units: e = 1');
  });

  test('not computable: null; a weight-0 arm with units: certain; caller bugs throw', () => {
    assert.equal(srmLogEValue([10], [1]), null);
    assert.equal(srmLogEValue([10, -1], [1, 1]), null);
    assert.equal(srmLogEValue([10, 3], [1, 0]), Number.POSITIVE_INFINITY);
    assert.throws(() => srmLogEValue([1, 2], [1]), RangeError);
    assert.throws(() => srmLogEValue([1, 2], [1, 1], 0), RangeError);
  });

  test('the running state keeps the largest e: p = min(1, 1/max e)', () => {
    let state = advanceSrmState(null, -2);
    assert.deepEqual(state, { looks: 1, max_log_e_value: -2, p_value: 1 });
    state = advanceSrmState(state, 3);
    state = advanceSrmState(state, 1);
    state = advanceSrmState(state, null);
    assert.deepEqual(state, { looks: 3, max_log_e_value: 3, p_value: Math.exp(-3) });
  });
});

describe('Bayesian engine (§12)', () => {
  const flat = { alpha: 0.05, direction: 'increase' as const, prior: null };
  test('flat prior at 0: chance ½, both risks φ(0)·sd, the z interval', () => {
    const result = bayesianEffect({ estimate: 0, variance: 4 }, flat);
    assert.ok(result !== null);
    near(result.chance_to_win, 0.5, 1e-16, 'chance');
    near(result.risk_control, 2 * 0.3989422804014327, 1e-15, 'risk control');
    near(result.risk_treatment, 2 * 0.3989422804014327, 1e-15, 'risk treatment');
    near(result.ci_high, 2 * 1.959963984540054, 1e-12, 'ci');
  });

  test('a proper prior shrinks: N(0, 1) prior and Δ̂ = 2, V = 1 give posterior N(1, ½)', () => {
    const result = bayesianEffect({ estimate: 2, variance: 1 }, { ...flat, prior: { mean: 0, sd: 1 } });
    near(result?.mean ?? 0, 1, 1e-15, 'mean');
    near(result?.sd ?? 0, Math.SQRT1_2, 1e-15, 'sd');
    assert.throws(() => bayesianEffect({ estimate: 2, variance: 1 }, { ...flat, prior: { mean: 0, sd: 0 } }), RangeError);
  });

  test('direction: a lower value wins for decrease metrics; the risks swap; risk_control − risk_treatment = gain', () => {
    const up = bayesianEffect({ estimate: -0.3, variance: 0.04 }, flat);
    const down = bayesianEffect({ estimate: -0.3, variance: 0.04 }, { ...flat, direction: 'decrease' });
    assert.ok(up !== null && down !== null);
    near(up.chance_to_win + down.chance_to_win, 1, 1e-15, 'complementary');
    assert.ok(down.chance_to_win > 0.9);
    near(up.risk_control, down.risk_treatment, 1e-15, 'swap');
    near(up.risk_control - up.risk_treatment, -0.3, 1e-12, 'increase gain');
    near(down.risk_control - down.risk_treatment, 0.3, 1e-12, 'decrease gain');
  });

  test('no data: null', () => {
    assert.equal(bayesianEffect({ estimate: 1, variance: 0 }, flat), null);
  });
});

describe('guardrails (§13)', () => {
  test('the status rule', () => {
    // increase metric: harm is a negative estimate.
    assert.equal(guardrailStatus(-0.1, 0.01, 0.9, 'increase', 0.05), 'failing');
    assert.equal(guardrailStatus(-0.1, 0.2, 0.6, 'increase', 0.05), 'warning');
    assert.equal(guardrailStatus(-0.01, 0.4, 0.01, 'increase', 0.05), 'ok', 'harmful but shown within the margin');
    assert.equal(guardrailStatus(0, 0.5, 0.5, 'increase', 0.05), 'ok');
    assert.equal(guardrailStatus(0.1, 0.9, 0.2, 'increase', 0.05), 'ok');
    // decrease metric: harm is a positive estimate.
    assert.equal(guardrailStatus(0.1, 0.2, 0.6, 'decrease', 0.05), 'warning');
    assert.equal(guardrailStatus(-0.1, 0.9, 0.2, 'decrease', 0.05), 'ok');
    assert.equal(guardrailStatus(0.1, 0.01, 0.01, 'decrease', 0.05), 'failing', 'failing wins');
  });

  test('an estimate exactly at the margin has both one-sided p-values ½', () => {
    const result = guardrailFixed({ estimate: -0.02, se: 0.01, df: 1e6 }, { alpha: 0.05, direction: 'increase', margin: 0.02 });
    near(result?.harm_p_value ?? 0, 0.5, 1e-12, 'harm');
    near(result?.non_inferiority_p_value ?? 0, 0.5, 1e-12, 'non-inferiority');
    assert.equal(result?.status, 'warning');
  });

  test('not computable: null; a negative margin throws', () => {
    assert.equal(guardrailFixed(null, { alpha: 0.05, direction: 'increase', margin: 0 }), null);
    assert.throws(() => guardrailFixed({ estimate: 0, se: 1, df: 10 }, { alpha: 0.05, direction: 'increase', margin: -1 }), RangeError);
  });

  test('the running state: failing stays failing, the bound only improves', () => {
    const settings = { alpha: 0.05, direction: 'increase' as const, margin: 0.01 };
    const first: GuardrailResult = { estimate: -0.05, harm_p_value: 0.01, non_inferiority_p_value: 0.99, bound: -0.09, status: 'failing' };
    const second: GuardrailResult = { estimate: 0.02, harm_p_value: 0.6, non_inferiority_p_value: 0.03, bound: -0.008, status: 'ok' };
    const state = advanceGuardrailState(advanceGuardrailState(null, first, settings), second, settings);
    assert.deepEqual(state, { estimate: 0.02, harm_p_value: 0.01, non_inferiority_p_value: 0.03, bound: -0.008, status: 'failing' });
  });
});

describe('power and duration (§14)', () => {
  const base: PowerSettings = { mean: 1, variance: 1, mde: 0.1, alpha: 0.05, power: 0.8, sides: 'one', cupedR2: 0, sequential: null };

  test('one-sided fixed: the closed form n = 2σ²(z_α + z_β)²/δ² exactly', () => {
    // z_0.05 = 1.6448536269514722, z_0.2 = 0.8416212335729143.
    const expected = (2 * (1.6448536269514722 + 0.8416212335729143) ** 2) / 0.01;
    const size = sampleSizePerArm(base);
    near(size?.exact ?? 0, expected, 1e-9 * expected, 'n');
    assert.equal(size?.per_arm, Math.ceil(expected));
    near(powerAt(base, expected, expected) ?? 0, 0.8, 1e-12, 'power at n');
  });

  test("CUPED's R² scales the fixed sample by 1 − R²; the sequential test needs more", () => {
    const two = { ...base, sides: 'two' as const };
    const plain = sampleSizePerArm(two)?.exact ?? 0;
    near(sampleSizePerArm({ ...two, cupedR2: 0.5 })?.exact ?? 0, plain / 2, 1e-9 * plain, 'halved');
    assert.ok((sampleSizePerArm({ ...two, sequential: { tuningN: 5000 } })?.exact ?? 0) > plain);
  });

  test('days: per arm × arms / rate', () => {
    assert.equal(durationDays(1000, 2, 250), 8);
    assert.equal(durationDays(1000, 3, 0), null);
  });

  test('not usable: null', () => {
    assert.equal(sampleSizePerArm({ ...base, mean: 0 }), null);
    assert.equal(sampleSizePerArm({ ...base, power: 0.04 }), null);
    assert.equal(sampleSizePerArm({ ...base, cupedR2: 1 }), null);
    assert.equal(powerAt(base, 0, 10), null);
  });
});
