#!/usr/bin/env python3
"""Generate the reference fixtures of issue 39's statistics (docs/statistics.md §9-§14):

    sequential.json      always-valid confidence sequences and p-values (normal mixture)
    srm-sequential.json  the Dirichlet-multinomial SRM e-value (Lindon & Malek 2022)
    bayesian.json        the Gaussian conjugate engine (chance to win, credible interval, risks)
    guardrail.json       one-sided tests against a non-inferiority margin, fixed and sequential
    power.json           sample size per arm and power, fixed (statsmodels) and sequential

    python3 packages/stats/test-vectors/generate_sequential_fixtures.py [--gbstats DIR]

Every expected value is computed here from definitions, never from packages/stats:

- Mixture e-values by NUMERICAL INTEGRATION (scipy.integrate.quad) of the mixture of likelihood
  ratios, in standard-error units: e(z) = integral of exp(u z - u^2/2) N(u; 0, r) du over the real
  line (two-sided) or 2x over u >= 0 (one-sided, half-normal mixture), with r = n * rho^2 and rho^2
  GrowthBook's tuning (asserted equal to gbstats' `sequential_rho`). The boundary b with
  e(b) = 1/alpha by brentq on the integral. The closed forms are asserted to agree (1e-10).
- gbstats (MIT, not vendored; --gbstats DIR or GBSTATS_PATH=DIR, needs pydantic 2) as a second
  reference: SequentialTwoSidedTTest (two-sided CI and p), SequentialOneSided*TTest (recorded for
  comparison only: gbstats uses a wider closed-form bound and a capped p search, see README.md),
  EffectBayesianABTest (chance to win, CI, risk). Its effect moments are asserted equal to the
  estimates and variances written here.
- confseq (Howard et al.'s reference implementation, C++, MIT, not vendored; --confseq DIR names the
  directory holding its uniform_boundaries.h, and confseq_normal_mixture.cpp here is compiled
  against it with g++ and Debian's libboost-dev) as a third reference for the mixture: its
  `normal_log_mixture` and `normal_mixture_bound` with v = n, s = z*sqrt(n), v_opt = N*,
  alpha_opt = alpha (its best_rho is GrowthBook's rho, and its one-sided mixture is the half-normal
  one used here), asserted equal to the integrals (1e-9).
- SRM e-value: ln B(alpha + x) - ln B(alpha) - sum x ln p0 with scipy.special.gammaln, and for the
  small cases also as the product of the Polya-urn predictive probabilities over a sequence of
  single assignments (an independent formula).
- Bayesian risks by quad of max(+-g, 0) times the posterior density; chance to win norm.sf.
- Fixed-horizon guardrail tests: scipy.stats.t on the shifted t statistic, the bound from a
  polished t quantile (as generate_analysis_fixtures.py).
- Power: statsmodels NormalIndPower (solve_power and power) for the fixed test; for the sequential
  test, brentq on the power at the integrated boundary.

Debian's /usr/lib/python3/dist-packages goes FIRST on sys.path (NumPy 1.24, SciPy 1.10,
statsmodels 0.13, as generate_analysis_fixtures.py). Floats are written with repr.
"""
import sys

sys.path.insert(0, "/usr/lib/python3/dist-packages")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import statsmodels  # noqa: E402
from scipy import integrate, optimize, special, stats  # noqa: E402
from statsmodels.stats.power import NormalIndPower  # noqa: E402

OUT = Path(__file__).resolve().parent
GB = None
GB_INFO = None
GB_WORST = {"two-sided": (0.0, ""), "bayesian": (0.0, "")}
CONFSEQ = None  # path of the compiled driver
CONFSEQ_INFO = None
CONFSEQ_WORST = (0.0, "")


def load_confseq(path):
    """Compile confseq_normal_mixture.cpp against confseq's header in `path` (into a temp dir)."""
    global CONFSEQ, CONFSEQ_INFO
    if not path:
        return
    import tempfile
    out = Path(tempfile.mkdtemp()) / "confseq_normal_mixture"
    try:
        subprocess.run(["g++", "-O2", "-std=c++14", "-I", str(path), str(OUT / "confseq_normal_mixture.cpp"),
                        "-o", str(out)], check=True, capture_output=True, text=True)
    except Exception as e:  # noqa: BLE001
        print(f"confseq not usable from {path}: {e!r}; confseq fields will be null", file=sys.stderr)
        return
    CONFSEQ = out
    CONFSEQ_INFO = {"source": os.environ.get("CONFSEQ_SOURCE"),
                    "compiler": subprocess.run(["g++", "--version"], capture_output=True,
                                               text=True).stdout.splitlines()[0]}


