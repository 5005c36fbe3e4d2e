/**
 * Issue 39's statistics against the fixtures of test-vectors/generate_sequential_fixtures.py:
 * mixture e-values and boundaries integrated numerically with SciPy and computed by Howard et al.'s
 * confseq (C++), gbstats' sequential and
 * Bayesian outputs, the SRM e-value from SciPy's gammaln (and a Pólya-urn product), statsmodels'
 * power. README.md there says where each value comes from.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { MetricDirection } from '@switchyard/core';
import {
  alwaysValidInference, bayesianEffect, guardrailFixed, guardrailSequential, powerAt, sampleSizePerArm, srmLogEValue,
} from '../src/index.ts';
import type { GaussianPrior, GuardrailResult, PowerSettings } from '../src/index.ts';

function load<T>(file: string): T[] {
  return (JSON.parse(readFileSync(new URL(`../test-vectors/${file}`, import.meta.url), 'utf8')) as { cases: T[] }).cases;
}

/** |actual − expected| ≤ tolerance·scale (scale ≥ 1e-300, so p-values that underflow to 0 compare equal). */
function close(actual: number | null, expected: number | null, scale: number, tolerance: number, where: string): void {
  if (expected === null || actual === null) {
    assert.equal(actual, expected, `${where}: got ${actual}, expected ${expected}`);
    return;
  }
  const difference = Math.abs(actual - expected);
  assert.ok(difference <= tolerance * Math.max(scale, 1e-300), `${where}: got ${actual}, expected ${expected} (difference ${difference}, scale ${scale})`);
}

interface Bounds { ci_low: number | null; ci_high: number | null; p_value: number | null }

interface SequentialCase {
  name: string; estimate: number; variance: number; n: number; alpha: number; tuning_n: number;
  sides: 'two' | 'one'; direction: MetricDirection; null_value: number;
  expected: Bounds & { p_value: number; log_e_value: number };
  gbstats: Bounds | null;
  /** Howard et al.'s confseq (C++), null when generated without it. */
  confseq: { ci_low: number | null; ci_high: number | null; log_e_value: number | null } | null;
}

describe('always-valid inference (normal mixture) against SciPy quad, confseq and gbstats', () => {
  const cases = load<SequentialCase>('sequential.json');
  test('the file covers two- and one-sided, absolute and relative, gbstats, tiny p', () => {
    assert.ok(cases.length >= 100);
    assert.ok(cases.some((c) => c.gbstats !== null && c.sides === 'two'));
    assert.ok(cases.some((c) => c.sides === 'one' && c.direction === 'decrease'));
    assert.ok(cases.some((c) => c.expected.p_value === 0), 'an underflowed p');
    assert.ok(cases.some((c) => c.null_value !== 0));
    assert.ok(cases.every((c) => c.confseq !== null), 'confseq values for every case');
  });
  for (const c of cases) {
    test(c.name, () => {
      const result = alwaysValidInference({ estimate: c.estimate, variance: c.variance, n: c.n }, {
        alpha: c.alpha, tuningN: c.tuning_n, sides: c.sides, direction: c.direction, nullValue: c.null_value,
      });
      assert.ok(result !== null);
      const scale = Math.max(Math.abs(c.estimate), Math.sqrt(c.variance));
      close(result.ci_low, c.expected.ci_low, scale, 1e-9, 'ci_low');
      close(result.ci_high, c.expected.ci_high, scale, 1e-9, 'ci_high');
      close(result.p_value, c.expected.p_value, c.expected.p_value, 1e-9, 'p_value');
      close(result.log_e_value, c.expected.log_e_value, Math.max(1, Math.abs(c.expected.log_e_value)), 1e-9, 'log_e_value');
      if (c.confseq !== null) {
        close(result.ci_low, c.confseq.ci_low, scale, 1e-9, 'confseq ci_low');
        close(result.ci_high, c.confseq.ci_high, scale, 1e-9, 'confseq ci_high');
        // confseq takes ln Φ directly, which is −∞ where Φ underflows (null here).
        if (c.confseq.log_e_value !== null) close(result.log_e_value, c.confseq.log_e_value, Math.max(1, Math.abs(c.confseq.log_e_value)), 1e-9, 'confseq log e');
      }
      if (c.gbstats !== null && c.sides === 'two') {
        close(result.ci_low, c.gbstats.ci_low, scale, 1e-7, 'gbstats ci_low');
        close(result.ci_high, c.gbstats.ci_high, scale, 1e-7, 'gbstats ci_high');
        close(result.p_value, c.gbstats.p_value, Math.max(c.expected.p_value, 1e-7), 1e-7, 'gbstats p_value');
      }
      if (c.gbstats !== null && c.sides === 'one') {
        // gbstats' one-sided bound is a closed-form bound on the same mixture's boundary: wider.
        const key = c.direction === 'increase' ? 'ci_low' : 'ci_high';
        const ours = Math.abs((result[key] as number) - c.estimate);
        const theirs = Math.abs((c.gbstats[key] as number) - c.estimate);
        assert.ok(ours <= theirs && ours >= 0.95 * theirs, `one-sided half-width ${ours} vs gbstats ${theirs}`);
      }
    });
  }
});

interface SrmCase {
  name: string; observed: number[]; weights: number[]; concentration: number;
  expected: { log_e_value: number | 'Infinity'; p_value: number };
}

