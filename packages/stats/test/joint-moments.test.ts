import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { JointMoments } from '@switchyard/core';
import { emptyJointMoments, jointCovariance, jointMean, jointMomentsFromRows, jointVariance, mergeJointMoments } from '../src/index.ts';

function assertClose(actual: JointMoments, expected: JointMoments, what: string): void {
  assert.equal(actual.n, expected.n, `${what}: n`);
  // Scale of the data: co-moments are compared relative to the diagonal they are bounded by
  // (Cauchy–Schwarz), means relative to their size, each with a few hundred ulps of room.
  actual.means.forEach((mean, i) => {
    const e = expected.means[i] as number;
    assert.ok(Math.abs(mean - e) <= 1e-12 * (1 + Math.abs(e)), `${what}: mean ${i} ${mean} vs ${e}`);
  });
  actual.comoments.forEach((line, i) => line.forEach((value, j) => {
    const e = (expected.comoments[i] as number[])[j] as number;
    const scale = Math.sqrt(Math.abs(((expected.comoments[i] as number[])[i] as number) * ((expected.comoments[j] as number[])[j] as number))) + 1;
    assert.ok(Math.abs(value - e) <= 1e-11 * scale, `${what}: comoment ${i},${j} ${value} vs ${e}`);
  }));
}

describe('joint moments', () => {
  test('a hand-derived case: rows (1,2), (3,6), (5,7)', () => {
    // means (3, 5); deviations x: −2, 0, 2 and y: −3, 1, 2;
    // Σdx² = 8, Σdy² = 9 + 1 + 4 = 14, Σdx·dy = 6 + 0 + 4 = 10; n − 1 = 2.
    const m = jointMomentsFromRows([[1, 2], [3, 6], [5, 7]]);
    assert.deepEqual(m, { n: 3, means: [3, 5], comoments: [[8, 10], [10, 14]] });
    assert.equal(jointMean(m, 1), 5);
    assert.equal(jointVariance(m, 0), 4);
    assert.equal(jointVariance(m, 1), 7);
    assert.equal(jointCovariance(m, 0, 1), 5);
  });

  test('merging a split of the same rows gives the same moments (Chan et al.)', () => {
    // (1,2) alone: mean (1,2), co-moments 0. (3,6),(5,7): mean (4, 6.5), Σdx² = 2, Σdy² = 0.5, Σdxdy = 1.
    // δ = (3, 4.5), nA·nB/n = 2/3: C_xx = 0 + 2 + 9·2/3 = 8, C_yy = 0.5 + 20.25·2/3 = 14, C_xy = 1 + 13.5·2/3 = 10.
    const merged = mergeJointMoments(jointMomentsFromRows([[1, 2]]), jointMomentsFromRows([[3, 6], [5, 7]]));
    assert.deepEqual(merged, { n: 3, means: [3, 5], comoments: [[8, 10], [10, 14]] });
  });

  test('empty moments are the identity of the merge; fewer than 2 participants have variance 0', () => {
    const m = jointMomentsFromRows([[1, 2], [3, 6]]);
    assert.deepEqual(mergeJointMoments(emptyJointMoments(2), m), m);
    assert.deepEqual(mergeJointMoments(m, emptyJointMoments(2)), m);
    assert.deepEqual(jointMomentsFromRows([], 2), emptyJointMoments(2));
    assert.equal(jointVariance(jointMomentsFromRows([[4, 1]]), 0), 0);
    assert.throws(() => jointMomentsFromRows([[1, 2], [3]]), RangeError);
    assert.throws(() => mergeJointMoments(emptyJointMoments(1), emptyJointMoments(2)), RangeError);
  });

  const row = fc.array(fc.double({ min: -1e3, max: 1e3, noNaN: true }), { minLength: 3, maxLength: 3 });
  const rows = fc.array(row, { maxLength: 12 });

  test('property: merge(A, B) equals the moments of the concatenated rows', () => {
    fc.assert(fc.property(rows, rows, (a, b) => {
      assertClose(mergeJointMoments(jointMomentsFromRows(a, 3), jointMomentsFromRows(b, 3)), jointMomentsFromRows([...a, ...b], 3), 'merge');
    }), { numRuns: 200 });
  });

  test('property: the merge is associative and commutative', () => {
    fc.assert(fc.property(rows, rows, rows, (a, b, c) => {
      const [ma, mb, mc] = [a, b, c].map((r) => jointMomentsFromRows(r, 3)) as [JointMoments, JointMoments, JointMoments];
      const left = mergeJointMoments(mergeJointMoments(ma, mb), mc);
      assertClose(left, mergeJointMoments(ma, mergeJointMoments(mb, mc)), 'associative');
      assertClose(left, mergeJointMoments(mc, mergeJointMoments(mb, ma)), 'commutative');
    }), { numRuns: 200 });
  });
});