def confseq_values(estimate, variance, n, alpha, tuning_n, sides, direction, null_value, exp, where):
    global CONFSEQ_WORST
    if CONFSEQ is None:
        return None
    z = (estimate - null_value) / math.sqrt(variance)
    if sides == "one" and direction == "decrease":
        z = -z
    line = f"{z * math.sqrt(n)!r} {float(n)!r} {float(tuning_n)!r} {alpha!r} {alpha!r} {1 if sides == 'one' else 0}\n"
    text = subprocess.run([str(CONFSEQ)], input=line, capture_output=True, text=True, check=True).stdout
    log_mixture, bound = (float(x) for x in text.split())
    se = math.sqrt(variance)
    b = bound / math.sqrt(n)
    lo, hi = estimate - b * se, estimate + b * se
    if sides == "one":
        if direction == "increase":
            hi = None
        else:
            lo = None
    out = {"ci_low": lo, "ci_high": hi, "log_e_value": log_mixture if math.isfinite(log_mixture) else None}
    scale = max(abs(estimate), se)
    for key in ("ci_low", "ci_high"):
        if exp[key] is not None:
            d = abs(out[key] - exp[key]) / scale
            CONFSEQ_WORST = max(CONFSEQ_WORST, (d, where + " " + key))
            assert d <= 1e-9, (where, key, out[key], exp[key])
    if out["log_e_value"] is not None:
        d = abs(out["log_e_value"] - exp["log_e_value"]) / max(1.0, abs(exp["log_e_value"]))
        CONFSEQ_WORST = max(CONFSEQ_WORST, (d, where + " log e"))
        assert d <= 1e-9, (where, out["log_e_value"], exp["log_e_value"])
    return out


def load_gbstats(path):
    global GB, GB_INFO
    if not path:
        return
    sys.path.append(str(path))
    try:
        import gbstats
        import pydantic
        from gbstats.bayesian import tests as bt
        from gbstats.frequentist import tests as ft
        from gbstats.models import statistics as st
    except Exception as e:  # noqa: BLE001
        print(f"gbstats not usable from {path}: {e!r}; gbstats fields will be null", file=sys.stderr)
        return
    GB = {"ft": ft, "bt": bt, "st": st}
    commit = None
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip() or None
    except Exception:  # noqa: BLE001
        pass
    GB_INFO = {"version": getattr(gbstats, "__version__", None), "pydantic": pydantic.VERSION,
               "source": os.environ.get("GBSTATS_SOURCE", commit)}


# ---------------------------------------------------------------------------------------------
# The normal mixture, integrated
# ---------------------------------------------------------------------------------------------

def rho2(alpha, tuning_n, sides):
    """GrowthBook's tuning (Waudby-Smith et al., arXiv:2103.06476): a = alpha, or 2 alpha one-sided."""
    a = alpha if sides == "two" else 2 * alpha
    value = (-2 * math.log(a) + math.log(-2 * math.log(a) + 1)) / tuning_n
    if GB is not None:
        gb = float(GB["ft"].sequential_rho(alpha, tuning_n, two_sided=sides == "two")) ** 2
        assert math.isclose(gb, value, rel_tol=1e-13), (gb, value)
    return value


