import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import type { ArmMetricData } from '@switchyard/core';
import {
  analyseExperiment,
  srmPValue,
  studentTUpperQuantile,
  welchTTest,
} from '../src/index.ts';
import type { SampleSummary } from '../src/index.ts';

// Reference values from SciPy (test-vectors/generate_fixtures.py, see its README). @switchyard/stats
// must agree with them to a relative 1e-9.
const RELATIVE_TOLERANCE = 1e-9;
/** Values this close to 0 (an underflowed p-value) count as equal to any other such value. */
const ABSOLUTE_FLOOR = 1e-300;

interface WelchCase {
  name: string;
  control: SampleSummary;
  treatment: SampleSummary;
  conversions?: Record<'control' | 'treatment', { n: number; conversions: number }>;
  sums?: Record<'control' | 'treatment', { n: number; sum: number; sum_of_squares: number }>;
  expected: {
    t: number;
    df: number;
    p_value: number;
    diff: number;
    std_err: number;
    ci_low: number;
    ci_high: number;
    t_quantile: number;
  } | null;
}

interface SrmCase {
  name: string;
  observed: number[];
  weights: number[];
  expected: { chi_squared: number; df: number; p_value: number } | null;
}

function load<T>(file: string): T[] {
  const text = readFileSync(new URL(`../test-vectors/${file}`, import.meta.url), 'utf8');
  return (JSON.parse(text) as { cases: T[] }).cases;
}

let worst = { error: 0, where: 'none' };

/** Asserts |actual - expected| <= 1e-9 |expected| (or both within the absolute floor of 0). */
function assertClose(actual: number, expected: number, where: string): void {
  const difference = Math.abs(actual - expected);
  const relative = difference === 0 ? 0 : difference / Math.abs(expected);
  if (difference > ABSOLUTE_FLOOR && relative > worst.error) worst = { error: relative, where };
  assert.ok(
    difference <= ABSOLUTE_FLOOR || relative <= RELATIVE_TOLERANCE,
    `${where}: got ${actual}, expected ${expected} (relative error ${relative})`,
  );
}

const welchCases = load<WelchCase>('welch.json');
const srmCases = load<SrmCase>('srm.json');

after(() => {
  // Printed so a change in numerical behaviour is visible even while it stays within tolerance.
  console.log(`stats fixtures: worst relative error ${worst.error.toExponential(3)} (${worst.where})`);
});

describe('Welch t-test against SciPy', () => {
  test('the fixture file covers the required situations', () => {
    assert.ok(welchCases.length >= 24, `only ${welchCases.length} cases`);
    assert.ok(welchCases.some((c) => c.expected === null), 'a not-computable case');
    assert.ok(welchCases.some((c) => c.conversions !== undefined), 'a bool case');
    assert.ok(welchCases.some((c) => (c.expected?.p_value ?? 1) < 1e-30), 'a tiny p-value');
  });

  for (const c of welchCases) {
    test(c.name, () => {
      const result = welchTTest(c.control, c.treatment);
      if (c.expected === null) {
        assert.equal(result, null);
        return;
      }
      assert.ok(result !== null, 'computable');
      assertClose(result.t, c.expected.t, `${c.name} t`);
      assertClose(result.df, c.expected.df, `${c.name} df`);
      assertClose(result.pValue, c.expected.p_value, `${c.name} p`);
      assertClose(result.diff, c.expected.diff, `${c.name} diff`);
      assertClose(result.stdErr, c.expected.std_err, `${c.name} stdErr`);
      assertClose(result.ciLow, c.expected.ci_low, `${c.name} ci_low`);
      assertClose(result.ciHigh, c.expected.ci_high, `${c.name} ci_high`);
      assertClose(studentTUpperQuantile(0.025, c.expected.df), c.expected.t_quantile, `${c.name} t quantile`);
    });
  }
});

describe('conversions against NumPy and SciPy', () => {
  /** A bool metric's arm as the store delivers it: mean c/n and M2 = c(1 − c/n). */
  const arm = (variantKey: string, input: { n: number; conversions: number }) => {
    const mean = input.n === 0 ? 0 : input.conversions / input.n;
    const data: ArmMetricData = { moments: { n: input.n, means: [mean], comoments: [[input.conversions * (1 - mean)]] }, uncappedMean: mean };
    return { variantKey, participants: input.n, plannedWeight: 1, metrics: { m: data } };
  };

  for (const c of welchCases.filter((x) => x.conversions !== undefined)) {
    test(`conversions: ${c.name}`, () => {
      const control = c.conversions?.control;
      const treatment = c.conversions?.treatment;
      assert.ok(control !== undefined && treatment !== undefined);
      // The whole bool path, counts in and NumPy's summaries and SciPy's p out.
      const result = analyseExperiment({
        arms: [arm('control', control), arm('treatment', treatment)],
        controlVariantKey: 'control',
        metrics: [{ kind: 'event', key: 'm', eventKey: 'm', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null }],
        settings: DEFAULT_ANALYSIS,
      });
      for (const [i, side] of (['control', 'treatment'] as const).entries()) {
        const stats = result.variantResults[i]?.metricStats.m;
        assert.ok(stats !== undefined);
        assertClose(stats.mean, c[side].mean, `${c.name} ${side} mean`);
        assertClose(stats.variance, c[side].variance, `${c.name} ${side} variance`);
      }
      const p = result.variantResults[1]?.metricStats.m?.p_value ?? null;
      if (c.expected === null) assert.equal(p, null);
      else assertClose(p ?? Number.NaN, c.expected.p_value, `${c.name} p from conversions`);
    });
  }
});

describe('sample ratio mismatch against SciPy', () => {
  test('the fixture file covers the required situations', () => {
    assert.ok(srmCases.some((c) => c.observed.length === 3 && c.weights[0] !== c.weights[2]), '3 uneven groups');
    assert.ok(srmCases.some((c) => (c.expected?.p_value ?? 1) < 1e-29 && (c.expected?.p_value ?? 0) > 0), 'a tiny p');
    assert.ok(srmCases.some((c) => c.expected === null), 'a not-computable case');
  });

  for (const c of srmCases) {
    test(c.name, () => {
      const p = srmPValue(c.observed, c.weights);
      if (c.expected === null) assert.equal(p, null);
      else assertClose(p ?? Number.NaN, c.expected.p_value, `${c.name} SRM p`);
    });
  }
});
