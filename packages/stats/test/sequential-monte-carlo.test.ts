/**
 * Seeded Monte Carlo checks of continuous monitoring (docs/statistics.md §9–§11, §13): 2,000 simulated
 * experiments, each looked at 50 times as its data arrive. Under the null the always-valid tests
 * ever reject at most α of the time (within 3 binomial standard errors √(α(1 − α)/N)), while the
 * fixed-horizon test read at every look rejects far more often — the peeking problem; the running
 * intervals cover the true effect at every look 1 − α of the time. Seeds are fixed: a pass is
 * reproducible. The always-valid rates land well below α (about 0.015 at α = 0.05): the mixture
 * bounds crossing at ANY time, and 50 discrete looks miss most of the paths that cross in between.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  advanceGuardrailState, guardrailSequential,
  advanceSequentialState, advanceSrmState, alwaysValidInference, hybridInference, normalSurvival, normalUpperQuantile,
  srmLogEValue, srmPValue,
} from '../src/index.ts';
import type { SequentialRunningState } from '../src/index.ts';
import { seededNormals } from './support/seeded-normals.ts';

const RUNS = 2000;
const LOOKS = 50;
/** Per arm and look: 2,000 participants in all at the last look, the planned N*. */
const BATCH = 20;
const ALPHA = 0.05;
const limit = (rate: number): number => rate + 3 * Math.sqrt((rate * (1 - rate)) / RUNS);

/** Running sums of one arm, so a look costs O(1). */
class Arm {
  n = 0;
  sum = 0;
  sumSquares = 0;
  add(value: number): void {
    this.n++;
    this.sum += value;
    this.sumSquares += value * value;
  }
  get mean(): number { return this.sum / this.n; }
  get variance(): number { return (this.sumSquares - (this.sum * this.sum) / this.n) / (this.n - 1); }
}

/**
 * Runs `RUNS` experiments of control N(μ_C, 1) against treatment N(μ_T, 1) with `LOOKS` looks and
 * hands each look's arms to `atLook` (look index, arms), after `start` per run.
 */
function simulate(seed: number, controlMean: number, treatmentMean: number, start: () => void, atLook: (look: number, c: Arm, t: Arm) => void): void {
  const draw = seededNormals(seed);
  for (let run = 0; run < RUNS; run++) {
    const c = new Arm();
    const t = new Arm();
    start();
    for (let look = 0; look < LOOKS; look++) {
      for (let i = 0; i < BATCH; i++) {
        c.add(draw(controlMean, 1));
        t.add(draw(treatmentMean, 1));
      }
      atLook(look, c, t);
    }
  }
}