def log_e_integrated(z, r, sides):
    """ln of the mixture of exp(u z - u^2/2) over u ~ N(0, r) (two) or half-normal (one), by quad.

    The integrand is scaled by its maximum (at u* = z r/(1 + r), or 0 when one-sided and z < 0) so
    quad sees values near 1 whatever z is.
    """
    sd = math.sqrt(r)

    def log_f(u):
        return u * z - u * u / 2 - u * u / (2 * r) - math.log(sd * math.sqrt(2 * math.pi))

    peak = z * r / (1 + r)
    if sides == "one":
        peak = max(peak, 0.0)
    m = log_f(peak)
    width = math.sqrt(r / (1 + r))  # posterior sd of u
    f = lambda u: math.exp(log_f(u) - m)  # noqa: E731
    if sides == "two":
        lo, hi = peak - 40 * width, peak + 40 * width
        val, _ = integrate.quad(f, lo, hi, points=[peak], epsabs=0, epsrel=1e-13, limit=200)
        return m + math.log(val)
    lo, hi = max(0.0, peak - 40 * width), peak + 40 * width
    pts = [peak] if lo < peak < hi else None
    val, _ = integrate.quad(f, lo, hi, points=pts, epsabs=0, epsrel=1e-13, limit=200)
    return m + math.log(2 * val)


def log_e_closed(z, r, sides):
    if sides == "two":
        return r * z * z / (2 * (1 + r)) - 0.5 * math.log1p(r)
    c2 = r / (1 + r)
    return math.log(2) + float(special.log_ndtr(math.sqrt(c2) * z)) + c2 * z * z / 2 - 0.5 * math.log1p(r)


def log_e(z, r, sides):
    integrated = log_e_integrated(z, r, sides)
    closed = log_e_closed(z, r, sides)
    assert abs(integrated - closed) <= 1e-10 * max(1.0, abs(closed)), (z, r, sides, integrated, closed)
    return integrated


