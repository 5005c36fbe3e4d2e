/**
 * A sequential sample-ratio-mismatch check (docs/statistics.md §11): the Dirichlet–multinomial
 * e-value of Lindon & Malek, "Anytime-valid inference for multinomial count data", NeurIPS 2022
 * (arXiv:2011.03567). Unlike Pearson's chi-squared (srm.ts), it may be recomputed at every look.
 */
import gammaln from '@stdlib/math-base-special-gammaln';

/** The prior's total concentration κ: Dirichlet(κ·p₀) centred on the planned split. */
export const DEFAULT_SRM_CONCENTRATION = 100;

/**
 * ln e of the Dirichlet–multinomial test of `observed` counts against the planned split p₀
 * (`weights` normalised), with a Dirichlet(κ·p₀) prior on the true split:
 *   e = [B(κp₀ + x)/B(κp₀)] / Π p₀ᵢ^{xᵢ},  ln B(a) = Σ ln Γ(aᵢ) − ln Γ(Σaᵢ),
 * the Bayes factor of the mixture against the plan (the multinomial coefficient cancels). Assigning
 * units one at a time, e is a nonnegative martingale under the plan with e₀ = 1 (Lindon & Malek
 * 2022), so P(sup e ≥ 1/α) ≤ α: reading it at the worker's looks only is a subset of times and
 * stays valid. The value depends on the counts only, not the order in which they came.
 * 1. Groups planned at weight 0 and empty are dropped; a weight-0 group with participants makes the
 *    mismatch certain: +∞ (as srmPValue's p = 0).
 * 2. The terms are summed per group, ln Γ(κp₀ᵢ + xᵢ) − ln Γ(κp₀ᵢ) − xᵢ ln p₀ᵢ, then the total's.
 *
 * @returns ln e, or null when there is nothing to test (fewer than 2 groups, a negative or
 *   non-finite count or weight, no positive weight)
 * @throws RangeError when the arrays differ in length or κ ≤ 0 (caller bugs)
 */
export function srmLogEValue(observed: readonly number[], weights: readonly number[], concentration = DEFAULT_SRM_CONCENTRATION): number | null {
  if (observed.length !== weights.length) throw new RangeError(`srmLogEValue: ${observed.length} counts but ${weights.length} weights`);
  if (!(concentration > 0)) throw new RangeError(`srmLogEValue: concentration ${concentration} must be positive`);
  const counts: number[] = [];
  const kept: number[] = [];
  for (let i = 0; i < observed.length; i++) {
    const count = observed[i] ?? Number.NaN;
    const weight = weights[i] ?? Number.NaN;
    if (!(count >= 0 && weight >= 0 && Number.isFinite(count) && Number.isFinite(weight))) return null;
    if (weight === 0) {
      if (count > 0) return Number.POSITIVE_INFINITY;
      continue;
    }
    counts.push(count);
    kept.push(weight);
  }
  const totalWeight = kept.reduce((a, b) => a + b, 0);
  if (counts.length < 2 || !(totalWeight > 0)) return null;
  let logE = 0;
  let total = 0;
  for (let i = 0; i < counts.length; i++) {
    const p = (kept[i] as number) / totalWeight;
    const x = counts[i] as number;
    const a = concentration * p;
    logE += gammaln(a + x) - gammaln(a) - (x === 0 ? 0 : x * Math.log(p));
    total += x;
  }
  return logE - (gammaln(concentration + total) - gammaln(concentration));
}

/** The persisted running state of the sequential SRM check. */
export interface SequentialSrmState {
  looks: number;
  /** max over the looks of ln e. */
  max_log_e_value: number;
  /** min(1, 1/max e): the always-valid p-value. */
  p_value: number;
}

/**
 * Folds one look's ln e (null: not computable, state unchanged) into the running state: the
 * always-valid p-value is 1/(running max of e), capped at 1 (Lindon & Malek 2022: p_t =
 * min(1, 1/max_{s≤t} e_s) is an anytime-valid p-value).
 */
export function advanceSrmState(state: SequentialSrmState | null, logE: number | null): SequentialSrmState | null {
  if (logE === null) return state;
  const max = state === null ? logE : Math.max(state.max_log_e_value, logE);
  return { looks: (state?.looks ?? 0) + 1, max_log_e_value: max, p_value: max <= 0 ? 1 : Math.exp(-max) };
}
