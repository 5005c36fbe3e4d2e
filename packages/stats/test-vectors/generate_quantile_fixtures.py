#!/usr/bin/env python3
"""Generate quantile.json: the reference fixtures of quantile metrics (docs/statistics.md §15).

    python3 packages/stats/test-vectors/generate_quantile_fixtures.py

Every expected value is computed here from definitions with NumPy and SciPy, never from
packages/stats:

- the point estimate: X_(ceil(n p)) with ceil(n p) computed exactly in fractions of the decimal p,
  asserted equal to numpy.quantile(values, p, method="inverted_cdf") (the smallest value whose
  empirical CDF reaches p) except where n p is a decimal integer that binary floating point
  rounds up (100 x 0.07), where NumPy takes the next value;
- z = scipy.stats.norm.ppf(1 - alpha/2);
- outer ranks (Deng, Knoblich & Lu, KDD 2018, quantile metrics): L = floor(n p - z sqrt(n s2)),
  U = ceil(n p + z sqrt(n s2)) clamped to [1, n], with s2 = p (1 - p) for independent values and,
  for events clustered in participants, s2 = N * Var(sum S / sum N) by the delta method with
  NumPy's sample (co)variances (ddof=1) of S_i (events <= the estimate) and N_i (events) per
  participant. The exact binomial ranks (scipy.stats.binom.ppf) are recorded beside the normal
  ones for comparison and asserted within 2 of them for n >= 100;
- the order statistics: numpy.sort(values)[rank - 1];
- comparisons: se = (X_(U) - X_(L)) / (2 z) per arm, difference and delta-method relative
  difference, p = 2 norm.sf(|estimate / se|), interval estimate -+ norm.ppf(1 - alpha/2) se.
"""
import json
import math
import os
from fractions import Fraction

import numpy as np
from scipy.stats import binom, norm

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quantile.json")
rng = np.random.default_rng(20261128)


def ceil_np(n, p):
    return max(1, min(n, math.ceil(Fraction(n) * Fraction(str(p)))))


def outer(n, p, z, s2):
    half = z * math.sqrt(max(0.0, s2) * n)
    np_ = float(Fraction(n) * Fraction(str(p)))
    lo = max(1, min(n, math.floor(np_ - half)))
    hi = max(1, min(n, math.ceil(np_ + half)))
    return lo, hi


def point(values, p):
    xs = np.sort(np.asarray(values, dtype=float))
    numpy_estimate = float(np.quantile(xs, p, method="inverted_cdf"))
    rank = ceil_np(len(xs), p)
    estimate = float(xs[rank - 1])
    # NumPy takes ceil(n p) in binary floating point: 100 x 0.07 = 7.000000000000001 gives rank 8
    # (PostgreSQL's percentile_disc too). The engine takes the decimal p as written (rank 7); the
    # two may differ only where n p is an exact decimal integer.
    if float(len(xs) * p) == float(Fraction(len(xs)) * Fraction(str(p))):
        assert numpy_estimate == estimate, (rank, estimate, numpy_estimate)
    else:
        assert numpy_estimate == float(xs[rank]), (rank, numpy_estimate)
    return xs, estimate


def participant_case(name, values, p, alpha):
    z = float(norm.ppf(1 - alpha / 2))
    xs, estimate = point(values, p)
    n = len(xs)
    lo, hi = outer(n, p, z, p * (1 - p))
    exact = [int(binom.ppf(alpha / 2, n, p)), int(binom.ppf(1 - alpha / 2, n, p)) + 1]
    if n >= 100:
        assert abs(exact[0] - lo) <= 2 and abs(exact[1] - hi) <= 2, (name, lo, hi, exact)
    return {
        "name": name, "unit": "participant", "p": p, "alpha": alpha, "z": z, "values": [float(v) for v in values],
        "expected": {"n": n, "clusters": n, "estimate": estimate, "lowerRank": lo, "upperRank": hi,
                     "lower": float(xs[lo - 1]), "upper": float(xs[hi - 1]), "binomialRanks": exact},
    }


def event_case(name, clusters, p, alpha):
    z = float(norm.ppf(1 - alpha / 2))
    clusters = [list(map(float, c)) for c in clusters]
    with_events = [c for c in clusters if len(c) > 0]
    xs, estimate = point([v for c in with_events for v in c], p)
    n = len(xs)
    k = len(with_events)
    s = np.array([sum(1 for v in c if v <= estimate) for c in with_events], dtype=float)
    m = np.array([len(c) for c in with_events], dtype=float)
    if k >= 2:
        cov = np.cov(np.vstack([s, m]), ddof=1)
        ms, mn = s.mean(), m.mean()
        var_share = (cov[0, 0] / mn**2 - 2 * ms * cov[0, 1] / mn**3 + ms**2 * cov[1, 1] / mn**4) / k
        s2 = n * var_share
    else:
        s2 = 0.0
    lo, hi = outer(n, p, z, s2)
    return {
        "name": name, "unit": "event", "p": p, "alpha": alpha, "z": z, "clusters": clusters,
        "expected": {"n": n, "clusters": k, "estimate": estimate, "lowerRank": lo, "upperRank": hi,
                     "lower": float(xs[lo - 1]), "upper": float(xs[hi - 1]), "sigma2": s2},
    }