def boundary(alpha, r, sides):
    """b with e(b) = 1/alpha, by brentq on the integrated e."""
    target = -math.log(alpha)
    g = lambda b: log_e_integrated(b, r, sides) - target  # noqa: E731
    hi = 1.0
    while g(hi) < 0:
        hi *= 2
    b = optimize.brentq(g, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    if sides == "two":
        closed = math.sqrt((1 + r) / r * (math.log1p(r) - 2 * math.log(alpha)))
        assert math.isclose(b, closed, rel_tol=1e-10), (b, closed)
    return b


def p_from(le):
    return 1.0 if le <= 0 else math.exp(-le)


def always_valid(estimate, variance, n, alpha, tuning_n, sides, direction, null_value=0.0):
    r = n * rho2(alpha, tuning_n, sides)
    se = math.sqrt(variance)
    z = (estimate - null_value) / se
    if sides == "one" and direction == "decrease":
        z = -z
    le = log_e(z, r, sides)
    b = boundary(alpha, r, sides)
    lo, hi = estimate - b * se, estimate + b * se
    if sides == "one":
        if direction == "increase":
            hi = None
        else:
            lo = None
    return {"ci_low": lo, "ci_high": hi, "p_value": p_from(le), "log_e_value": le}


# ---------------------------------------------------------------------------------------------
# Arms and effects
# ---------------------------------------------------------------------------------------------

def arm(n, mean, variance):
    """An arm as (n, sum, sum of squares) with the given mean and n - 1 variance."""
    s = n * mean
    ss = variance * (n - 1) + s * s / n
    return {"n": n, "mean": mean, "variance": variance, "sum": s, "sum_squares": ss}


def effects_of(c, t):
    """Absolute and relative (delta method, docs/statistics.md §2) estimates and variances."""
    vc, vt = c["variance"] / c["n"], t["variance"] / t["n"]
    cm = c["mean"]
    rel_var = t["variance"] / (t["n"] * cm * cm) + t["mean"] ** 2 * c["variance"] / (c["n"] * cm ** 4)
    return {
        "absolute": {"estimate": t["mean"] - cm, "variance": vc + vt},
        "relative": {"estimate": (t["mean"] - cm) / abs(cm), "variance": rel_var},
    }


def gb_stat(a):
    return GB["st"].SampleMeanStatistic(n=a["n"], sum=a["sum"], sum_squares=a["sum_squares"])


def gb_check_moments(test, est, var, where):
    m = test.moments_result
    assert math.isclose(m.point_estimate, est, rel_tol=1e-9, abs_tol=1e-12), (where, m.point_estimate, est)
    assert math.isclose(m.standard_error ** 2, var, rel_tol=1e-9), (where, m.standard_error ** 2, var)


def track(kind, got, want, scale, where):
    if got is None or want is None:
        assert got is None and want is None, (where, got, want)
        return
    d = abs(got - want) / scale
    if d > GB_WORST[kind][0]:
        GB_WORST[kind] = (d, where)
    assert d <= 1e-7, (where, got, want, d)


DATASETS = {
    "revenue n=1000/1100": (arm(1000, 10.0, 16.0), arm(1100, 10.3, 20.0)),
    "revenue n=50/50 small": (arm(50, 4.2, 9.0), arm(50, 5.1, 10.5)),
    "conversion 12%/13.5% n=20000": (arm(20000, 0.12, 0.12 * 0.88 * 20000 / 19999),
                                    arm(20000, 0.135, 0.135 * 0.865 * 20000 / 19999)),
    "clear drop n=5000": (arm(5000, 3.0, 4.0), arm(5000, 2.6, 4.2)),
    "no effect n=200000": (arm(200000, 1.0, 2.0), arm(200000, 1.0, 2.0)),
    "huge effect n=10000 (p ~ 1e-200)": (arm(10000, 1.0, 1.0), arm(10000, 1.7, 1.0)),
}


def sequential_cases():
    cases = []
    for name, (c, t) in DATASETS.items():
        eff = effects_of(c, t)
        n = c["n"] + t["n"]
        for kind in ("absolute", "relative"):
            e = eff[kind]
            for alpha, tuning in ((0.05, 5000), (0.05, 10000), (0.1, 5000), (0.01, 1e6)):
                for sides, direction in (("two", "increase"), ("one", "increase"), ("one", "decrease")):
                    exp = always_valid(e["estimate"], e["variance"], n, alpha, tuning, sides, direction)
                    gb = gbstats_sequential(c, t, kind, alpha, tuning, sides, direction, e, exp,
                                            f"{name} {kind} {alpha} {tuning} {sides} {direction}")
                    cases.append({"name": f"{name}, {kind}, alpha {alpha}, N* {tuning:g}, {sides}-sided"
                                          + (f" {direction}" if sides == "one" else ""),
                                  "estimate": e["estimate"], "variance": e["variance"], "n": n,
                                  "alpha": alpha, "tuning_n": tuning, "sides": sides, "direction": direction,
                                  "null_value": 0.0, "expected": exp, "gbstats": gb})
    # A non-zero null value (as a guardrail margin uses), and a negative estimate.
    for null_value in (-0.5, 0.25):
        exp = always_valid(-0.1, 0.04, 3000, 0.05, 5000, "two", "increase", null_value)
        cases.append({"name": f"null value {null_value}", "estimate": -0.1, "variance": 0.04, "n": 3000,
                      "alpha": 0.05, "tuning_n": 5000, "sides": "two", "direction": "increase",
                      "null_value": null_value, "expected": exp, "gbstats": None})
        for direction in ("increase", "decrease"):
            exp = always_valid(-0.1, 0.04, 3000, 0.05, 5000, "one", direction, null_value)
            cases.append({"name": f"null value {null_value}, one-sided {direction}", "estimate": -0.1,
                          "variance": 0.04, "n": 3000, "alpha": 0.05, "tuning_n": 5000, "sides": "one",
                          "direction": direction, "null_value": null_value, "expected": exp, "gbstats": None})
    # Far from the tuning: a tiny and a huge sample.
    for n in (10, 10_000_000):
        exp = always_valid(0.02, 1.0 / n, n, 0.05, 5000, "two", "increase")
        cases.append({"name": f"n {n} with N* 5000", "estimate": 0.02, "variance": 1.0 / n, "n": n, "alpha": 0.05,
                      "tuning_n": 5000, "sides": "two", "direction": "increase", "null_value": 0.0,
                      "expected": exp, "gbstats": None})
    for c in cases:
        c["confseq"] = confseq_values(c["estimate"], c["variance"], c["n"], c["alpha"], c["tuning_n"], c["sides"],
                                      c["direction"], c["null_value"], c["expected"], c["name"])
    return cases


def gbstats_sequential(c, t, kind, alpha, tuning, sides, direction, e, exp, where):
    if GB is None:
        return None
    ft = GB["ft"]
    cfg = ft.SequentialConfig(difference_type=kind, alpha=alpha, sequential_tuning_parameter=tuning)
    cls = (ft.SequentialTwoSidedTTest if sides == "two" else
           ft.SequentialOneSidedTreatmentGreaterTTest if direction == "increase" else
           ft.SequentialOneSidedTreatmentLesserTTest)
    test = cls([(gb_stat(c), gb_stat(t))], cfg)
    gb_check_moments(test, e["estimate"], e["variance"], where)
    res = test.compute_result()
    if res.errorMessage:
        return None
    lo, hi = res.ci
    lo = None if lo is None or not math.isfinite(lo) else float(lo)
    hi = None if hi is None or not math.isfinite(hi) else float(hi)
    out = {"ci_low": lo, "ci_high": hi, "p_value": None if res.pValue is None else float(res.pValue)}
    if sides == "two":
        scale = max(abs(e["estimate"]), math.sqrt(e["variance"]))
        track("two-sided", lo, exp["ci_low"], scale, where)
        track("two-sided", hi, exp["ci_high"], scale, where)
        track("two-sided", out["p_value"], exp["p_value"], max(exp["p_value"], 1e-7), where)
    return out


# ---------------------------------------------------------------------------------------------
# Sequential SRM
# ---------------------------------------------------------------------------------------------

def srm_log_e(observed, weights, kappa):
    kept = [(x, w) for x, w in zip(observed, weights) if not (w == 0 and x == 0)]
    if any(w == 0 and x > 0 for x, w in kept):
        return "Infinity"
    tw = math.fsum(w for _, w in kept)
    total = sum(x for x, _ in kept)
    le = 0.0
    for x, w in kept:
        p = w / tw
        a = kappa * p
        le += float(special.gammaln(a + x) - special.gammaln(a)) - (x * math.log(p) if x else 0.0)
    return le - float(special.gammaln(kappa + total) - special.gammaln(kappa))


def srm_log_e_urn(observed, weights, kappa):
    """The same e-value as a product over single assignments (Polya urn predictive / plan)."""
    tw = math.fsum(weights)
    ps = [w / tw for w in weights]
    seen = [0] * len(observed)
    t = 0
    le = 0.0
    # Interleave the assignments (the result does not depend on the order; this checks that too).
    remaining = list(observed)
    while any(remaining):
        for i in range(len(remaining)):
            if remaining[i]:
                predictive = (kappa * ps[i] + seen[i]) / (kappa + t)
                le += math.log(predictive) - math.log(ps[i])
                seen[i] += 1
                t += 1
                remaining[i] -= 1
    return le


def srm_cases():
    specs = [
        ("balanced 500/500", [500, 500], [1, 1], 100),
        ("balanced 5000/5000", [5000, 5000], [500, 500], 100),
        ("slight 5100/4900", [5100, 4900], [1, 1], 100),
        ("strong 5400/4600", [5400, 4600], [1, 1], 100),
        ("uneven plan 50/30/20 on plan", [1000, 600, 400], [500, 300, 200], 100),
        ("uneven plan 50/30/20 off plan", [1080, 560, 360], [500, 300, 200], 100),
        ("3 groups kappa 10", [330, 340, 330], [1, 1, 1], 10),
        ("3 groups kappa 1000 off plan", [400, 300, 300], [1, 1, 1], 1000),
        ("one empty group", [0, 50], [1, 1], 100),
        ("tiny 3/1", [3, 1], [1, 1], 100),
        ("large 1,000,000 balanced", [500_321, 499_679], [1, 1], 100),
        ("large 1,000,000 off 50.5/49.5", [505_000, 495_000], [1, 1], 100),
        ("weight 0 group empty", [300, 0, 310], [1, 0, 1], 100),
        ("weight 0 group with participants", [300, 2, 310], [1, 0, 1], 100),
    ]
    cases = []
    for name, observed, weights, kappa in specs:
        le = srm_log_e(observed, weights, kappa)
        if le != "Infinity" and sum(observed) <= 12000:
            keep = [i for i, w in enumerate(weights) if w > 0]
            urn = srm_log_e_urn([observed[i] for i in keep], [weights[i] for i in keep], kappa)
            assert abs(urn - le) <= 1e-9 * max(1.0, abs(le)), (name, urn, le)
        p = 0.0 if le == "Infinity" else p_from(le)
        cases.append({"name": name, "observed": observed, "weights": weights, "concentration": kappa,
                      "expected": {"log_e_value": le, "p_value": p}})
    return cases


# ---------------------------------------------------------------------------------------------
# Bayesian
# ---------------------------------------------------------------------------------------------

def bayes(estimate, variance, alpha, direction, prior):
    if prior is None:
        mu, var = estimate, variance
    else:
        prec = 1 / variance + 1 / prior["sd"] ** 2
        mu = (estimate / variance + prior["mean"] / prior["sd"] ** 2) / prec
        var = 1 / prec
    sd = math.sqrt(var)
    sign = 1 if direction == "increase" else -1
    gain = sign * mu
    pdf = lambda g: stats.norm.pdf(g, gain, sd)  # noqa: E731
    lo, hi = gain - 40 * sd, gain + 40 * sd
    pos, _ = integrate.quad(lambda g: g * pdf(g), max(0.0, lo), max(0.0, hi), epsabs=0, epsrel=1e-12,
                            points=[gain] if lo < gain < hi and gain > 0 else None, limit=200)
    neg, _ = integrate.quad(lambda g: -g * pdf(g), min(0.0, lo), min(0.0, hi), epsabs=0, epsrel=1e-12,
                            points=[gain] if lo < gain < hi and gain < 0 else None, limit=200)
    q = float(stats.norm.isf(alpha / 2))
    return {"mean": mu, "sd": sd, "chance_to_win": float(stats.norm.sf(0, gain, sd)),
            "ci_low": mu - q * sd, "ci_high": mu + q * sd, "risk_control": pos, "risk_treatment": neg}


def bayesian_cases():
    cases = []
    priors = [None, {"mean": 0.0, "sd": 0.3}, {"mean": 0.05, "sd": 0.1}]
    for name, (c, t) in DATASETS.items():
        eff = effects_of(c, t)
        for kind in ("absolute", "relative"):
            e = eff[kind]
            for direction in ("increase", "decrease"):
                for prior in priors:
                    if prior is not None and kind == "absolute" and name != "revenue n=1000/1100":
                        continue
                    alpha = 0.05 if prior is None else 0.1
                    exp = bayes(e["estimate"], e["variance"], alpha, direction, prior)
                    where = f"{name} {kind} {direction} {prior}"
                    cases.append({"name": f"{name}, {kind}, {direction}, prior "
                                          + ("flat" if prior is None else f"N({prior['mean']}, {prior['sd']}²)"),
                                  "estimate": e["estimate"], "variance": e["variance"], "alpha": alpha,
                                  "direction": direction, "prior": prior, "expected": exp,
                                  "gbstats": gbstats_bayes(c, t, kind, alpha, direction, prior, e, exp, where)})
    return cases


def gbstats_bayes(c, t, kind, alpha, direction, prior, e, exp, where):
    if GB is None:
        return None
    bt = GB["bt"]
    gp = bt.GaussianPrior() if prior is None else bt.GaussianPrior(mean=prior["mean"], variance=prior["sd"] ** 2,
                                                                   proper=True)
    cfg = bt.EffectBayesianConfig(difference_type=kind, alpha=alpha, inverse=direction == "decrease",
                                  prior_type=kind, prior_effect=gp)
    test = bt.EffectBayesianABTest([(gb_stat(c), gb_stat(t))], cfg)
    gb_check_moments(test, e["estimate"], e["variance"], where)
    res = test.compute_result()
    if res.errorMessage:
        return None
    out = {"chance_to_win": float(res.chanceToWin), "ci_low": float(res.ci[0]), "ci_high": float(res.ci[1]),
           "risk_control": float(res.risk[0]), "risk_treatment": float(res.risk[1])}
    scale = exp["sd"]
    for key in ("ci_low", "ci_high", "risk_control", "risk_treatment"):
        track("bayesian", out[key], exp[key], max(scale, abs(exp[key])), where + " " + key)
    track("bayesian", out["chance_to_win"], exp["chance_to_win"], 1.0, where + " ctw")
    return out


# ---------------------------------------------------------------------------------------------
# Guardrails
# ---------------------------------------------------------------------------------------------

def polished_t_quantile(df, tail):
    q0 = float(stats.t.ppf(1 - tail, df))
    f = lambda x: float(special.stdtr(df, -x)) - tail  # noqa: E731
    hi = max(2.0 * q0, 16.0)
    while f(hi) > 0:
        hi *= 2.0
    return optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)


