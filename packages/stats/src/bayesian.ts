/**
 * The Bayesian engine (docs/statistics.md §12): a Gaussian conjugate model on the absolute or
 * relative effect (as gbstats' `EffectBayesianABTest`; Gelman et al., "Bayesian Data Analysis",
 * 3rd ed., §2.5, the normal model with known variance), with chance to win, a credible interval
 * and the expected losses in closed form.
 */
import type { MetricDirection } from '@switchyard/core';
import type { NormalEstimate } from './sequential.ts';
import { normalCdf, normalPdf, normalUpperQuantile } from './normal.ts';

/** A proper prior N(mean, sd²) on the effect, on the scale of the effect analysed. */
export interface GaussianPrior {
  mean: number;
  sd: number;
}

export interface BayesianSettings {
  /** The credible interval is the central 1 − α one. */
  alpha: number;
  /** `decrease`: winning means a lower value. */
  direction: MetricDirection;
  /** null: the improper flat prior. */
  prior: GaussianPrior | null;
}

export interface BayesianResult {
  /** Posterior mean and sd of the effect Δ. */
  mean: number;
  sd: number;
  /** P(the treatment is better): P(Δ > 0) for `increase`, P(Δ < 0) for `decrease`. */
  chance_to_win: number;
  ci_low: number;
  ci_high: number;
  /** E[max(g, 0)], g the gain in the good direction (Δ, or −Δ for `decrease`): the expected loss of keeping the control. */
  risk_control: number;
  /** E[max(−g, 0)]: the expected loss of shipping the treatment. */
  risk_treatment: number;
}

/**
 * 1. Likelihood Δ̂ ~ N(Δ, V). Flat prior: posterior N(Δ̂, V). Prior N(m, s²): posterior precision
 *    1/V + 1/s², mean (Δ̂/V + m/s²)/precision.
 * 2. With posterior N(μ, σ²) and the gain g = ±Δ (sign by direction, so g ~ N(μg, σ²)):
 *    chance to win = Φ(μg/σ); interval μ ∓ z_{1−α/2}·σ; E[max(g, 0)] = μg·Φ(μg/σ) + σ·φ(μg/σ) and
 *    E[max(−g, 0)] = −μg·Φ(−μg/σ) + σ·φ(μg/σ) (the mean of a rectified normal; their difference is μg).
 *    For |μg/σ| > 37 Φ is 0 or 1 and φ underflows, so they reduce to max(±μg, 0) — the same formula.
 * Null when V ≤ 0 or an input is not finite (no data to update on).
 * @throws RangeError for a prior sd ≤ 0 (a caller bug)
 */
export function bayesianEffect(data: NormalEstimate, settings: BayesianSettings): BayesianResult | null {
  const { estimate, variance } = data;
  if (!(variance > 0) || !Number.isFinite(estimate) || !Number.isFinite(variance)) return null;
  let mean = estimate;
  let posteriorVariance = variance;
  if (settings.prior !== null) {
    const { mean: m, sd } = settings.prior;
    if (!(sd > 0) || !Number.isFinite(m)) throw new RangeError(`bayesianEffect: prior sd ${sd} must be positive`);
    const priorVariance = sd * sd;
    const precision = 1 / variance + 1 / priorVariance;
    mean = (estimate / variance + m / priorVariance) / precision;
    posteriorVariance = 1 / precision;
  }
  const sd = Math.sqrt(posteriorVariance);
  const gain = settings.direction === 'increase' ? mean : -mean;
  const x = gain / sd;
  const density = sd * normalPdf(x);
  const q = normalUpperQuantile(settings.alpha / 2);
  return {
    mean,
    sd,
    chance_to_win: normalCdf(x),
    ci_low: mean - q * sd,
    ci_high: mean + q * sd,
    risk_control: Math.max(0, gain * normalCdf(x) + density),
    risk_treatment: Math.max(0, -gain * normalCdf(-x) + density),
  };
}