describe('sequential SRM (Dirichlet–multinomial e-value) against SciPy gammaln', () => {
  for (const c of load<SrmCase>('srm-sequential.json')) {
    test(c.name, () => {
      const logE = srmLogEValue(c.observed, c.weights, c.concentration);
      if (c.expected.log_e_value === 'Infinity') {
        assert.equal(logE, Number.POSITIVE_INFINITY);
        return;
      }
      assert.ok(logE !== null);
      // ln Γ of counts near 10⁶ is ~1.3e7: a few ulps of it is 1e-9 absolute.
      const total = c.observed.reduce((a, b) => a + b, 0);
      close(logE, c.expected.log_e_value, Math.max(1, Math.abs(c.expected.log_e_value), total * 1e-3), 1e-9, 'log e');
    });
  }
});

interface BayesCase {
  name: string; estimate: number; variance: number; alpha: number; direction: MetricDirection; prior: GaussianPrior | null;
  expected: { mean: number; sd: number; chance_to_win: number; ci_low: number; ci_high: number; risk_control: number; risk_treatment: number };
  gbstats: { chance_to_win: number; ci_low: number; ci_high: number; risk_control: number; risk_treatment: number } | null;
}

describe('Bayesian engine against SciPy quad and gbstats', () => {
  const cases = load<BayesCase>('bayesian.json');
  test('the file has flat and proper priors, both directions, gbstats', () => {
    assert.ok(cases.some((c) => c.prior === null) && cases.some((c) => c.prior !== null));
    assert.ok(cases.some((c) => c.direction === 'decrease'));
    assert.ok(cases.some((c) => c.gbstats !== null));
  });
  for (const c of cases) {
    test(c.name, () => {
      const result = bayesianEffect({ estimate: c.estimate, variance: c.variance }, { alpha: c.alpha, direction: c.direction, prior: c.prior });
      assert.ok(result !== null);
      const sd = c.expected.sd;
      close(result.mean, c.expected.mean, Math.max(sd, Math.abs(c.expected.mean)), 1e-12, 'mean');
      close(result.sd, sd, sd, 1e-12, 'sd');
      close(result.chance_to_win, c.expected.chance_to_win, 1, 1e-12, 'chance_to_win');
      for (const key of ['ci_low', 'ci_high', 'risk_control', 'risk_treatment'] as const) {
        close(result[key], c.expected[key], Math.max(sd, Math.abs(c.expected[key])), 1e-9, key);
        if (c.gbstats !== null) close(result[key], c.gbstats[key], Math.max(sd, Math.abs(c.gbstats[key])), 1e-7, `gbstats ${key}`);
      }
      if (c.gbstats !== null) close(result.chance_to_win, c.gbstats.chance_to_win, 1, 1e-7, 'gbstats chance_to_win');
    });
  }
});

interface GuardrailCase {
  name: string; estimate: number; se: number; df: number; n: number; alpha: number; tuning_n: number;
  direction: MetricDirection; margin: number;
  expected: Record<'fixed' | 'sequential', Omit<GuardrailResult, 'estimate'>>;
}

describe('guardrails against SciPy (t tails, integrated mixtures)', () => {
  const cases = load<GuardrailCase>('guardrail.json');
  test('every status occurs, fixed and sequential', () => {
    for (const kind of ['fixed', 'sequential'] as const) {
      for (const status of ['ok', 'warning', 'failing'] as const) {
        assert.ok(cases.some((c) => c.expected[kind].status === status), `${kind} ${status}`);
      }
    }
  });
  for (const c of cases) {
    test(c.name, () => {
      const settings = { alpha: c.alpha, direction: c.direction, margin: c.margin };
      const fixed = guardrailFixed({ estimate: c.estimate, se: c.se, df: c.df }, settings);
      const sequential = guardrailSequential({ estimate: c.estimate, variance: c.se * c.se, n: c.n }, { ...settings, tuningN: c.tuning_n });
      for (const [kind, got] of [['fixed', fixed], ['sequential', sequential]] as const) {
        assert.ok(got !== null);
        const want = c.expected[kind];
        assert.equal(got.status, want.status, `${kind} status`);
        close(got.harm_p_value, want.harm_p_value, want.harm_p_value, 1e-9, `${kind} harm p`);
        close(got.non_inferiority_p_value, want.non_inferiority_p_value, want.non_inferiority_p_value, 1e-9, `${kind} non-inferiority p`);
        close(got.bound, want.bound, Math.max(c.se, Math.abs(c.estimate)), 1e-9, `${kind} bound`);
      }
    });
  }
});

interface PowerCase {
  name: string; mean: number; variance: number; mde: number; alpha: number; power: number; sides: 'two' | 'one';
  cuped_r2: number; sequential: { tuning_n: number } | null;
  expected: {
    per_arm_exact: number; per_arm: number; statsmodels_nobs1: number | null;
    now: { n_control: number; n_treatment: number; power: number };
  };
}

describe('power and sample size against statsmodels (fixed) and SciPy (sequential)', () => {
  for (const c of load<PowerCase>('power.json')) {
    test(c.name, () => {
      const settings: PowerSettings = {
        mean: c.mean, variance: c.variance, mde: c.mde, alpha: c.alpha, power: c.power, sides: c.sides, cupedR2: c.cuped_r2,
        sequential: c.sequential === null ? null : { tuningN: c.sequential.tuning_n },
      };
      const size = sampleSizePerArm(settings);
      assert.ok(size !== null);
      close(size.exact, c.expected.per_arm_exact, c.expected.per_arm_exact, 1e-9, 'per arm');
      assert.equal(size.per_arm, c.expected.per_arm);
      if (c.expected.statsmodels_nobs1 !== null) close(size.exact, c.expected.statsmodels_nobs1, c.expected.statsmodels_nobs1, 1e-6, 'statsmodels nobs1');
      close(powerAt(settings, c.expected.now.n_control, c.expected.now.n_treatment), c.expected.now.power, 1, 1e-9, 'current power');
    });
  }
});