def status_of(estimate, harm_p, ni_p, direction, alpha):
    """The rule of docs/statistics.md §13 (a definition, restated here)."""
    if harm_p < alpha:
        return "failing"
    gain = estimate if direction == "increase" else -estimate
    if ni_p < alpha or gain >= 0:
        return "ok"
    return "warning"


def guardrail_cases():
    cases = []
    specs = [  # estimate, se, df, n (both arms)
        ("clearly harmful", -0.08, 0.02, 1800.0, 4000),
        ("mildly harmful, not significant", -0.01, 0.02, 1800.0, 4000),
        ("harmful within margin, precise", -0.01, 0.004, 30000.0, 100000),
        ("neutral", 0.0, 0.02, 1800.0, 4000),
        ("beneficial", 0.05, 0.02, 1800.0, 4000),
        ("small sample t", -0.3, 0.2, 9.5, 20),
    ]
    for name, est, se, df, n in specs:
        for direction in ("increase", "decrease"):
            # For a decrease metric harm is an increase: mirror the estimate so both see the same story.
            e = est if direction == "increase" else -est
            for margin in (0.0, 0.02):
                at = -margin if direction == "increase" else margin
                tstat = (e - at) / se
                harm_dir_less = direction == "increase"
                harm_p = float(stats.t.cdf(tstat, df)) if harm_dir_less else float(stats.t.sf(tstat, df))
                ni_p = float(stats.t.sf(tstat, df)) if harm_dir_less else float(stats.t.cdf(tstat, df))
                q = polished_t_quantile(df, 0.05)
                bound = e - q * se if direction == "increase" else e + q * se
                fixed = {"harm_p_value": harm_p, "non_inferiority_p_value": ni_p, "bound": bound,
                         "status": status_of(e, harm_p, ni_p, direction, 0.05)}
                harm = always_valid(e, se * se, n, 0.05, 5000, "one",
                                    "decrease" if direction == "increase" else "increase", at)
                ni = always_valid(e, se * se, n, 0.05, 5000, "one", direction, at)
                seq = {"harm_p_value": harm["p_value"], "non_inferiority_p_value": ni["p_value"],
                       "bound": ni["ci_low"] if direction == "increase" else ni["ci_high"],
                       "status": status_of(e, harm["p_value"], ni["p_value"], direction, 0.05)}
                cases.append({"name": f"{name}, {direction} metric, margin {margin}", "estimate": e, "se": se,
                              "df": df, "n": n, "alpha": 0.05, "tuning_n": 5000, "direction": direction,
                              "margin": margin, "expected": {"fixed": fixed, "sequential": seq}})
    return cases


