/**
 * The engine against packages/stats/test-vectors/analysis.json and corrections.json: expected values
 * computed from the raw per-participant arrays by NumPy/SciPy/statsmodels (and GrowthBook's gbstats
 * where given) — see packages/stats/test-vectors/README.md and docs/statistics.md. The JSON files
 * are written by packages/stats/test-vectors/generate_analysis_fixtures.py; while they are absent
 * the two suites skip with a message.
 * Tolerances: 1e-9 relative against "expected", 1e-7 against "gbstats".
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { ArmMetricData, ExperimentMetric, MultipleTestingCorrection } from '@switchyard/core';
import { adjustPValues, compareMetric, comparisonEffects, jointMomentsFromRows } from '../src/index.ts';
import type { EffectDetail } from '../src/index.ts';

type Numbers = Record<string, number | null>;
interface AnalysisCase {
  name: string;
  kind: 'event' | 'ratio';
  alpha: number;
  sides: 'two' | 'one';
  direction: 'increase' | 'decrease';
  relative_interval: 'delta' | 'fieller';
  cuped: boolean;
  control: Record<string, number[]>;
  treatment: Record<string, number[]>;
  expected: { absolute: Numbers | null; relative: Numbers | null; cuped: Numbers | null; balance_p_value: number | null };
  gbstats?: { absolute?: Numbers | null; relative?: Numbers | null } | null;
}
interface CorrectionCase { name: string; method: MultipleTestingCorrection; alpha: number; p_values: number[]; adjusted: number[] }

function load<T>(file: string): { cases: T[] } | null {
  const url = new URL(`../test-vectors/${file}`, import.meta.url);
  return existsSync(url) ? (JSON.parse(readFileSync(url, 'utf8')) as { cases: T[] }) : null;
}

/**
 * Relative tolerance; an absolute floor of 1e-300 for underflowing p-values, and of 1e-15 for
 * estimates and variance reductions (O(1) quantities whose true value is 0 and whose fixture value
 * is NumPy's rounding noise, e.g. −4.4e-16 for equal adjusted means) — 1e-12 against gbstats,
 * which works from sums and sums of squares and so carries more of that noise. gbstats p-values
 * get an absolute 1e-14: it computes 2·(1 − cdf), which cancels to 0 below ~1e-14.
 */
function near(actual: number | null | undefined, expected: number | null, tolerance: number, what: string): void {
  const gbstats = what.startsWith('gbstats');
  const floor = /estimate$|variance_reduction$/.test(what) ? (gbstats ? 1e-12 : 1e-15) : gbstats && what.endsWith('p_value') ? 1e-14 : 1e-300;
  if (expected === null) {
    assert.equal(actual, null, `${what}: expected null, got ${actual}`);
    return;
  }
  assert.ok(typeof actual === 'number', `${what}: expected ${expected}, got ${actual}`);
  const error = Math.abs(actual - expected);
  assert.ok(error <= tolerance * Math.abs(expected) || error <= floor, `${what}: got ${actual}, expected ${expected} (relative error ${error / Math.abs(expected)})`);
}

function armData(kind: 'event' | 'ratio', cuped: boolean, values: Record<string, number[]>): ArmMetricData {
  const names = kind === 'event' ? (cuped ? ['y', 'x'] : ['y']) : (cuped ? ['num', 'den', 'x_num', 'x_den'] : ['num', 'den']);
  const columns = names.map((name) => values[name] ?? []);
  const n = columns[0]?.length ?? 0;
  const rows = Array.from({ length: n }, (_, i) => columns.map((column) => column[i] as number));
  const moments = jointMomentsFromRows(rows, names.length);
  return { moments, uncappedMean: moments.means[0] ?? 0 };
}

function metricOf(c: AnalysisCase): ExperimentMetric {
  const common = { key: 'm', direction: c.direction, cuped: c.cuped ? { lookbackMs: 1 } : null, guardrail: null };
  const source = { eventKey: 'e', aggregation: 'sum' as const, windowMs: null };
  return c.kind === 'event'
    ? { ...common, ...source, kind: 'event', capping: null }
    : { ...common, kind: 'ratio', numerator: source, denominator: { ...source, eventKey: 'd' } };
}

function checkEffect(actual: EffectDetail | null, expected: Numbers | null | undefined, tolerance: number, what: string): void {
  if (expected === undefined) return;
  if (expected === null) {
    assert.equal(actual, null, `${what}: expected not computable`);
    return;
  }
  assert.ok(actual !== null, `${what}: expected a result, got null`);
  for (const [field, value] of Object.entries(expected)) {
    near((actual as unknown as Numbers)[field], value, tolerance, `${what}.${field}`);
  }
}

const analysis = load<AnalysisCase>('analysis.json');
const corrections = load<CorrectionCase>('corrections.json');

describe('analysis.json: effects, CUPED and balance checks against NumPy/SciPy (1e-9) and gbstats (1e-7)', () => {
  if (analysis === null) {
    test('analysis.json', { skip: 'packages/stats/test-vectors/analysis.json is absent (written by generate_analysis_fixtures.py)' }, () => {});
    return;
  }
  for (const c of analysis.cases) {
    test(c.name, () => {
      const comparison = compareMetric(metricOf(c), armData(c.kind, c.cuped, c.control), armData(c.kind, c.cuped, c.treatment), {
        alpha: c.alpha, sides: c.sides, relativeInterval: c.relative_interval,
      });
      const effects = comparisonEffects(comparison);
      checkEffect(effects.absolute, c.expected.absolute, 1e-9, 'absolute');
      checkEffect(effects.relative, c.expected.relative, 1e-9, 'relative');
      if (c.expected.cuped === null) assert.equal(comparison.cuped, null, 'cuped');
      else {
        assert.ok(comparison.cuped !== null, 'cuped: expected a result');
        near(comparison.cuped.theta, c.expected.cuped.theta ?? null, 1e-9, 'cuped.theta');
        near(comparison.cuped.variance_reduction, c.expected.cuped.variance_reduction ?? null, 1e-9, 'cuped.variance_reduction');
      }
      near(comparison.balancePValue, c.expected.balance_p_value, 1e-9, 'balance_p_value');
      // gbstats gives no value where it does not compute one (no Fieller interval, a zero variance
      // in an arm, a zero control mean): null there means "not compared", not "not computable".
      if (c.gbstats?.absolute) checkEffect(effects.absolute, c.gbstats.absolute, 1e-7, 'gbstats absolute');
      if (c.gbstats?.relative) checkEffect(effects.relative, c.gbstats.relative, 1e-7, 'gbstats relative');
    });
  }
});

describe('corrections.json: adjusted p-values against statsmodels multipletests (1e-9)', () => {
  if (corrections === null) {
    test('corrections.json', { skip: 'packages/stats/test-vectors/corrections.json is absent (written by generate_analysis_fixtures.py)' }, () => {});
    return;
  }
  for (const c of corrections.cases) {
    test(c.name, () => {
      const adjusted = adjustPValues(c.p_values, c.method);
      assert.equal(adjusted.length, c.adjusted.length);
      adjusted.forEach((value, i) => near(value, c.adjusted[i] as number, 1e-9, `adjusted[${i}]`));
    });
  }
});
