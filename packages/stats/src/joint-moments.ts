/**
 * JointMoments (packages/core/src/experiments/analysis-model.ts): the mergeable mean vector and
 * co-moment matrix of k variables observed together on the same participants. The store builds
 * them in SQL; these builders serve tests and in-memory fakes, and the readers serve the engine.
 *
 * References:
 * - Chan, Golub & LeVeque, "Updating formulae and a pairwise algorithm for computing sample
 *   variances" (Stanford CS report STAN-CS-79-773, 1979) — the pairwise merge of M2 (their "pairwise algorithm").
 * - Pébay, "Formulas for robust, one-pass parallel computation of covariances and arbitrary-order
 *   statistical moments" (Sandia report SAND2008-6212, 2008) — the same merge for the
 *   co-moment Σ(x − x̄)(y − ȳ).
 */
import type { JointMoments } from '@switchyard/core';

/** No participants: n = 0, means and co-moments all 0. */
export function emptyJointMoments(k: number): JointMoments {
  return { n: 0, means: new Array<number>(k).fill(0), comoments: Array.from({ length: k }, () => new Array<number>(k).fill(0)) };
}

/**
 * The moments of raw rows, each row one participant's k values (every row the same length k).
 * Two passes (means first, then the centred cross products), the textbook-stable form
 * (Chan, Golub & LeVeque 1979, §1 "two-pass algorithm").
 *
 * @param k the number of variables; needed only when `rows` is empty
 * @throws RangeError when rows differ in length (a caller bug)
 */
export function jointMomentsFromRows(rows: readonly (readonly number[])[], k = rows[0]?.length ?? 0): JointMoments {
  const moments = emptyJointMoments(k);
  const n = rows.length;
  if (n === 0) return moments;
  for (const row of rows) {
    if (row.length !== k) throw new RangeError(`jointMomentsFromRows: a row of ${row.length} values, expected ${k}`);
    for (let i = 0; i < k; i++) moments.means[i] = (moments.means[i] as number) + (row[i] as number);
  }
  for (let i = 0; i < k; i++) moments.means[i] = (moments.means[i] as number) / n;
  for (const row of rows) {
    for (let i = 0; i < k; i++) {
      const di = (row[i] as number) - (moments.means[i] as number);
      const line = moments.comoments[i] as number[];
      for (let j = 0; j < k; j++) line[j] = (line[j] as number) + di * ((row[j] as number) - (moments.means[j] as number));
    }
  }
  moments.n = n;
  return moments;
}

/**
 * The moments of the union of two disjoint sets of participants, exactly (Chan et al. 1979,
 * Pébay 2008): with n = nA + nB and δ = meanB − meanA,
 *   mean = meanA + δ·nB/n,   C_ij = CA_ij + CB_ij + δ_i·δ_j·nA·nB/n.
 *
 * @throws RangeError when the two have different numbers of variables (a caller bug)
 */
export function mergeJointMoments(a: JointMoments, b: JointMoments): JointMoments {
  const k = a.means.length;
  if (b.means.length !== k) throw new RangeError(`mergeJointMoments: ${k} variables against ${b.means.length}`);
  if (b.n === 0) return cloneJointMoments(a);
  if (a.n === 0) return cloneJointMoments(b);
  const n = a.n + b.n;
  const delta = a.means.map((mean, i) => (b.means[i] as number) - mean);
  const weight = (a.n * b.n) / n;
  return {
    n,
    means: a.means.map((mean, i) => mean + ((delta[i] as number) * b.n) / n),
    comoments: a.comoments.map((line, i) =>
      line.map((value, j) => value + ((b.comoments[i] as number[])[j] as number) + (delta[i] as number) * (delta[j] as number) * weight)),
  };
}

/** Mean of variable `i`. */
export function jointMean(moments: JointMoments, i: number): number {
  return moments.means[i] ?? Number.NaN;
}

/** Sample covariance of variables `i` and `j` (n − 1 denominator); 0 below 2 participants. */
export function jointCovariance(moments: JointMoments, i: number, j: number): number {
  if (moments.n < 2) return 0;
  return ((moments.comoments[i] ?? [])[j] ?? Number.NaN) / (moments.n - 1);
}

/** Sample variance of variable `i` (n − 1 denominator), clamped at 0; 0 below 2 participants. */
export function jointVariance(moments: JointMoments, i: number): number {
  return Math.max(0, jointCovariance(moments, i, i));
}

function cloneJointMoments(m: JointMoments): JointMoments {
  return { n: m.n, means: [...m.means], comoments: m.comoments.map((line) => [...line]) };
}
