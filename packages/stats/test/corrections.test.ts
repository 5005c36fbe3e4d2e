/** Multiple-testing corrections (docs/statistics.md §6) and the SRM warning (§7). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { adjustedAlpha, adjustPValues, srmPValue, srmWarning } from '../src/index.ts';

function closeAll(actual: number[], expected: number[]): void {
  assert.equal(actual.length, expected.length);
  actual.forEach((value, i) => assert.ok(Math.abs(value - (expected[i] as number)) <= 1e-15, `[${i}] ${value} vs ${expected[i]}`));
}

describe('adjusted p-values', () => {
  // p = 0.01, 0.04, 0.03, 0.005; m = 4; ascending: 0.005 (#3), 0.01 (#0), 0.03 (#2), 0.04 (#1).
  const p = [0.01, 0.04, 0.03, 0.005];

  test('Bonferroni: m·p', () => closeAll(adjustPValues(p, 'bonferroni'), [0.04, 0.16, 0.12, 0.02]));

  test('Holm: running max of (m − j + 1)·p₍ⱼ₎', () => {
    // 4·0.005 = 0.02, 3·0.01 = 0.03, 2·0.03 = 0.06, 1·0.04 = 0.04 → 0.02, 0.03, 0.06, 0.06.
    closeAll(adjustPValues(p, 'holm'), [0.03, 0.06, 0.06, 0.02]);
  });

  test('Benjamini–Hochberg: running min from the top of m·p₍ⱼ₎/j', () => {
    // 0.005·4/1 = 0.02, 0.01·4/2 = 0.02, 0.03·4/3 = 0.04, 0.04·4/4 = 0.04 → unchanged by the min.
    closeAll(adjustPValues(p, 'benjamini_hochberg'), [0.02, 0.04, 0.04, 0.02]);
    // 0.01, 0.02, 0.05 (m = 3): 0.03, 0.03, 0.05.
    closeAll(adjustPValues([0.05, 0.01, 0.02], 'benjamini_hochberg'), [0.05, 0.03, 0.03]);
  });

  test('capped at 1; none is the identity; an empty family is empty', () => {
    closeAll(adjustPValues([0.6, 0.7], 'bonferroni'), [1, 1]);
    closeAll(adjustPValues([0.6, 0.7], 'holm'), [1, 1]);
    closeAll(adjustPValues(p, 'none'), p);
    assert.deepEqual(adjustPValues([], 'holm'), []);
  });

  const family = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 1, maxLength: 20 });

  test('property: raw ≤ BH ≤ Holm ≤ Bonferroni ≤ 1, and the order of the p-values is kept', () => {
    fc.assert(fc.property(family, (ps) => {
      const bh = adjustPValues(ps, 'benjamini_hochberg');
      const holm = adjustPValues(ps, 'holm');
      const bonferroni = adjustPValues(ps, 'bonferroni');
      ps.forEach((raw, i) => {
        assert.ok(raw <= (bh[i] as number) + 1e-15, 'raw ≤ BH');
        assert.ok((bh[i] as number) <= (holm[i] as number) + 1e-15, 'BH ≤ Holm');
        assert.ok((holm[i] as number) <= (bonferroni[i] as number) + 1e-15, 'Holm ≤ Bonferroni');
        assert.ok((bonferroni[i] as number) <= 1, '≤ 1');
        for (const [method, adjusted] of [['bh', bh], ['holm', holm]] as const) {
          ps.forEach((other, j) => {
            if (raw < other) assert.ok((adjusted[i] as number) <= (adjusted[j] as number), `${method} keeps the order`);
          });
        }
      });
    }), { numRuns: 300 });
  });
});

describe('adjusted interval level α\' = α·p/p_adj', () => {
  test('Bonferroni gives α/m; no correction gives α; p = 0 falls back to α/m', () => {
    assert.equal(adjustedAlpha(0.05, 0.01, 0.04, 4), 0.0125);
    assert.equal(adjustedAlpha(0.05, 0.01, 0.01, 4), 0.05);
    assert.equal(adjustedAlpha(0.05, 0, 0, 4), 0.0125);
  });

  test('property: p < α\' exactly when p_adj < α', () => {
    fc.assert(fc.property(fc.double({ min: 1e-12, max: 1, noNaN: true }), fc.double({ min: 1, max: 50, noNaN: true }), (p, factor) => {
      const adjusted = Math.min(1, p * factor);
      const level = adjustedAlpha(0.05, p, adjusted, 50);
      // Away from the boundary (rounding decides the tie itself).
      if (Math.abs(adjusted - 0.05) > 1e-12) assert.equal(p < level, adjusted < 0.05);
    }), { numRuns: 500 });
  });
});

describe('SRM warning', () => {
  test('warns below the threshold once every variant expects enough participants', () => {
    // 600/400 against 1:1: X² = (100² + 100²)/500 = 40 → p ≈ 2.5e-10.
    const p = srmPValue([600, 400], [1, 1]);
    assert.ok(p !== null && p < 1e-9);
    assert.equal(srmWarning([600, 400], [1, 1], p, 0.001, 5), true);
    assert.equal(srmWarning([500, 500], [1, 1], srmPValue([500, 500], [1, 1]), 0.001, 5), false);
    // 9/1 against 1:1: expected 5 each; X² = (16 + 16)/5 = 6.4, p = P(χ²₁ ≥ 6.4) = erfc(√3.2) ≈ 0.0114.
    const small = srmPValue([9, 1], [1, 1]);
    assert.ok(small !== null && small < 0.05);
    assert.equal(srmWarning([9, 1], [1, 1], small, 0.05, 5), true);
    assert.equal(srmWarning([9, 1], [1, 1], small, 0.05, 6), false, 'expected 5 < 6');
    assert.equal(srmWarning([9, 1], [1, 1], null, 0.05, 5), false);
  });

  test('a variant planned at weight 0 does not count against the minimum', () => {
    assert.equal(srmWarning([100, 100, 3], [1, 1, 0], srmPValue([100, 100, 3], [1, 1, 0]), 0.001, 5), true);
  });
});
