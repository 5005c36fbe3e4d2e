#!/usr/bin/python3
"""Generate the experiment-statistics reference fixtures (welch.json, srm.json) with SciPy.

Run with Debian's interpreter, which is the one `apt-get install python3-scipy` installs into:

    apt-get update && apt-get install -y python3-scipy
    /usr/bin/python3 packages/stats/test-vectors/generate_fixtures.py

Use /usr/bin/python3 explicitly: the `python3` on PATH may be a pyenv shim without SciPy.
Generated with SciPy 1.10.1 / NumPy 1.24.2 (Debian 12); the versions are written into the JSON.

These values are the independent reference for packages/stats/src (which uses stdlib-js's
Boost-derived incomplete beta/gamma and its own root finder); SciPy uses Cephes and its own
`ttest_ind`/`chisquare`. What comes from where:

- t and p: `scipy.stats.ttest_ind(treatment, control, equal_var=False)` on raw samples, or
  `scipy.stats.ttest_ind_from_stats(..., equal_var=False)` on summaries (SciPy 1.10's two-sided p
  is `2 * stdtr(df, -|t|)`, the symmetric form, so tiny p-values keep full relative precision).
- df: the Welch-Satterthwaite formula, cross-checked against SciPy's own private helper.
- 95% CI: diff -/+ q * se with q = scipy.stats.t.ppf(0.975, df). SciPy 1.10's `stdtrit` (CDFLIB)
  stops at a relative tolerance of ~1e-8 (errors up to 3.6e-9 seen in these cases), too loose for a 1e-9
  contract, so q is polished with `scipy.optimize.brentq` on Cephes' accurate tail
  `stdtr(df, -x) = 0.025` down to brentq's minimum relative tolerance (4 eps). The raw
  `t.ppf` value is kept as `t_quantile_scipy_ppf` for the record.
- SRM: `scipy.stats.chisquare(observed, expected_counts)` (Pearson, no continuity correction),
  expected counts = total * weight / sum(weights), df = k - 1; p is Cephes' upper tail `chdtrc`.

Floats are written with Python's repr (shortest round-trip), so JSON.parse recovers each double.
"""
import json
import math
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy
from scipy import optimize, special, stats

OUT = Path(__file__).resolve().parent
ALPHA_TAIL = 0.025  # two-sided 95%: each tail holds 2.5%
RNG = np.random.default_rng(20240607)


def polished_t_quantile(df):
    """Upper 2.5% point of Student's t with `df` degrees of freedom, to full double precision."""
    q0 = float(stats.t.ppf(1 - ALPHA_TAIL, df))
    f = lambda x: float(special.stdtr(df, -x)) - ALPHA_TAIL
    hi = max(2.0 * q0, 16.0)
    while f(hi) > 0:
        hi *= 2.0
    q = optimize.brentq(f, 1.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)
    return q, q0


def welch_df(var_a, n_a, var_b, n_b):
    va, vb = var_a / n_a, var_b / n_b
    return (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))


def summary_of(x):
    x = np.asarray(x, dtype=float)
    return {"n": int(x.size), "mean": float(np.mean(x)), "variance": float(np.var(x, ddof=1))}


def sums_of(x):
    x = np.asarray(x, dtype=float)
    # fsum rounds once, so these are the correctly rounded sums SQL's exact numeric would give.
    return {"n": int(x.size), "sum": math.fsum(x), "sum_of_squares": math.fsum(x * x)}


def expected_welch(control, treatment, raw=None):
    """Expected outputs for the test of treatment against control, or None if not computable."""
    na, nb = control["n"], treatment["n"]
    if na < 2 or nb < 2 or (control["variance"] == 0 and treatment["variance"] == 0):
        return None
    if raw is not None:
        with warnings.catch_warnings():
            # A constant side (all 0 or all 1 conversions) trips SciPy's "nearly identical data"
            # warning; its variance is exactly 0 and the test is still well defined.
            warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
            res = stats.ttest_ind(raw[1], raw[0], equal_var=False)
    else:
        res = stats.ttest_ind_from_stats(
            treatment["mean"], math.sqrt(treatment["variance"]), nb,
            control["mean"], math.sqrt(control["variance"]), na, equal_var=False)
    t, p = float(res.statistic), float(res.pvalue)
    df = welch_df(control["variance"], na, treatment["variance"], nb)
    df_scipy, _ = stats._stats_py._unequal_var_ttest_denom(
        treatment["variance"], nb, control["variance"], na)
    assert math.isclose(df, float(df_scipy), rel_tol=1e-13), (df, df_scipy)
    diff = treatment["mean"] - control["mean"]
    se = math.sqrt(control["variance"] / na + treatment["variance"] / nb)
    assert math.isclose(t, diff / se, rel_tol=1e-12, abs_tol=1e-300), (t, diff / se)
    q, q0 = polished_t_quantile(df)
    return {
        "t": t, "df": df, "p_value": p, "diff": diff, "std_err": se,
        "ci_low": diff - q * se, "ci_high": diff + q * se,
        "t_quantile": q, "t_quantile_scipy_ppf": q0,
    }