describe('Monte Carlo: continuous monitoring under the null (2,000 runs × 50 looks)', () => {
  test('always-valid two- and one-sided and hybrid tests ever reject ≤ α + 3 SE; the peeked fixed test does not', (t) => {
    const settings = { alpha: ALPHA, tuningN: LOOKS * BATCH * 2, sides: 'two' as const, direction: 'increase' as const };
    const half = { ...settings, alpha: ALPHA / 2 };
    const zFixed = normalUpperQuantile(ALPHA / 2);
    let sequential = 0;
    let oneSided = 0;
    let hybrid = 0;
    let peeked = 0;
    let fixedAtEnd = 0;
    let state: SequentialRunningState | null = null;
    let oneState: SequentialRunningState | null = null;
    let halfState: SequentialRunningState | null = null;
    let everPeeked = false;
    simulate(20261128, 0, 0, () => {
      state = null;
      oneState = null;
      halfState = null;
      everPeeked = false;
    }, (look, c, tr) => {
      const estimate = tr.mean - c.mean;
      const variance = c.variance / c.n + tr.variance / tr.n;
      const n = c.n + tr.n;
      state = advanceSequentialState(state, alwaysValidInference({ estimate, variance, n }, settings));
      oneState = advanceSequentialState(oneState, alwaysValidInference({ estimate, variance, n }, { ...settings, sides: 'one' }));
      halfState = advanceSequentialState(halfState, alwaysValidInference({ estimate, variance, n }, half));
      const z = estimate / Math.sqrt(variance);
      if (Math.abs(z) > zFixed) everPeeked = true;
      if (look === LOOKS - 1) {
        if ((state?.p_value ?? 1) < ALPHA) sequential++;
        if ((oneState?.p_value ?? 1) < ALPHA) oneSided++;
        if (everPeeked) peeked++;
        const pFixed = 2 * normalSurvival(Math.abs(z));
        if (pFixed < ALPHA) fixedAtEnd++;
        // The hybrid's fixed part at α/2, read at the planned end only.
        const fixed = { p_value: pFixed, ci_low: estimate - normalUpperQuantile(ALPHA / 4) * Math.sqrt(variance), ci_high: estimate + normalUpperQuantile(ALPHA / 4) * Math.sqrt(variance) };
        const hybridResult = hybridInference(halfState as SequentialRunningState, fixed);
        if (hybridResult.p_value < ALPHA) hybrid++;
      }
    });
    const bound = limit(ALPHA);
    t.diagnostic(`ever rejected: sequential ${sequential / RUNS}, one-sided ${oneSided / RUNS}, hybrid ${hybrid / RUNS}, fixed peeked at every look ${peeked / RUNS}, fixed read once ${fixedAtEnd / RUNS} (limit ${bound.toFixed(4)})`);
    assert.ok(sequential / RUNS <= bound, `sequential ${sequential / RUNS}`);
    assert.ok(oneSided / RUNS <= bound, `one-sided ${oneSided / RUNS}`);
    assert.ok(hybrid / RUNS <= bound, `hybrid ${hybrid / RUNS}`);
    // The check can fail: the fixed-horizon test read at every look rejects far more than α.
    assert.ok(peeked / RUNS > bound, `peeked ${peeked / RUNS}`);
    assert.ok(peeked / RUNS > 3 * ALPHA, 'the peeking problem is large, not marginal');
  });

  test('sequential SRM: the Dirichlet–multinomial p ever < α at most α + 3 SE; the chi-squared peeked exceeds it', (t) => {
    // 40 units a look assigned by a fair coin to two arms planned 50/50.
    const draw = seededNormals(4242);
    let sequential = 0;
    let peeked = 0;
    for (let run = 0; run < RUNS; run++) {
      const counts = [0, 0];
      let state = null;
      let everPeeked = false;
      for (let look = 0; look < LOOKS; look++) {
        for (let i = 0; i < 2 * BATCH; i++) { const arm = draw(0, 1) > 0 ? 0 : 1; counts[arm] = (counts[arm] ?? 0) + 1; }
        state = advanceSrmState(state, srmLogEValue(counts, [1, 1]));
        if ((srmPValue(counts, [1, 1]) ?? 1) < ALPHA) everPeeked = true;
      }
      if ((state?.p_value ?? 1) < ALPHA) sequential++;
      if (everPeeked) peeked++;
    }
    t.diagnostic(`SRM ever flagged: sequential ${sequential / RUNS}, chi-squared peeked ${peeked / RUNS}`);
    assert.ok(sequential / RUNS <= limit(ALPHA), `sequential SRM ${sequential / RUNS}`);
    assert.ok(peeked / RUNS > limit(ALPHA), `chi-squared peeked ${peeked / RUNS}`);
  });
});