def comparison(name, control, treatment, alpha):
    """control / treatment: expected order statistics with z."""
    zc = control["z"]
    se_c = (control["upper"] - control["lower"]) / (2 * zc)
    se_t = (treatment["upper"] - treatment["lower"]) / (2 * zc)
    q = float(norm.ppf(1 - alpha / 2))
    out = {"name": name, "alpha": alpha, "control": control, "treatment": treatment}
    se = math.sqrt(se_c**2 + se_t**2)
    delta = treatment["estimate"] - control["estimate"]
    out["absolute"] = None if se == 0 else {
        "estimate": delta, "se": se, "p_value": float(2 * norm.sf(abs(delta / se))), "ci_low": delta - q * se, "ci_high": delta + q * se}
    c = control["estimate"]
    if se == 0 or c == 0:
        out["relative"] = None
    else:
        se_r = math.sqrt(se_t**2 / c**2 + treatment["estimate"] ** 2 * se_c**2 / c**4)
        r = delta / abs(c)
        out["relative"] = {"estimate": r, "se": se_r, "p_value": float(2 * norm.sf(abs(r / se_r))), "ci_low": r - q * se_r, "ci_high": r + q * se_r}
    return out


cases = []
for n in [1, 2, 5, 20, 100, 1000, 5000]:
    for p in [0.5, 0.9, 0.99]:
        for alpha in [0.05, 0.1]:
            cases.append(participant_case(f"normal n={n} p={p} alpha={alpha}", rng.normal(10, 3, n).round(6), p, alpha))
cases.append(participant_case("n*p an exact integer in decimals (100 x 0.07)", rng.normal(0, 1, 100).round(6), 0.07, 0.05))
cases.append(participant_case("n*p an exact integer in decimals (1000 x 0.29)", rng.normal(0, 1, 1000).round(6), 0.29, 0.05))
zeros = np.where(rng.random(2000) < 0.7, 0.0, rng.lognormal(3, 1, 2000).round(4))
for p in [0.5, 0.75, 0.9, 0.99]:
    cases.append(participant_case(f"lognormal revenue, 70% zeros, p={p}", zeros, p, 0.05))
cases.append(participant_case("integer counts with ties, p=0.5", rng.poisson(3, 500).astype(float), 0.5, 0.05))
cases.append(participant_case("negative values, p=0.1", -rng.exponential(5, 300).round(5), 0.1, 0.05))

def clustered(k, mean_events, scale, heavy):
    out = []
    for _ in range(k):
        count = 1 + int(rng.poisson(mean_events - 1)) if rng.random() < 0.9 else 0
        level = rng.lognormal(0, 1) if heavy else 1.0
        out.append(list((rng.exponential(scale * level, count)).round(5)))
    return out

for k in [1, 2, 10, 200, 2000]:
    for p in [0.5, 0.9]:
        cases.append(event_case(f"latencies k={k} p={p} (participant-level heterogeneity)", clustered(k, 4, 100, True), p, 0.05))
cases.append(event_case("one event per participant (reduces to the binomial with K/(K-1))", [[v] for v in rng.normal(50, 10, 400).round(4)], 0.5, 0.05))
cases.append(event_case("participants without events are left out", [[], [1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0], [7.0, 8.0, 9.0, 10.0]], 0.5, 0.1))
cases.append(event_case("heavy clustering, p=0.99", clustered(500, 10, 20, True), 0.99, 0.05))


def stats_of(case):
    return {**case["expected"], "z": case["z"]}


comparisons = []
pairs = [
    ("p50 normal, shifted by 0.5", rng.normal(10, 3, 3000), rng.normal(10.5, 3, 3000), 0.5, 0.05),
    ("p90 normal, no effect", rng.normal(10, 3, 2000), rng.normal(10, 3, 2000), 0.9, 0.05),
    ("p99 lognormal, heavier tail", rng.lognormal(3, 1, 5000), rng.lognormal(3, 1.1, 5000), 0.99, 0.1),
    ("p50 of mostly zeros: both quantiles 0, se 0", np.zeros(500), np.zeros(500), 0.5, 0.05),
    ("p75 revenue with zeros, control 0 (relative not computable)",
     np.where(rng.random(1000) < 0.8, 0.0, 5.0), np.where(rng.random(1000) < 0.7, 0.0, 5.0 + rng.random(1000)), 0.75, 0.05),
]
for name, c, t, p, alpha in pairs:
    cc = participant_case(name + " / control", np.round(c, 6), p, alpha)
    tt = participant_case(name + " / treatment", np.round(t, 6), p, alpha)
    comparisons.append(comparison(name, stats_of(cc), stats_of(tt), alpha))
ec = event_case("per-event p90 / control", clustered(600, 5, 100, True), 0.9, 0.05)
et = event_case("per-event p90 / treatment", clustered(600, 5, 90, True), 0.9, 0.05)
comparisons.append(comparison("per-event p90 latency, treatment 10% faster", stats_of(ec), stats_of(et), 0.05))

with open(OUT, "w") as f:
    json.dump({"generator": "generate_quantile_fixtures.py", "orderStatistics": cases, "comparisons": comparisons}, f, indent=1)
    f.write("\n")
print(f"wrote {OUT}: {len(cases)} order-statistic cases, {len(comparisons)} comparisons")