def stats_case(name, control, treatment):
    return {"name": name, "control": control, "treatment": treatment,
            "expected": expected_welch(control, treatment)}


def raw_case(name, xa, xb, with_sums=True):
    control, treatment = summary_of(xa), summary_of(xb)
    case = {"name": name, "control": control, "treatment": treatment}
    if with_sums:
        case["sums"] = {"control": sums_of(xa), "treatment": sums_of(xb)}
    case["expected"] = expected_welch(control, treatment, raw=(xa, xb))
    return case


def bool_case(name, k_a, n_a, k_b, n_b):
    """Conversions: each participant is 1 (converted) or 0; the t-test runs on the raw 0/1 data."""
    xa = np.concatenate([np.ones(k_a), np.zeros(n_a - k_a)])
    xb = np.concatenate([np.ones(k_b), np.zeros(n_b - k_b)])
    control = summary_of(xa) if n_a >= 2 else {"n": n_a, "mean": k_a / n_a if n_a else 0.0, "variance": 0.0}
    treatment = summary_of(xb)
    case = {"name": name,
            "conversions": {"control": {"n": n_a, "conversions": k_a},
                            "treatment": {"n": n_b, "conversions": k_b}},
            "control": control, "treatment": treatment}
    computable = n_a >= 2 and n_b >= 2 and (control["variance"] > 0 or treatment["variance"] > 0)
    case["expected"] = expected_welch(control, treatment, raw=(xa, xb)) if computable else None
    return case


def s(n, mean, variance):
    return {"n": n, "mean": mean, "variance": variance}


def welch_cases():
    c = []
    # Small n.
    c.append(stats_case("n=2 vs n=2", s(2, 10.0, 2.0), s(2, 13.5, 4.5)))
    c.append(stats_case("n=3 vs n=3", s(3, 1.0, 0.25), s(3, 1.8, 0.49)))
    c.append(stats_case("n=2 vs n=3, unequal variances", s(2, 5.0, 8.0), s(3, 7.25, 0.5)))
    c.append(raw_case("raw normal n=20 vs n=25", RNG.normal(10, 2, 20), RNG.normal(11, 2.5, 25)))
    # Equal and unequal variances at moderate n.
    c.append(stats_case("equal variances n=50", s(50, 3.2, 1.7), s(50, 3.6, 1.7)))
    c.append(stats_case("unequal variances 1 vs 100", s(30, 0.0, 1.0), s(40, 4.0, 100.0)))
    c.append(raw_case("raw exponential revenue n=200 vs n=300",
                      RNG.exponential(40.0, 200), RNG.exponential(46.0, 300)))
    # Large n.
    c.append(raw_case("raw normal n=100000 vs n=100000", RNG.normal(0.0, 1.0, 100_000),
                      RNG.normal(0.01, 1.0, 100_000)))
    c.append(stats_case("large n unequal n and variances", s(200_000, 12.5, 30.0), s(150_000, 12.55, 45.0)))
    c.append(stats_case("n=1000000 each", s(1_000_000, 0.52, 0.2496), s(1_000_000, 0.5205, 0.24959975)))
    # Very different n: df collapses towards the small side.
    c.append(stats_case("n=5 vs n=100000", s(5, 20.0, 16.0), s(100_000, 21.0, 15.0)))
    c.append(stats_case("n=3 with big variance vs n=100000, df near 2", s(3, 100.0, 900.0), s(100_000, 90.0, 1.0)))
    c.append(stats_case("n=2 with huge variance vs n=50, df near 1", s(2, 0.0, 1e6), s(50, 30.0, 1.0)))
    # One variance zero: Welch still works (df = the other side's n - 1).
    c.append(stats_case("control variance zero", s(10, 4.0, 0.0), s(12, 4.5, 2.5)))
    c.append(stats_case("treatment variance zero", s(15, 7.0, 3.0), s(8, 6.0, 0.0)))
    # Not computable.
    c.append(stats_case("both variances zero", s(10, 1.0, 0.0), s(10, 2.0, 0.0)))
    c.append(stats_case("control n=1", s(1, 3.0, 0.0), s(10, 3.5, 1.0)))
    c.append(stats_case("treatment n=1", s(10, 3.0, 1.0), s(1, 9.0, 0.0)))
    c.append(stats_case("control n=0", s(0, 0.0, 0.0), s(10, 3.5, 1.0)))
    # Bool metrics (conversions).
    c.append(bool_case("bool 120/1000 vs 150/1000", 120, 1000, 150, 1000))
    c.append(bool_case("bool 5000/100000 vs 5300/100000", 5000, 100_000, 5300, 100_000))
    c.append(bool_case("bool 1/3 vs 2/3", 1, 3, 2, 3))
    c.append(bool_case("bool 0/50 vs 5/50 (control variance zero)", 0, 50, 5, 50))
    c.append(bool_case("bool 50/50 vs 45/50 (control all converted)", 50, 50, 45, 50))
    c.append(bool_case("bool 0/40 vs 0/60 (no conversions anywhere)", 0, 40, 0, 60))
    c.append(bool_case("bool n=1 control", 1, 1, 3, 10))
    c.append(bool_case("bool 30000/200000 vs 40000/250000, very small p", 30_000, 200_000, 40_000, 250_000))
    # Tail behaviour.
    c.append(stats_case("tiny p near 1e-30", s(100_000, 0.0, 1.0), s(100_000, 0.05, 1.0)))
    c.append(stats_case("tiny p near 1e-100", s(100_000, 0.0, 1.0), s(100_000, 0.0953, 1.0)))
    c.append(stats_case("tiny p near 1e-250", s(100_000, 0.0, 1.0), s(100_000, 0.151, 1.0)))
    c.append(stats_case("huge t with df near 4", s(3, 0.0, 1.0), s(3, 1000.0, 1.0)))
    c.append(stats_case("p close to 1", s(500, 10.0, 4.0), s(500, 10.000001, 4.0)))
    c.append(stats_case("identical means, t=0, p=1", s(40, 2.5, 1.0), s(60, 2.5, 3.0)))
    # Sign and scale.
    c.append(stats_case("negative difference", s(80, 50.0, 100.0), s(70, 46.0, 120.0)))
    c.append(raw_case("raw negative-valued metric", RNG.normal(-5.0, 3.0, 150), RNG.normal(-5.8, 2.0, 120)))
    c.append(stats_case("large scale: mean 1e6, variance 1e-2", s(25, 1e6, 1e-2), s(30, 1e6 + 0.01, 2e-2)))
    c.append(stats_case("small scale: mean 1e-8, variance 1e-18", s(25, 1e-8, 1e-18), s(30, 1.2e-8, 3e-18)))
    return c