# ---------------------------------------------------------------------------------------------
# Power
# ---------------------------------------------------------------------------------------------

def power_at(effect, var, n_c, n_t, alpha, sides, sequential):
    se = math.sqrt(var * (1 / n_c + 1 / n_t))
    if sequential is None:
        c = float(stats.norm.isf(alpha / 2 if sides == "two" else alpha))
    else:
        c = boundary(alpha, (n_c + n_t) * rho2(alpha, sequential, sides), sides)
    d = effect / se
    if sides == "two":
        return float(stats.norm.cdf(d - c) + stats.norm.cdf(-d - c))
    return float(stats.norm.cdf(d - c))


def power_cases():
    cases = []
    specs = [  # name, mean, variance, mde, alpha, power, sides, cuped_r2, tuning
        ("conversion 10%, 5% lift", 0.1, 0.09, 0.05, 0.05, 0.8, "two", 0.0),
        ("conversion 10%, 5% lift, one-sided", 0.1, 0.09, 0.05, 0.05, 0.8, "one", 0.0),
        ("revenue, 2% lift, power 0.9", 25.0, 900.0, 0.02, 0.05, 0.9, "two", 0.0),
        ("revenue, 2% lift, CUPED R² 0.4", 25.0, 900.0, 0.02, 0.05, 0.8, "two", 0.4),
        ("alpha 0.1, 10% lift", 3.0, 4.0, 0.10, 0.1, 0.8, "two", 0.0),
        ("large effect, small n", 10.0, 4.0, 0.3, 0.05, 0.8, "two", 0.0),
        ("negative mean, 3% drop", -5.0, 16.0, -0.03, 0.05, 0.8, "two", 0.2),
    ]
    for name, mean, var, mde, alpha, power, sides, r2 in specs:
        effect = abs(mde * mean)
        v = var * (1 - r2)
        d = effect / math.sqrt(v)
        alt = "two-sided" if sides == "two" else "larger"
        sm_n = float(NormalIndPower().solve_power(effect_size=d, alpha=alpha, power=power, ratio=1.0,
                                                  alternative=alt))
        exact = optimize.brentq(lambda n: power_at(effect, v, n, n, alpha, sides, None) - power, 1e-3, 1e12,
                                xtol=1e-12, rtol=4 * np.finfo(float).eps)
        assert math.isclose(sm_n, exact, rel_tol=1e-6), (name, sm_n, exact)
        n_now = round(exact / 3) + 7
        sm_power_now = float(NormalIndPower().power(effect_size=d, nobs1=n_now, alpha=alpha, ratio=1.0,
                                                    alternative=alt))
        for tuning in (None, 5000, 100000):
            if tuning is None:
                per_arm = exact
                pw_now = power_at(effect, v, n_now, n_now, alpha, sides, None)
                assert math.isclose(pw_now, sm_power_now, rel_tol=1e-12), (pw_now, sm_power_now)
            else:
                per_arm = optimize.brentq(
                    lambda n: power_at(effect, v, n, n, alpha, sides, tuning) - power, exact, 100 * exact,
                    xtol=1e-9, rtol=1e-13)
                pw_now = power_at(effect, v, n_now, int(n_now * 1.1), alpha, sides, tuning)
            cases.append({"name": f"{name}, " + ("fixed" if tuning is None else f"sequential N* {tuning}"),
                          "mean": mean, "variance": var, "mde": mde, "alpha": alpha, "power": power,
                          "sides": sides, "cuped_r2": r2,
                          "sequential": None if tuning is None else {"tuning_n": tuning},
                          "expected": {"per_arm_exact": per_arm, "per_arm": math.ceil(per_arm),
                                       "statsmodels_nobs1": sm_n if tuning is None else None,
                                       "now": {"n_control": n_now,
                                               "n_treatment": n_now if tuning is None else int(n_now * 1.1),
                                               "power": pw_now}}})
    return cases


