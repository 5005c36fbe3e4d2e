/**
 * Multiple-testing corrections of p-values, as statsmodels' `multipletests` computes them
 * (`bonferroni`, `holm`, `fdr_bh`), and the level at which an interval agrees with the corrected
 * p-value. docs/statistics.md §6.
 */
import type { MultipleTestingCorrection } from '@switchyard/core';

/**
 * Adjusted p-values, in the order of `pValues`, capped at 1:
 * - `bonferroni`: m·p (Bonferroni; Dunn, JASA 56, 1961).
 * - `holm`: with p₍₁₎ ≤ … ≤ p₍ₘ₎, p̃₍ᵢ₎ = max_{j ≤ i} (m − j + 1)·p₍ⱼ₎ (Holm, "A simple sequentially
 *   rejective multiple test procedure", Scand. J. Statist. 6, 1979).
 * - `benjamini_hochberg`: p̃₍ᵢ₎ = min_{j ≥ i} m·p₍ⱼ₎/j (Benjamini & Hochberg, JRSS B 57, 1995; the
 *   adjusted-p form of Yekutieli & Benjamini 1999).
 * - `none`: the p-values themselves.
 * Ties keep their input order (a stable sort), which cannot change the result of either step-wise
 * method: tied p-values get equal adjusted values.
 */
export function adjustPValues(pValues: readonly number[], method: MultipleTestingCorrection): number[] {
  const m = pValues.length;
  if (method === 'none') return [...pValues];
  if (method === 'bonferroni') return pValues.map((p) => Math.min(1, m * p));
  const order = pValues.map((p, i) => ({ p, i })).sort((a, b) => a.p - b.p);
  const adjusted = new Array<number>(m).fill(0);
  if (method === 'holm') {
    let running = 0;
    order.forEach(({ p, i }, rank) => {
      running = Math.max(running, (m - rank) * p);
      adjusted[i] = Math.min(1, running);
    });
    return adjusted;
  }
  let running = Number.POSITIVE_INFINITY;
  for (let rank = m - 1; rank >= 0; rank--) {
    const { p, i } = order[rank] as { p: number; i: number };
    running = Math.min(running, (m * p) / (rank + 1));
    adjusted[i] = Math.min(1, running);
  }
  return adjusted;
}

/**
 * The level α' of an interval that excludes the null exactly when the corrected p-value is below
 * α: a test rejects at level α' iff p < α', and p_adj < α ⇔ p < α·p/p_adj, so α' = α·p/p_adj
 * (p > 0). When p = 0 (underflow) α' = α/m, Bonferroni's level. Without a correction α' = α.
 *
 * @param familySize m, the number of p-values corrected together
 */
export function adjustedAlpha(alpha: number, p: number, adjustedP: number, familySize: number): number {
  if (p === 0 || adjustedP === 0) return alpha / Math.max(1, familySize);
  return (alpha * p) / adjustedP;
}