def srm_case(name, observed, weights):
    observed = [int(o) for o in observed]
    total = sum(observed)
    if len(observed) < 2 or total == 0:
        expected = None
    else:
        w = np.asarray(weights, dtype=float)
        f_exp = total * w / w.sum()
        res = stats.chisquare(np.asarray(observed, dtype=float), f_exp)
        expected = {"chi_squared": float(res.statistic), "df": len(observed) - 1, "p_value": float(res.pvalue)}
    return {"name": name, "observed": observed, "weights": weights, "expected": expected}


def srm_cases():
    return [
        srm_case("2 groups exactly balanced", [5000, 5000], [500, 500]),
        srm_case("2 groups nearly balanced", [5050, 4950], [500, 500]),
        srm_case("2 groups mildly imbalanced", [10200, 9800], [500, 500]),
        srm_case("2 groups imbalanced, p near 1e-17", [10600, 9400], [500, 500]),
        srm_case("2 groups strongly imbalanced, p near 1e-30", [26280, 23720], [500, 500]),
        srm_case("2 groups deep tail, p near 1e-111", [27500, 22500], [500, 500]),
        srm_case("2 groups small counts", [3, 7], [500, 500]),
        srm_case("2 groups uneven plan 20/80, on plan", [2000, 8000], [200, 800]),
        srm_case("2 groups uneven plan 20/80, off plan", [2150, 7850], [200, 800]),
        srm_case("2 groups uneven plan hit as if 50/50 (p underflows to 0)", [5000, 5000], [200, 800]),
        srm_case("3 groups balanced", [1000, 1010, 990], [333, 333, 334]),
        srm_case("3 groups imbalanced", [1000, 1100, 900], [333, 333, 334]),
        srm_case("3 groups uneven plan 50/30/20", [5030, 2980, 1990], [500, 300, 200]),
        srm_case("3 groups uneven plan 50/30/20, off plan", [5400, 2800, 1800], [500, 300, 200]),
        srm_case("3 groups p near 1e-30", [10900, 9800, 9300], [1, 1, 1]),
        srm_case("subset of a 3-way flag (weights do not sum to 1000)", [3400, 3300], [333, 333]),
        srm_case("4 groups", [2510, 2490, 2475, 2525], [250, 250, 250, 250]),
        srm_case("5 groups uneven", [1500, 1450, 3100, 2000, 1950], [150, 150, 300, 200, 200]),
        srm_case("p close to 1", [100001, 99999], [500, 500]),
        srm_case("one group only", [1234], [1000]),
        srm_case("no participants", [0, 0], [500, 500]),
    ]


def main():
    meta = {
        "generator": "packages/stats/test-vectors/generate_fixtures.py",
        "python": f"{sys.executable} {platform.python_version()}",
        "scipy": scipy.__version__,
        "numpy": np.__version__,
    }
    welch = {**meta, "confidence_level": 0.95, "cases": welch_cases()}
    srm = {**meta, "cases": srm_cases()}
    for name, doc in (("welch.json", welch), ("srm.json", srm)):
        with open(OUT / name, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2, allow_nan=False)
            fh.write("\n")
        print(f"{name}: {len(doc['cases'])} cases")


if __name__ == "__main__":
    main()