def dump(path, doc):
    text = json.dumps(doc, indent=2, allow_nan=False)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.write("\n")
    return len(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gbstats", default=os.environ.get("GBSTATS_PATH"))
    ap.add_argument("--confseq", default=os.environ.get("CONFSEQ_PATH"),
                    help="directory holding confseq's uniform_boundaries.h")
    args = ap.parse_args()
    load_gbstats(args.gbstats)
    load_confseq(args.confseq)
    versions = {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                "statsmodels": statsmodels.__version__}
    if GB_INFO:
        versions["gbstats"] = GB_INFO
    if CONFSEQ_INFO:
        versions["confseq"] = CONFSEQ_INFO
    meta = {"generator": "packages/stats/test-vectors/generate_sequential_fixtures.py", "versions": versions}
    docs = {
        "sequential.json": sequential_cases(),
        "srm-sequential.json": srm_cases(),
        "bayesian.json": bayesian_cases(),
        "guardrail.json": guardrail_cases(),
        "power.json": power_cases(),
    }
    for name, cases in docs.items():
        names = [c["name"] for c in cases]
        assert len(names) == len(set(names)), name
        size = dump(OUT / name, {**meta, "cases": cases})
        print(f"{name}: {len(cases)} cases, {size} bytes")
    if CONFSEQ is not None:
        print(f"confseq: worst scaled difference {CONFSEQ_WORST[0]:.3g} ({CONFSEQ_WORST[1]})")
    if GB is not None:
        for kind, (worst, where) in GB_WORST.items():
            print(f"gbstats {kind}: worst scaled difference {worst:.3g} ({where})")


if __name__ == "__main__":
    main()