describe('Monte Carlo: coverage of the running intervals at every look', () => {
  test('absolute and relative (delta method) running intersections cover the truth at all 50 looks ≥ 1 − α − 3 SE', (t) => {
    // Control N(10, 1), treatment N(10.1, 1): Δ = 0.1, relative 0.01.
    const settings = { alpha: ALPHA, tuningN: LOOKS * BATCH * 2, sides: 'two' as const, direction: 'increase' as const };
    let absoluteMissed = 0;
    let relativeMissed = 0;
    let fixedMissed = 0;
    let absolute: SequentialRunningState | null = null;
    let relative: SequentialRunningState | null = null;
    let fixedEverMissed = false;
    const z = normalUpperQuantile(ALPHA / 2);
    const covers = (s: SequentialRunningState | null, truth: number): boolean =>
      s !== null && !s.disjoint && (s.ci_low === null || s.ci_low <= truth) && (s.ci_high === null || truth <= s.ci_high);
    simulate(77, 10, 10.1, () => {
      absolute = null;
      relative = null;
      fixedEverMissed = false;
    }, (look, c, tr) => {
      const n = c.n + tr.n;
      const vC = c.variance / c.n;
      const vT = tr.variance / tr.n;
      absolute = advanceSequentialState(absolute, alwaysValidInference({ estimate: tr.mean - c.mean, variance: vC + vT, n }, settings));
      // §2's delta-method variance of (ȳ_T − ȳ_C)/|ȳ_C|.
      const m = c.mean;
      const relVariance = vT / (m * m) + (tr.mean * tr.mean * vC) / (m ** 4);
      relative = advanceSequentialState(relative, alwaysValidInference({ estimate: (tr.mean - m) / Math.abs(m), variance: relVariance, n }, settings));
      if (Math.abs(tr.mean - c.mean - 0.1) > z * Math.sqrt(vC + vT)) fixedEverMissed = true;
      if (look === LOOKS - 1) {
        // The intersection only shrinks, so covering at the last look means covering at every look.
        if (!covers(absolute, 0.1)) absoluteMissed++;
        if (!covers(relative, 0.01)) relativeMissed++;
        if (fixedEverMissed) fixedMissed++;
      }
    });
    const bound = limit(ALPHA);
    t.diagnostic(`missed the truth at some look: absolute ${absoluteMissed / RUNS}, relative ${relativeMissed / RUNS}, fixed intervals ${fixedMissed / RUNS} (limit ${bound.toFixed(4)})`);
    assert.ok(absoluteMissed / RUNS <= bound, `absolute ${absoluteMissed / RUNS}`);
    assert.ok(relativeMissed / RUNS <= bound, `relative ${relativeMissed / RUNS}`);
    assert.ok(fixedMissed / RUNS > bound, `fixed ${fixedMissed / RUNS}`);
  });
});

describe('Monte Carlo: a sequential guardrail whose true harm is exactly the margin', () => {
  test('ever `failing` at most α + 3 SE of 1,000 runs × 50 looks; a fixed one-sided test peeked at every look exceeds it', (t) => {
    // increase metric, margin 0.05 absolute: control N(0, 1), treatment N(−0.05, 1) — the boundary
    // of the null "harm ≤ margin", where a valid test rejects with probability α at most.
    const runs = 1000;
    const draw = seededNormals(515);
    const settings = { alpha: ALPHA, direction: 'increase' as const, margin: 0.05, tuningN: LOOKS * BATCH * 2 };
    const zOneSided = normalUpperQuantile(ALPHA);
    let failed = 0;
    let peeked = 0;
    for (let run = 0; run < runs; run++) {
      const c = new Arm();
      const tr = new Arm();
      let state = null;
      let everPeeked = false;
      for (let look = 0; look < LOOKS; look++) {
        for (let i = 0; i < BATCH; i++) {
          c.add(draw(0, 1));
          tr.add(draw(-0.05, 1));
        }
        const estimate = tr.mean - c.mean;
        const variance = c.variance / c.n + tr.variance / tr.n;
        state = advanceGuardrailState(state, guardrailSequential({ estimate, variance, n: c.n + tr.n }, settings), settings);
        if ((estimate + 0.05) / Math.sqrt(variance) < -zOneSided) everPeeked = true;
      }
      if (state?.status === 'failing') failed++;
      if (everPeeked) peeked++;
    }
    const bound = ALPHA + 3 * Math.sqrt((ALPHA * (1 - ALPHA)) / runs);
    t.diagnostic(`ever failing: sequential ${failed / runs}, fixed one-sided peeked ${peeked / runs} (limit ${bound.toFixed(4)})`);
    assert.ok(failed / runs <= bound, `sequential guardrail ${failed / runs}`);
    assert.ok(peeked / runs > bound, `peeked ${peeked / runs}`);
  });
});
