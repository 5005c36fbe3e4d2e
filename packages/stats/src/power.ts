/**
 * Power and duration for a two-arm comparison of means (docs/statistics.md §14), fixed-horizon
 * and always-valid, with CUPED's expected variance reduction. Normal approximation throughout
 * (the samples in question are large), as statsmodels' `NormalIndPower` (Chow, Shao & Wang,
 * "Sample Size Calculations in Clinical Research", 2nd ed., 2008, §3.2).
 */
import { findRootBracketed } from './find-root.ts';
import { normalCdf, normalUpperQuantile } from './normal.ts';
import { boundaryInStandardErrors, mixingRho2 } from './sequential.ts';

export interface PowerSettings {
  /** The control mean, for the relative MDE (from a past window of events, or given by hand). */
  mean: number;
  /** The metric's per-unit variance (n − 1), the same in both arms. */
  variance: number;
  /** The minimum detectable effect relative to the mean, e.g. 0.02 for 2 %; its sign does not matter. */
  mde: number;
  alpha: number;
  /** The target power (sampleSizePerArm), e.g. 0.8. */
  power: number;
  sides: 'two' | 'one';
  /** CUPED's expected R² = ρ², the squared correlation of the metric with its pre-exposure value; 0 without CUPED. */
  cupedR2: number;
  /** Always-valid test (§9) with this N*; null: fixed horizon. */
  sequential: { tuningN: number } | null;
}

/**
 * The critical value in standard errors of the test at a look with `total` participants in the two
 * arms: z_{1−α/2} (two-sided) or z_{1−α} fixed; the confidence sequence's boundary b(r), r =
 * total·ρ² (§9) sequential.
 */
function criticalValue(settings: PowerSettings, total: number): number {
  if (settings.sequential === null) return normalUpperQuantile(settings.sides === 'two' ? settings.alpha / 2 : settings.alpha);
  const r = total * mixingRho2(settings.alpha, settings.sequential.tuningN, settings.sides);
  return boundaryInStandardErrors(settings.alpha, r, settings.sides);
}

/** The absolute effect |mde·mean| and the adjusted per-unit variance σ²(1 − ρ²); null when not usable. */
function effectAndVariance(settings: PowerSettings): { effect: number; variance: number } | null {
  const effect = Math.abs(settings.mde * settings.mean);
  const variance = settings.variance * (1 - settings.cupedR2);
  if (!(effect > 0) || !(variance > 0) || !Number.isFinite(effect) || !Number.isFinite(variance)) return null;
  if (!(settings.cupedR2 >= 0 && settings.cupedR2 < 1)) return null;
  return { effect, variance };
}

/**
 * The power at `nControl` and `nTreatment` participants: with se = √(σ²(1 − ρ²)(1/n_C + 1/n_T)),
 * δ = |mde·mean| and c the critical value above,
 *   two-sided: Φ(δ/se − c) + Φ(−δ/se − c);  one-sided: Φ(δ/se − c)
 * (statsmodels `NormalIndPower.power` for the fixed test). Sequential: the chance that the
 * confidence sequence excludes 0 AT this sample — a lower bound on the power of watching all
 * along, since an earlier look may also have rejected (as GrowthBook's power calculator assumes a
 * single look; docs/statistics.md §14). Null when the inputs are not usable.
 */
export function powerAt(settings: PowerSettings, nControl: number, nTreatment: number): number | null {
  const usable = effectAndVariance(settings);
  if (usable === null || !(nControl > 0 && nTreatment > 0)) return null;
  const se = Math.sqrt(usable.variance * (1 / nControl + 1 / nTreatment));
  const c = criticalValue(settings, nControl + nTreatment);
  const d = usable.effect / se;
  return settings.sides === 'two' ? normalCdf(d - c) + normalCdf(-d - c) : normalCdf(d - c);
}

export interface SampleSize {
  /** The real n per arm at which the power reaches the target. */
  exact: number;
  /** ⌈exact⌉. */
  per_arm: number;
}

/**
 * The sample per arm (equal arms) reaching `power`:
 * 1. Fixed: start from the closed form n₀ = 2σ²(z_{1−α/2} + z_{power})²/δ² (one-sided: z_{1−α}),
 *    which ignores the far tail; then solve powerAt(n, n) = power by Brent's method on
 *    [n₀/2, n₀] — the far tail only lowers n, by a hair (statsmodels `solve_power` solves the same
 *    equation numerically).
 * 2. Sequential: the boundary b(r) is ≥ the fixed critical value at every n (the sequence is also
 *    valid at a single look), so the fixed n₀ brackets from below; double until the power is
 *    reached, then Brent.
 * Null when the inputs are not usable or power ∉ (α, 1) (two-sided α/2).
 */
export function sampleSizePerArm(settings: PowerSettings): SampleSize | null {
  const usable = effectAndVariance(settings);
  const floor = settings.sides === 'two' ? settings.alpha / 2 : settings.alpha;
  if (usable === null || !(settings.power > floor && settings.power < 1)) return null;
  const zAlpha = normalUpperQuantile(floor);
  const zPower = normalUpperQuantile(1 - settings.power);
  const closedForm = (2 * usable.variance * (zAlpha + zPower) ** 2) / (usable.effect * usable.effect);
  const gap = (n: number): number => (powerAt(settings, n, n) as number) - settings.power;
  let lo = settings.sequential === null ? closedForm / 2 : closedForm;
  let hi = closedForm;
  while (gap(lo) > 0) lo /= 2;
  while (gap(hi) < 0) {
    lo = hi;
    hi *= 2;
    if (!Number.isFinite(hi)) return null;
  }
  const exact = findRootBracketed(gap, lo, hi);
  return { exact, per_arm: Math.ceil(exact) };
}

/**
 * Days to enrol `perArm` participants in each of `arms` arms at `exposuresPerDay` new participants
 * a day entering the experiment (all arms together, split equally): perArm·arms/rate, not rounded.
 * Null when the rate is not positive.
 */
export function durationDays(perArm: number, arms: number, exposuresPerDay: number): number | null {
  if (!(exposuresPerDay > 0) || !(perArm >= 0) || !(arms >= 1)) return null;
  return (perArm * arms) / exposuresPerDay;
}
