#!/usr/bin/env python3
"""Generate the experiment-analysis reference fixtures (analysis.json, corrections.json,
percentiles.json) from seeded raw per-participant samples.

    python3 packages/stats/test-vectors/generate_analysis_fixtures.py [--gbstats DIR]

The conventions are docs/statistics.md's (summarised in README.md here). Every expected
value is computed from the RAW arrays with NumPy/SciPy/statsmodels:

- absolute effect: scipy.stats.ttest_ind(treatment, control, equal_var=False, alternative=...) on
  the per-participant values (for CUPED: on the adjusted values y - theta*x; for ratio metrics: on
  the exact linearisation R + (y - R*d)/mean(d), whose mean is R and whose n - 1 variance is the
  delta-method per-unit variance); t, p from SciPy, the interval from a polished t quantile;
- relative effect: delta method and Fieller from np.mean / np.var(ddof=1) / np.cov of the raw
  arrays; the Fieller quadratic is solved with np.roots (and cross-checked against the stable
  closed form);
- CUPED theta: OLS of Y on [1, X] over the pooled arrays (np.linalg.lstsq, cross-checked with
  statsmodels OLS); ratio CUPED theta from the linearised ratios, as gbstats defines it;
- corrections: statsmodels.stats.multitest.multipletests; percentiles: numpy.percentile.

A second, independent reference is GrowthBook's gbstats (MIT), which is NOT vendored: pass the
directory that contains the `gbstats` package (e.g. an export of growthbook/growthbook's
packages/stats) with --gbstats DIR or GBSTATS_PATH=DIR; without it the "gbstats" fields are null.
gbstats needs pydantic 2. The script asserts that gbstats and the raw-array values agree (to 1e-7,
see check_gbstats) wherever both exist.

Statsmodels comes from Debian (apt-get install python3-scipy python3-statsmodels), so
/usr/lib/python3/dist-packages goes FIRST on sys.path: NumPy 1.24, SciPy 1.10 and statsmodels 0.13
are then used together (the versions are written into the JSON).

Floats are written with Python's repr (shortest round-trip), so JSON.parse recovers each double.
"""
import sys

sys.path.insert(0, "/usr/lib/python3/dist-packages")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import statsmodels  # noqa: E402
import statsmodels.api as sm  # noqa: E402
from scipy import optimize, special, stats  # noqa: E402
from statsmodels.stats.multitest import multipletests  # noqa: E402

OUT = Path(__file__).resolve().parent
GB = None  # the gbstats modules, when available
GB_INFO = None
GB_CHECKS = {"compared": 0, "worst": (0.0, "")}
CUPED_GRADIENT_DIFF = []


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------

def polished_t_quantile(df, tail):
    """x with P(T_df > x) = tail, to full double precision.

    SciPy 1.10's t.ppf (CDFLIB stdtrit) is only converged to ~1e-8 relative, too loose for a 1e-9
    contract; polish with brentq on Cephes' accurate tail stdtr(df, -x) (as generate_fixtures.py).
    """
    q0 = float(stats.t.ppf(1 - tail, df))
    f = lambda x: float(special.stdtr(df, -x)) - tail  # noqa: E731
    hi = max(2.0 * q0, 16.0)
    while f(hi) > 0:
        hi *= 2.0
    q = optimize.brentq(f, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=1000)
    assert math.isclose(q, q0, rel_tol=1e-6), (q, q0)
    return q


def welch_df(v_t, n_t, v_c, n_c):
    """Welch-Satterthwaite df from the per-arm variances of the mean v = s^2/n."""
    return (v_t + v_c) ** 2 / (v_t ** 2 / (n_t - 1) + v_c ** 2 / (n_c - 1))


def p_from_t(t, df, sides, direction):
    if sides == "two":
        return float(2 * stats.t.sf(abs(t), df))
    if direction == "increase":
        return float(stats.t.sf(t, df))
    return float(stats.t.cdf(t, df))


def quantile_for(alpha, sides, df):
    return polished_t_quantile(df, alpha / 2 if sides == "two" else alpha)


def interval(est, se, q, sides, direction):
    lo, hi = est - q * se, est + q * se
    if sides == "one":
        if direction == "increase":
            hi = None
        else:
            lo = None
    return lo, hi


def effect(est, se, df, alpha, sides, direction, p=None):
    q = quantile_for(alpha, sides, df)
    lo, hi = interval(est, se, q, sides, direction)
    if p is None:
        p = p_from_t(est / se, df, sides, direction)
    return {"estimate": float(est), "se": float(se), "df": float(df),
            "ci_low": None if lo is None else float(lo), "ci_high": None if hi is None else float(hi),
            "p_value": float(p)}


def var1(a):
    return float(np.var(a, ddof=1))


def cov1(a, b):
    return float(np.cov(a, b, ddof=1)[0, 1])


def alternative_of(sides, direction):
    return "two-sided" if sides == "two" else ("greater" if direction == "increase" else "less")


def ttest(t_vals, c_vals, sides, direction):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        r = stats.ttest_ind(t_vals, c_vals, equal_var=False, alternative=alternative_of(sides, direction))
    return float(r.statistic), float(r.pvalue)


def check_fieller_vs_test(rel, p_abs, alpha, name):
    """The Fieller interval excludes 0 exactly when the absolute Welch test rejects (§3)."""
    lo, hi = rel["ci_low"], rel["ci_high"]
    excludes = (lo is not None and lo > 0) or (hi is not None and hi < 0)
    if abs(p_abs - alpha) > 1e-9:
        assert excludes == (p_abs < alpha), (name, lo, hi, p_abs)


def fieller(m_t, v_t, m_c, v_c, q, sides, direction):
    """Fieller interval for the lift (§3). v_* are variances of the means. (lo, hi) or None."""
    a = m_c ** 2 - q ** 2 * v_c
    b = -2 * m_t * m_c
    c = m_t ** 2 - q ** 2 * v_t
    disc = b * b - 4 * a * c
    if not (a > 0 and disc >= 0):
        return None
    roots = np.roots([a, b, c])
    assert np.all(np.isreal(roots)) or disc == 0, roots
    r1, r2 = sorted(float(np.real(r)) for r in roots)
    # Cross-check np.roots against the numerically stable closed form.
    sq = math.sqrt(disc)
    qq = -0.5 * (b + math.copysign(sq, b)) if b != 0 else -0.5 * sq
    alt = sorted([qq / a, c / qq] if qq != 0 else [0.0, 0.0])
    for x, y in zip((r1, r2), alt):
        assert math.isclose(x, y, rel_tol=1e-10, abs_tol=1e-12), (r1, r2, alt)
    # Use the closed form (last-bit stable) for the fixture values.
    r1, r2 = alt
    # Each bound is where the t statistic of mean_T - rho*mean_C reaches the quantile exactly.
    for rho in (r1, r2):
        lhs, rhs = (m_t - rho * m_c) ** 2, q ** 2 * (v_t + rho ** 2 * v_c)
        assert math.isclose(lhs, rhs, rel_tol=1e-8), (rho, lhs, rhs)
    if m_c > 0:
        lo, hi = r1 - 1, r2 - 1
    else:
        lo, hi = 1 - r2, 1 - r1
    if sides == "one":
        if direction == "increase":
            hi = None
        else:
            lo = None
    return lo, hi


# ---------------------------------------------------------------------------------------------
# Expected values from the raw arrays
# ---------------------------------------------------------------------------------------------

def expected_event(case):
    c, t = case["control"], case["treatment"]
    yc, yt = np.asarray(c["y"], float), np.asarray(t["y"], float)
    alpha, sides, direction = case["alpha"], case["sides"], case["direction"]
    nc, nt = yc.size, yt.size
    out = {"absolute": None, "relative": None, "cuped": None, "balance_p_value": None}
    if nc < 2 or nt < 2:
        return out
    cuped = case["cuped"]
    mc_raw, mt_raw = float(np.mean(yc)), float(np.mean(yt))
    if cuped:
        xc, xt = np.asarray(c["x"], float), np.asarray(t["x"], float)
        x_all, y_all = np.concatenate([xc, xt]), np.concatenate([yc, yt])
        if np.var(x_all) == 0:
            theta = 0.0
        else:
            design = np.column_stack([np.ones_like(x_all), x_all])
            coef, *_ = np.linalg.lstsq(design, y_all, rcond=None)
            theta = float(coef[1])
            ols = sm.OLS(y_all, sm.add_constant(x_all)).fit()
            assert math.isclose(theta, float(ols.params[1]), rel_tol=1e-9, abs_tol=1e-12)
            assert math.isclose(theta, cov1(y_all, x_all) / var1(x_all), rel_tol=1e-9, abs_tol=1e-12)
        ac, at = yc - theta * xc, yt - theta * xt  # adjusted per-participant values
        _, bp = ttest(xt, xc, "two", "increase")
        out["balance_p_value"] = None if var1(xc) + var1(xt) == 0 else bp
    else:
        theta = 0.0
        ac, at = yc, yt
    # Absolute (§1): the test on the (adjusted) per-participant values.
    mc, mt = mc_raw - theta * float(np.mean(xc)) if cuped else mc_raw, \
        mt_raw - theta * float(np.mean(xt)) if cuped else mt_raw
    sc2, st2 = var1(ac), var1(at)
    if cuped:  # the adjusted variance formula of §5 equals the variance of the adjusted values
        for s2, y, x in ((sc2, yc, xc), (st2, yt, xt)):
            f = var1(y) + theta ** 2 * var1(x) - 2 * theta * cov1(y, x)
            assert math.isclose(s2, f, rel_tol=1e-9, abs_tol=1e-12 * (var1(y) + 1e-300)), (s2, f)
    vc, vt = sc2 / nc, st2 / nt
    se = math.sqrt(vc + vt)
    if se == 0:
        return out
    df = welch_df(vt, nt, vc, nc)
    delta = mt - mc
    t_stat, p_abs = ttest(at, ac, sides, direction)
    assert math.isclose(t_stat, delta / se, rel_tol=1e-9, abs_tol=1e-12), (t_stat, delta / se)
    out["absolute"] = effect(delta, se, df, alpha, sides, direction, p_abs)
    if cuped:
        se_raw2 = var1(yc) / nc + var1(yt) / nt
        out["cuped"] = {"theta": theta, "variance_reduction": None if se_raw2 == 0 else 1 - (vc + vt) / se_raw2}
    # Relative (§2, §5).
    if mc_raw == 0:
        return out
    r = delta / abs(mc_raw)
    if cuped:
        s_yx_c = cov1(yc, xc)
        se_r2 = st2 / (nt * mc_raw ** 2) + (
            var1(yc) * mt_raw ** 2 / mc_raw ** 2 - 2 * theta * s_yx_c * mt_raw / mc_raw
            + theta ** 2 * var1(xc)) / (nc * mc_raw ** 2)
        # Diagnostic only: the exact delta-method gradient of (ybar'_T - ybar'_C)/|ybar_C| in the
        # control's (ybar_C, xbar_C) has ybar'_T + theta*xbar_C where §5 (gbstats) has ybar_T;
        # they differ by theta*(xbar_T - xbar_C), i.e. by the covariate imbalance.
        s_c = math.copysign(1.0, mc_raw)
        g = np.array([-1 / abs(mc_raw) - s_c * delta / mc_raw ** 2, theta / abs(mc_raw)])
        exact = st2 / (nt * mc_raw ** 2) + float(g @ np.cov(np.vstack([yc, xc]), ddof=1) @ g) / nc
        CUPED_GRADIENT_DIFF.append((abs(math.sqrt(exact / se_r2) - 1) if se_r2 > 0 else 0.0, case["name"]))
    else:
        se_r2 = st2 / (nt * mc ** 2) + mt ** 2 * sc2 / (nc * mc ** 4)
    if not se_r2 > 0:
        return out
    se_r = math.sqrt(se_r2)
    if case["relative_interval"] == "fieller" and not cuped:
        rel = {"estimate": r, "se": se_r, "df": df, "ci_low": None, "ci_high": None, "p_value": p_abs}
        ci = fieller(mt, vt, mc, vc, quantile_for(alpha, sides, df), sides, direction)
        if ci is not None:
            rel["ci_low"], rel["ci_high"] = ci
            check_fieller_vs_test(rel, p_abs, alpha, case["name"])
        out["relative"] = rel
    else:
        out["relative"] = effect(r, se_r, df, alpha, sides, direction)
    return out


def ratio_linearised(num, den):
    """Exact linearisation of R = mean(num)/mean(den): pseudo-values with mean R and n-1 variance
    equal to the delta-method per-unit variance (§4)."""
    R = float(np.mean(num)) / float(np.mean(den))
    return R, (num - R * den) / float(np.mean(den))


def ratio_delta_unit_var(num, den):
    """§4's formula on np.mean / np.cov moments (cross-check of the linearisation)."""
    cm = np.cov(np.vstack([num, den]), ddof=1)
    y, d = float(np.mean(num)), float(np.mean(den))
    return cm[0, 0] / d ** 2 - 2 * y * cm[0, 1] / d ** 3 + y ** 2 * cm[1, 1] / d ** 4


def expected_ratio(case):
    c, t = case["control"], case["treatment"]
    alpha, sides, direction = case["alpha"], case["sides"], case["direction"]
    arr = lambda side, k: np.asarray(side[k], float)  # noqa: E731
    yc, dc, yt, dt = arr(c, "num"), arr(c, "den"), arr(t, "num"), arr(t, "den")
    nc, nt = yc.size, yt.size
    out = {"absolute": None, "relative": None, "cuped": None, "balance_p_value": None}
    if nc < 2 or nt < 2 or np.mean(dc) == 0 or np.mean(dt) == 0:
        return out
    Rc, lc = ratio_linearised(yc, dc)
    Rt, lt = ratio_linearised(yt, dt)
    for lin, y, d in ((lc, yc, dc), (lt, yt, dt)):
        f = ratio_delta_unit_var(y, d)
        assert math.isclose(var1(lin), f, rel_tol=1e-9, abs_tol=1e-15 * abs(f) + 1e-300), (var1(lin), f)
    cuped = case["cuped"]
    theta = 0.0
    if cuped:
        uc, vc_, ut, vt_ = arr(c, "x_num"), arr(c, "x_den"), arr(t, "x_num"), arr(t, "x_den")
        if np.mean(vc_) == 0 or np.mean(vt_) == 0:
            return out
        Rxc, lxc = ratio_linearised(uc, vc_)
        Rxt, lxt = ratio_linearised(ut, vt_)
        # gbstats' compute_theta_regression_adjusted_ratio: per-unit covariances of the linearised
        # ratios summed over the two arms (not n-weighted), then Cov / Var.
        denom = var1(lxc) + var1(lxt)
        theta = 0.0 if denom == 0 else (cov1(lc, lxc) + cov1(lt, lxt)) / denom
        if abs(theta) < 1e-8:
            theta = 0.0  # gbstats reverts to the unadjusted ratio below 1e-8
        ac, at = lc - theta * lxc, lt - theta * lxt
        mc, mt = Rc - theta * Rxc, Rt - theta * Rxt
        sec2 = var1(lxc) / nc + var1(lxt) / nt
        if sec2 > 0:
            bt = (Rxt - Rxc) / math.sqrt(sec2)
            bdf = welch_df(var1(lxt) / nt, nt, var1(lxc) / nc, nc)
            out["balance_p_value"] = p_from_t(bt, bdf, "two", "increase")
            # the same test through SciPy on the pseudo-values R_X + linearised values
            _, bp = ttest(Rxt + lxt, Rxc + lxc, "two", "increase")
            assert math.isclose(bp, out["balance_p_value"], rel_tol=1e-6, abs_tol=1e-14)
    else:
        ac, at = lc, lt
        mc, mt = Rc, Rt
    sc2, st2 = var1(ac), var1(at)
    vc, vt = sc2 / nc, st2 / nt
    se = math.sqrt(vc + vt)
    if se == 0:
        return out
    df = welch_df(vt, nt, vc, nc)
    delta = mt - mc
    # p from SciPy's t-test on the pseudo-values (mean + linearised value); the estimate is the
    # exact difference of ratios (the pseudo-values' mean equals it up to rounding).
    t_lin, p_lin = ttest(mt + at, mc + ac, sides, direction)
    p_abs = p_from_t(delta / se, df, sides, direction)
    assert math.isclose(t_lin, delta / se, rel_tol=1e-7, abs_tol=1e-9), (t_lin, delta / se)
    assert math.isclose(p_lin, p_abs, rel_tol=1e-6, abs_tol=1e-12), (p_lin, p_abs)
    out["absolute"] = effect(delta, se, df, alpha, sides, direction, p_abs)
    if cuped:
        se_raw2 = var1(lc) / nc + var1(lt) / nt
        out["cuped"] = {"theta": theta, "variance_reduction": None if se_raw2 == 0 else 1 - (vc + vt) / se_raw2}
    if Rc == 0:
        return out
    r = delta / abs(Rc)
    if cuped:
        # Chain rule for (A_T - A_C)/|R_C|, A = R - theta*R_X, over each arm's means of
        # (num, den, x_num, x_den); theta fixed.
        s = math.copysign(1.0, Rc)
        yb, db, ub, vb = (float(np.mean(a)) for a in (yc, dc, uc, vc_))
        g_c = np.array([
            -1 / (db * abs(Rc)) - s * delta / (db * Rc ** 2),
            yb / db ** 2 * (1 / abs(Rc) + s * delta / Rc ** 2),
            theta / (vb * abs(Rc)),
            -theta * ub / (vb ** 2 * abs(Rc)),
        ])
        yb, db, ub, vb = (float(np.mean(a)) for a in (yt, dt, ut, vt_))
        g_t = np.array([1 / db, -yb / db ** 2, -theta / vb, theta * ub / vb ** 2]) / abs(Rc)
        cov_c = np.cov(np.vstack([yc, dc, uc, vc_]), ddof=1)
        cov_t = np.cov(np.vstack([yt, dt, ut, vt_]), ddof=1)
        se_r2 = float(g_c @ cov_c @ g_c) / nc + float(g_t @ cov_t @ g_t) / nt
    else:
        se_r2 = st2 / (nt * Rc ** 2) + Rt ** 2 * sc2 / (nc * Rc ** 4)
    if not se_r2 > 0:
        return out
    se_r = math.sqrt(se_r2)
    if case["relative_interval"] == "fieller" and not cuped:
        rel = {"estimate": r, "se": se_r, "df": df, "ci_low": None, "ci_high": None, "p_value": p_abs}
        ci = fieller(mt, vt, mc, vc, quantile_for(alpha, sides, df), sides, direction)
        if ci is not None:
            rel["ci_low"], rel["ci_high"] = ci
            check_fieller_vs_test(rel, p_abs, alpha, case["name"])
        out["relative"] = rel
    else:
        out["relative"] = effect(r, se_r, df, alpha, sides, direction)
    return out


# ---------------------------------------------------------------------------------------------
# gbstats (second reference)
# ---------------------------------------------------------------------------------------------

def load_gbstats(path):
    global GB, GB_INFO
    if not path:
        return
    sys.path.append(str(path))  # after Debian's dist-packages: same NumPy/SciPy
    try:
        import gbstats
        from gbstats.frequentist import tests as ft
        from gbstats.models import statistics as st
        import pydantic
    except Exception as e:  # noqa: BLE001
        print(f"gbstats not usable from {path}: {e!r}; gbstats fields will be null", file=sys.stderr)
        return
    GB = {"ft": ft, "st": st}
    commit = None
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip() or None
    except Exception:  # noqa: BLE001
        pass
    GB_INFO = {"version": getattr(gbstats, "__version__", None), "pydantic": pydantic.VERSION,
               "source": os.environ.get("GBSTATS_SOURCE", commit)}


def gb_sms(a):
    a = np.asarray(a, float)
    return GB["st"].SampleMeanStatistic(n=int(a.size), sum=math.fsum(a), sum_squares=math.fsum(a * a))


def sp(a, b):
    return math.fsum(np.asarray(a, float) * np.asarray(b, float))


def gb_stat(case, side):
    st = GB["st"]
    s = case[side]
    if case["kind"] == "event":
        if not case["cuped"]:
            return gb_sms(s["y"])
        return st.RegressionAdjustedStatistic(
            n=len(s["y"]), post_statistic=gb_sms(s["y"]), pre_statistic=gb_sms(s["x"]),
            post_pre_sum_of_products=sp(s["y"], s["x"]), theta=None)
    if not case["cuped"]:
        return st.RatioStatistic(n=len(s["num"]), m_statistic=gb_sms(s["num"]), d_statistic=gb_sms(s["den"]),
                                 m_d_sum_of_products=sp(s["num"], s["den"]))
    return st.RegressionAdjustedRatioStatistic(
        n=len(s["num"]),
        m_statistic_post=gb_sms(s["num"]), d_statistic_post=gb_sms(s["den"]),
        m_statistic_pre=gb_sms(s["x_num"]), d_statistic_pre=gb_sms(s["x_den"]),
        m_post_m_pre_sum_of_products=sp(s["num"], s["x_num"]),
        d_post_d_pre_sum_of_products=sp(s["den"], s["x_den"]),
        m_pre_d_pre_sum_of_products=sp(s["x_num"], s["x_den"]),
        m_post_d_post_sum_of_products=sp(s["num"], s["den"]),
        m_post_d_pre_sum_of_products=sp(s["num"], s["x_den"]),
        m_pre_d_post_sum_of_products=sp(s["x_num"], s["den"]),
        theta=None)


def gb_run(case, difference_type):
    ft = GB["ft"]
    if case["sides"] == "two":
        cls = ft.TwoSidedTTest
    elif case["direction"] == "increase":
        cls = ft.OneSidedTreatmentGreaterTTest
    else:
        cls = ft.OneSidedTreatmentLesserTTest
    a, b = gb_stat(case, "control"), gb_stat(case, "treatment")
    cfg = ft.FrequentistConfig(difference_type=difference_type, alpha=case["alpha"])
    res = cls([(a, b)], cfg).compute_result()
    if res.errorMessage:
        return None
    fin = lambda v: None if v is None or not math.isfinite(v) else float(v)  # noqa: E731
    return {"estimate": float(res.expected), "ci_low": fin(res.ci[0]), "ci_high": fin(res.ci[1]),
            "p_value": float(res.pValue)}


def gbstats_fields(case):
    if GB is None:
        return None
    n_c = len(case["control"]["y" if case["kind"] == "event" else "num"])
    n_t = len(case["treatment"]["y" if case["kind"] == "event" else "num"])
    if n_c == 0 or n_t == 0:
        return {"absolute": None, "relative": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        absolute = gb_run(case, "absolute")
        # gbstats has no Fieller interval; with CUPED our "fieller" falls back to delta (§5).
        relative = None if case["relative_interval"] == "fieller" and not case["cuped"] \
            else gb_run(case, "relative")
    return {"absolute": absolute, "relative": relative}


def check_gbstats(case):
    """gbstats and the raw-array values must agree where both exist. Tolerance 1e-7 relative to
    max(|value|, se) for estimates and bounds (a bound near 0 has no meaningful relative error);
    p-values to 1e-7 relative plus 1e-14 absolute (gbstats' 2*(1 - cdf) cancels below ~1e-14)."""
    g = case["gbstats"]
    if g is None:
        return
    for part in ("absolute", "relative"):
        e, b = case["expected"][part], g[part]
        # gbstats never computes what the conventions leave undefined; the reverse happens (see
        # README: gbstats gives up on any zero-variance arm and on a control mean of 0).
        assert not (e is None and b is not None), (case["name"], part, b)
        if e is not None and b is None and not (part == "relative" and case["relative_interval"] == "fieller"
                                                and not case["cuped"]):
            GB_CHECKS.setdefault("gbstats_null", []).append(f"{case['name']} ({part})")
        if e is None or b is None:
            continue
        if part == "relative" and case["relative_interval"] == "fieller" and not case["cuped"]:
            continue
        for k in ("estimate", "ci_low", "ci_high", "p_value"):
            x, y = e[k], b[k]
            assert (x is None) == (y is None), (case["name"], part, k, x, y)
            if x is None:
                continue
            bound = 1e-7 * abs(x) + 1e-14 if k == "p_value" else 1e-7 * max(abs(x), e["se"])
            err = 1e-7 * abs(x - y) / bound  # the difference in units of the scale above
            GB_CHECKS["compared"] += 1
            if err > GB_CHECKS["worst"][0]:
                GB_CHECKS["worst"] = (err, f"{case['name']} {part}.{k}: {x!r} vs gbstats {y!r}")
            assert abs(x - y) <= bound, (case["name"], part, k, x, y)


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def rnd(a, decimals):
    return [float(v) for v in np.round(np.asarray(a, float), decimals)]


CASES = []


def add(name, kind, control, treatment, alpha=0.05, sides="two", direction="increase",
        relative_interval="delta", cuped=False):
    case = {"name": name, "kind": kind, "alpha": alpha, "sides": sides, "direction": direction,
            "relative_interval": relative_interval, "cuped": cuped,
            "control": control, "treatment": treatment}
    assert all(c["name"] != name for c in CASES), name
    case["expected"] = (expected_event if kind == "event" else expected_ratio)(case)
    case["gbstats"] = gbstats_fields(case)
    check_gbstats(case)
    CASES.append(case)


GRID = [(a, s, d) for a in (0.05, 0.1) for s, d in (("two", "increase"), ("one", "increase"), ("one", "decrease"))]


def add_grid(base, kind, control, treatment, intervals=("delta", "fieller"), cuped=False, grid=GRID):
    for alpha, sides, direction in grid:
        for ri in intervals:
            label = "two-sided" if sides == "two" else f"one-sided {direction}"
            add(f"{base} | {label} alpha={alpha} {ri}", kind, control, treatment, alpha, sides,
                direction, ri, cuped)


def event_cases():
    rng = np.random.default_rng(20261127)
    # Normal, moderate n: the full grid.
    c = {"y": rnd(rng.normal(10.0, 3.0, 50), 3)}
    t = {"y": rnd(rng.normal(11.2, 3.5, 60), 3)}
    add_grid("normal n=50 vs 60", "event", c, t)
    # Conversions (0/1), n - 1 variances.
    c = {"y": rnd(rng.random(400) < 0.10, 0)}
    t = {"y": rnd(rng.random(380) < 0.14, 0)}
    add_grid("conversion 0/1 n=400 vs 380", "event", c, t)
    # Revenue-like: lognormal with ~70% zeros.
    def revenue(n, p_buy, mu):
        return rnd(np.where(rng.random(n) < p_buy, rng.lognormal(mu, 1.1, n), 0.0), 2)
    c = {"y": revenue(300, 0.30, 3.0)}
    t = {"y": revenue(350, 0.33, 3.1)}
    add_grid("revenue lognormal 70% zeros n=300 vs 350", "event", c, t)
    # Treatment lower than control (significant decrease).
    c = {"y": rnd(rng.normal(5.0, 1.0, 120), 3)}
    t = {"y": rnd(rng.normal(4.5, 1.2, 110), 3)}
    add_grid("normal decrease n=120 vs 110", "event", c, t, grid=GRID[:3])
    # Larger samples, two-sided only.
    c = {"y": rnd(rng.normal(20.0, 6.0, 3000), 2)}
    t = {"y": rnd(rng.normal(20.3, 6.0, 3200), 2)}
    add_grid("normal n=3000 vs 3200", "event", c, t, grid=[(0.05, "two", "increase"), (0.1, "one", "increase")])
    c = {"y": rnd(rng.random(5000) < 0.05, 0)}
    t = {"y": rnd(rng.random(5000) < 0.058, 0)}
    add_grid("conversion n=5000 each", "event", c, t, grid=[(0.05, "two", "increase")])
    # Tiny samples.
    add_grid("tiny n=2 vs 2", "event", {"y": [10.0, 12.0]}, {"y": [13.0, 16.5]}, grid=[(0.05, "two", "increase"), (0.1, "one", "increase")])
    add_grid("tiny n=3 vs 3", "event", {"y": [1.0, 1.5, 0.5]}, {"y": [1.8, 2.5, 1.1]}, grid=[(0.05, "two", "increase"), (0.1, "one", "decrease")])
    add_grid("tiny n=2 vs 3", "event", {"y": [5.0, 9.0]}, {"y": [7.0, 7.5, 8.25]}, grid=[(0.05, "two", "increase")])
    add("tiny conversion n=3 vs 3", "event", {"y": [0.0, 1.0, 0.0]}, {"y": [1.0, 1.0, 0.0]})
    # Identical arms: effect 0, p = 1.
    same = rnd(rng.normal(3.0, 1.0, 40), 3)
    add_grid("identical arms", "event", {"y": same}, {"y": list(same)}, grid=[(0.05, "two", "increase"), (0.05, "one", "decrease")])
    # One zero-variance arm: still computable by §1 (se > 0); gbstats returns no result.
    add_grid("control zero variance", "event", {"y": [5.0] * 20}, {"y": rnd(rng.normal(5.5, 1.0, 25), 3)}, grid=[(0.05, "two", "increase")])
    add("treatment zero variance", "event", {"y": rnd(rng.normal(7.0, 2.0, 30), 3)}, {"y": [6.0] * 12})
    # Both arms zero variance: se = 0, not computable.
    add("both arms zero variance", "event", {"y": [1.0] * 10}, {"y": [2.0] * 10})
    add("both arms zero variance, same value", "event", {"y": [0.0] * 10}, {"y": [0.0] * 8})
    # Conversion edge cases.
    add("conversion control 0/50 (control mean 0: relative null)", "event", {"y": [0.0] * 50},
        {"y": [1.0] * 5 + [0.0] * 45})
    add("conversion treatment 0/50 (relative se 0: relative null)", "event",
        {"y": [1.0] * 5 + [0.0] * 45}, {"y": [0.0] * 50})
    add("conversion control 50/50 all converted", "event", {"y": [1.0] * 50},
        {"y": [1.0] * 45 + [0.0] * 5}, sides="one", direction="decrease")
    # n < 2 on a side: not computable.
    add("control n=1", "event", {"y": [3.0]}, {"y": [3.5, 4.0, 2.0]})
    add("treatment n=0", "event", {"y": [3.0, 4.0]}, {"y": []})
    # Control mean exactly 0 (values cancel): absolute fine, relative null.
    add_grid("control mean exactly 0", "event", {"y": [-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, -3.0, 0.5, -0.5, 0.0]},
             {"y": rnd(rng.normal(1.0, 2.0, 12), 2)}, grid=[(0.05, "two", "increase")])
    # Control mean near 0 with a large variance: the Fieller interval is unbounded.
    c = {"y": rnd(rng.normal(0.3, 10.0, 40), 3)}
    t = {"y": rnd(rng.normal(2.0, 10.0, 45), 3)}
    add_grid("control mean near 0, large variance", "event", c, t, grid=GRID[:3])
    # Control mean 0.25 with sd 10 (n=40, se ~1.6): unbounded for every alpha and side.
    v = rng.normal(0.0, 10.0, 40)
    c = {"y": rnd(v - np.mean(v) + 0.25, 3)}
    t = {"y": rnd(rng.normal(3.0, 10.0, 44), 3)}
    add_grid("control mean 0.25 sd 10", "event", c, t, intervals=("fieller",))
    # Fieller bounded but far from the delta interval (control mean 3 se from 0).
    c = {"y": rnd(rng.normal(2.0, 5.0, 60), 3)}
    t = {"y": rnd(rng.normal(3.0, 5.0, 60), 3)}
    add_grid("control mean few se from 0", "event", c, t, grid=GRID)
    # Negative control means.
    c = {"y": rnd(rng.normal(-8.0, 2.0, 70), 3)}
    t = {"y": rnd(rng.normal(-6.8, 2.5, 80), 3)}
    add_grid("negative means, treatment less negative", "event", c, t)
    c = {"y": rnd(rng.normal(-1.0, 3.0, 90), 3)}
    t = {"y": rnd(rng.normal(0.8, 3.0, 90), 3)}
    add_grid("negative control, positive treatment", "event", c, t, grid=GRID[:3])
    # Huge p-value range: a very clear effect (small p).
    c = {"y": rnd(rng.normal(10.0, 1.0, 200), 3)}
    t = {"y": rnd(rng.normal(10.6, 1.0, 200), 3)}
    add_grid("clear effect p ~ 1e-7", "event", c, t, grid=[(0.05, "two", "increase"), (0.05, "one", "increase"), (0.05, "one", "decrease")])
    # Deep tail: p ~ 1e-30 (SciPy's p is 2*stdtr(df, -|t|), accurate there; gbstats' 2*(1 - cdf) is 0).
    c = {"y": rnd(rng.normal(10.0, 1.0, 300), 3)}
    t = {"y": rnd(rng.normal(11.0, 1.0, 300), 3)}
    add_grid("very clear effect, tiny p", "event", c, t, grid=[(0.05, "two", "increase"), (0.05, "one", "increase")],
             intervals=("delta",))


def cuped_cases():
    rng = np.random.default_rng(5_2013)

    def correlated(n, mx, my, sx, sy, rho, lift=0.0):
        x = rng.normal(mx, sx, n)
        y = my + lift + rho * sy / sx * (x - mx) + math.sqrt(1 - rho ** 2) * sy * rng.normal(0, 1, n)
        return rnd(y, 3), rnd(x, 3)

    yc, xc = correlated(200, 10.0, 10.0, 3.0, 3.0, 0.7)
    yt, xt = correlated(220, 10.0, 10.0, 3.0, 3.0, 0.7, lift=0.6)
    add_grid("cuped normal rho=0.7 n=200 vs 220", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt},
             cuped=True)  # fieller cases fall back to delta (§5)
    # Revenue with zeros, pre-period revenue as covariate.
    def rev_pair(n, lift):
        active = rng.random(n) < 0.4
        base = rng.lognormal(2.5, 1.0, n)
        x = np.where(active & (rng.random(n) < 0.8), base * rng.lognormal(0, 0.3, n), 0.0)
        y = np.where(active & (rng.random(n) < 0.85), base * lift * rng.lognormal(0, 0.3, n), 0.0)
        return rnd(y, 2), rnd(x, 2)
    yc, xc = rev_pair(300, 1.0)
    yt, xt = rev_pair(320, 1.15)
    add_grid("cuped revenue zeros n=300 vs 320", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt},
             intervals=("delta",), cuped=True)
    # Conversion with a 0/1 pre-period covariate.
    def conv_pair(n, p_y_given_x1, p_y_given_x0):
        x = (rng.random(n) < 0.3).astype(float)
        y = np.where(x == 1, rng.random(n) < p_y_given_x1, rng.random(n) < p_y_given_x0).astype(float)
        return rnd(y, 0), rnd(x, 0)
    yc, xc = conv_pair(500, 0.45, 0.08)
    yt, xt = conv_pair(480, 0.50, 0.10)
    add_grid("cuped conversion 0/1 n=500 vs 480", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt},
             intervals=("delta",), cuped=True, grid=GRID[:3])
    # Covariate constant everywhere: theta = 0, variance_reduction 0, same as unadjusted.
    c = {"y": rnd(rng.normal(4.0, 1.0, 30), 3), "x": [2.0] * 30}
    t = {"y": rnd(rng.normal(4.4, 1.0, 35), 3), "x": [2.0] * 35}
    add("cuped covariate constant (theta 0)", "event", c, t, cuped=True)
    # Covariate constant in the control arm only (its s_X^2 and s_YX are 0; pooled Var(X) > 0).
    # (Constant per arm but different between arms is left out on purpose: the pooled theta then
    # absorbs the whole effect, the estimate is 0 up to rounding, see README.)
    c = {"y": rnd(rng.normal(4.0, 1.0, 30), 3), "x": [1.0] * 30}
    xt_ = rnd(rng.normal(1.0, 0.5, 35), 3)
    t = {"y": rnd(4.6 + 0.8 * (np.asarray(xt_) - 1.0) + rng.normal(0, 0.6, 35), 3), "x": xt_}
    add("cuped covariate constant in control", "event", c, t, cuped=True)
    # Imbalanced covariate: small balance p.
    yc, xc = correlated(150, 10.0, 10.0, 2.0, 2.5, 0.8)
    yt, xt = correlated(150, 11.0, 10.8, 2.0, 2.5, 0.8)
    add("cuped imbalanced covariate", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt}, cuped=True)
    # Negative control mean.
    yc, xc = correlated(100, -5.0, -6.0, 2.0, 2.0, 0.6)
    yt, xt = correlated(110, -5.0, -6.0, 2.0, 2.0, 0.6, lift=0.5)
    add_grid("cuped negative means", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt},
             intervals=("delta",), cuped=True, grid=GRID[:3])
    # Tiny.
    add("cuped tiny n=3 vs 3", "event", {"y": [1.0, 2.0, 4.0], "x": [1.5, 1.8, 3.5]},
        {"y": [2.0, 3.5, 4.5], "x": [1.0, 2.2, 3.0]}, cuped=True)
    add("cuped tiny n=2 vs 3", "event", {"y": [1.0, 3.0], "x": [0.5, 2.0]},
        {"y": [2.0, 3.5, 5.0], "x": [1.0, 2.2, 3.0]}, cuped=True)
    # Covariate uncorrelated: variance reduction ~ 0 (can be slightly negative).
    c = {"y": rnd(rng.normal(10, 2, 80), 3), "x": rnd(rng.normal(5, 1, 80), 3)}
    t = {"y": rnd(rng.normal(10.5, 2, 90), 3), "x": rnd(rng.normal(5, 1, 90), 3)}
    add("cuped uncorrelated covariate", "event", c, t, cuped=True)
    # Control mean exactly 0 with CUPED: relative null.
    add("cuped control mean exactly 0", "event",
        {"y": [-2.0, -1.0, 0.0, 1.0, 2.0, 0.0], "x": [-1.0, -1.5, 0.5, 0.0, 2.5, 0.0]},
        {"y": [0.5, 1.5, -0.5, 2.0, 1.0], "x": [0.0, 1.0, -1.0, 2.0, 0.5]}, cuped=True)
    # Larger.
    yc, xc = correlated(2000, 50.0, 50.0, 10.0, 12.0, 0.9)
    yt, xt = correlated(2000, 50.0, 50.0, 10.0, 12.0, 0.9, lift=0.8)
    add_grid("cuped n=2000 each rho=0.9", "event", {"y": yc, "x": xc}, {"y": yt, "x": xt},
             intervals=("delta",), cuped=True, grid=[(0.05, "two", "increase"), (0.1, "one", "increase")])


def ratio_cases():
    rng = np.random.default_rng(2018_0819)

    def sessions_revenue(n, aov, p_order):
        den = rng.poisson(3.0, n) + 1.0  # sessions
        orders = rng.binomial(den.astype(int), p_order)
        num = np.array([rng.lognormal(math.log(aov), 0.5, k).sum() for k in orders])
        return rnd(num, 2), rnd(den, 0)

    nc, dc = sessions_revenue(200, 40.0, 0.15)
    nt, dt = sessions_revenue(220, 42.0, 0.17)
    add_grid("ratio revenue per session n=200 vs 220", "ratio", {"num": nc, "den": dc}, {"num": nt, "den": dt})

    def clicks_per_view(n, p):
        den = rng.poisson(6.0, n) + 1.0
        num = rng.binomial(den.astype(int), p).astype(float)
        return rnd(num, 0), rnd(den, 0)
    nc, dc = clicks_per_view(300, 0.10)
    nt, dt = clicks_per_view(320, 0.115)
    add_grid("ratio clicks per view n=300 vs 320", "ratio", {"num": nc, "den": dc}, {"num": nt, "den": dt},
             grid=GRID[:3])
    # Denominator with zeros for some participants (mean still > 0).
    den_c = rnd(rng.poisson(1.0, 150), 0)
    den_t = rnd(rng.poisson(1.1, 160), 0)
    num_c = rnd(np.asarray(den_c) * rng.normal(5.0, 1.0, 150), 2)
    num_t = rnd(np.asarray(den_t) * rng.normal(5.4, 1.0, 160), 2)
    add_grid("ratio with zero denominators", "ratio", {"num": num_c, "den": den_c}, {"num": num_t, "den": den_t},
             grid=[(0.05, "two", "increase")])
    # Negative numerators (e.g. net margin per order).
    den_c = rnd(rng.poisson(2.0, 120) + 1, 0)
    den_t = rnd(rng.poisson(2.0, 130) + 1, 0)
    num_c = rnd(np.asarray(den_c) * rng.normal(-3.0, 2.0, 120), 2)
    num_t = rnd(np.asarray(den_t) * rng.normal(-2.5, 2.0, 130), 2)
    add_grid("ratio negative numerator means", "ratio", {"num": num_c, "den": den_c}, {"num": num_t, "den": den_t},
             grid=GRID[:3])
    # Numerator mean near 0 (ratio near 0): Fieller unbounded.
    den_c = rnd(rng.poisson(2.0, 40) + 1, 0)
    den_t = rnd(rng.poisson(2.0, 45) + 1, 0)
    num_c = rnd(rng.normal(0.2, 8.0, 40), 2)
    num_t = rnd(rng.normal(1.0, 8.0, 45), 2)
    add_grid("ratio control near 0", "ratio", {"num": num_c, "den": den_c}, {"num": num_t, "den": den_t},
             grid=[(0.05, "two", "increase")])
    # Tiny.
    add("ratio tiny n=3 vs 3", "ratio", {"num": [2.0, 5.0, 1.0], "den": [1.0, 3.0, 2.0]},
        {"num": [4.0, 3.0, 6.0], "den": [2.0, 1.0, 3.0]})
    add("ratio tiny n=2 vs 2 fieller", "ratio", {"num": [2.0, 5.0], "den": [1.0, 3.0]},
        {"num": [4.0, 3.0], "den": [2.0, 1.0]}, relative_interval="fieller")
    # Not computable.
    add("ratio control denominators all 0", "ratio", {"num": [0.0, 0.0, 0.0], "den": [0.0, 0.0, 0.0]},
        {"num": [1.0, 2.0, 3.0], "den": [1.0, 1.0, 2.0]})
    add("ratio control n=1", "ratio", {"num": [1.0], "den": [2.0]},
        {"num": [1.0, 2.0, 3.0], "den": [1.0, 1.0, 2.0]})
    # Numerator equal to a multiple of the denominator in every arm: per-unit variance 0 -> null.
    add("ratio exact proportional (zero variance)", "ratio", {"num": [2.0, 4.0, 6.0], "den": [1.0, 2.0, 3.0]},
        {"num": [3.0, 6.0, 9.0, 3.0], "den": [1.0, 2.0, 3.0, 1.0]})
    # Numerator sum 0 in control: relative null.
    add("ratio control numerator mean 0", "ratio", {"num": [1.0, -1.0, 2.0, -2.0], "den": [1.0, 2.0, 1.0, 3.0]},
        {"num": [1.0, 2.0, 0.5, 1.5], "den": [1.0, 2.0, 1.0, 1.0]})
    # Large case; bootstrap cross-check of the delta-method variance.
    nc, dc = sessions_revenue(2000, 30.0, 0.2)
    nt, dt = sessions_revenue(2000, 31.0, 0.2)
    add_grid("ratio revenue per session n=2000 each", "ratio", {"num": nc, "den": dc}, {"num": nt, "den": dt},
             grid=[(0.05, "two", "increase")])
    bootstrap_check(np.asarray(nc), np.asarray(dc))


def bootstrap_check(num, den, reps=4000):
    """The delta-method variance of a ratio against a nonparametric bootstrap (not in the JSON)."""
    rng = np.random.default_rng(1)
    n = num.size
    idx = rng.integers(0, n, size=(reps, n))
    boot = num[idx].mean(axis=1) / den[idx].mean(axis=1)
    sd_boot = float(np.std(boot, ddof=1))
    sd_delta = math.sqrt(ratio_delta_unit_var(num, den) / n)
    assert abs(sd_boot / sd_delta - 1) < 0.05, (sd_boot, sd_delta)
    print(f"bootstrap check: ratio sd {sd_boot:.6g} (bootstrap, {reps} reps) vs {sd_delta:.6g} (delta)")


def ratio_cuped_cases():
    rng = np.random.default_rng(777)

    def arm(n, aov, p_order, lift=1.0):
        intensity = rng.lognormal(0.0, 0.5, n)
        den_pre = rng.poisson(3.0 * intensity) + 1.0
        den = rng.poisson(3.0 * intensity) + 1.0
        num_pre = rng.binomial(den_pre.astype(int), p_order) * aov * rng.lognormal(0, 0.3, n) * intensity
        num = rng.binomial(den.astype(int), p_order) * aov * lift * rng.lognormal(0, 0.3, n) * intensity
        return {"num": rnd(num, 2), "den": rnd(den, 0), "x_num": rnd(num_pre, 2), "x_den": rnd(den_pre, 0)}

    c, t = arm(300, 40.0, 0.3), arm(320, 40.0, 0.3, lift=1.08)
    add_grid("ratio cuped n=300 vs 320", "ratio", c, t, intervals=("delta",), cuped=True)
    c, t = arm(60, 25.0, 0.5), arm(60, 25.0, 0.5, lift=0.9)
    add_grid("ratio cuped n=60 each", "ratio", c, t, intervals=("delta",), cuped=True, grid=GRID[:3])
    # Negative-valued numerator (margin), to exercise the sign of the relative gradient.
    c = arm(150, 10.0, 0.5)
    t = arm(150, 10.0, 0.5)
    for arm_ in (c, t):
        shift = rng.normal(0, 1, len(arm_["num"]))
        arm_["num"] = rnd(np.asarray(arm_["num"]) * -1.0 + shift, 2)
        arm_["x_num"] = rnd(np.asarray(arm_["x_num"]) * -1.0 + shift, 2)
    add("ratio cuped negative numerators", "ratio", c, t, cuped=True)
    add("ratio cuped tiny n=4 vs 4", "ratio",
        {"num": [2.0, 5.0, 1.0, 3.0], "den": [1.0, 3.0, 2.0, 2.0], "x_num": [1.5, 4.0, 1.0, 3.5], "x_den": [1.0, 2.0, 2.0, 3.0]},
        {"num": [4.0, 3.0, 6.0, 2.5], "den": [2.0, 1.0, 3.0, 1.0], "x_num": [3.0, 2.0, 5.0, 2.0], "x_den": [2.0, 1.0, 2.0, 2.0]},
        cuped=True)


def correction_cases():
    cases = []
    vectors = {
        "single": [0.03],
        "single p=0": [0.0],
        "single p=1": [1.0],
        "two": [0.01, 0.04],
        "ties": [0.02, 0.02, 0.02, 0.5],
        "ties at the bottom and top": [0.001, 0.001, 0.3, 0.3, 1.0, 1.0],
        "with p=0 and p=1": [0.0, 0.2, 1.0, 0.04, 0.0],
        "unsorted five": [0.04, 0.001, 0.5, 0.012, 0.03],
        "all significant": [0.001, 0.002, 0.003, 0.004],
        "none significant": [0.6, 0.7, 0.8, 0.95],
        "bh step-up reversal": [0.01, 0.02, 0.03, 0.04, 0.05],
        "tiny p-values": [1e-300, 1e-12, 3e-8, 0.5],
    }
    rng = np.random.default_rng(31337)
    vectors["ten mixed"] = [float(v) for v in np.round(np.concatenate([rng.uniform(0, 0.05, 4), rng.uniform(0, 1, 6)]), 6)]
    vectors["thirty uniform"] = [float(v) for v in rng.uniform(0, 1, 30)]
    vectors["thirty mostly small"] = [float(v) for v in np.round(rng.beta(0.3, 4, 30), 8)]
    for name, p in vectors.items():
        for alpha in (0.05, 0.1) if name in ("unsorted five", "thirty mostly small") else (0.05,):
            for method, sm_name in (("bonferroni", "bonferroni"), ("holm", "holm"), ("benjamini_hochberg", "fdr_bh")):
                _, adj, _, _ = multipletests(np.asarray(p, float), alpha=alpha, method=sm_name)
                adj = [float(min(1.0, v)) for v in adj]
                cases.append({"name": f"{name} {method} alpha={alpha}", "method": method, "alpha": alpha,
                              "p_values": [float(v) for v in p], "adjusted": adj})
    return cases


def percentile_cases():
    rng = np.random.default_rng(99)
    sets = {
        "revenue with zeros": rnd(np.where(rng.random(400) < 0.4, rng.lognormal(3, 1, 400), 0.0), 2),
        "integers 1..10": [float(v) for v in range(1, 11)],
        "single value": [42.0],
        "two values": [0.0, 10.0],
        "all equal": [3.5] * 7,
        "heavy tail": rnd(rng.pareto(1.5, 1000) * 10, 3),
        "mostly zeros": [0.0] * 95 + [1.0, 2.0, 3.0, 50.0, 1000.0],
        "negative and positive": rnd(rng.normal(0, 10, 101), 2),
    }
    cases = []
    for name, values in sets.items():
        for ignore_zeros in (False, True):
            arr = np.asarray(values, float)
            if ignore_zeros:
                arr = arr[arr != 0]
                if arr.size == len(values) and name not in ("integers 1..10",):
                    continue  # no zeros: identical to the other case
            for q in (0.5, 0.9, 0.95, 0.99, 0.999):
                exp = float(np.percentile(arr, 100 * q, method="linear")) if arr.size else None
                cases.append({"name": f"{name} q={q}{' ignore zeros' if ignore_zeros else ''}",
                              "values": [float(v) for v in values], "q": q,
                              "ignore_zeros": ignore_zeros, "expected": exp})
    cases.append({"name": "all zeros ignore zeros (nothing left: null)", "values": [0.0] * 5, "q": 0.95,
                  "ignore_zeros": True, "expected": None})
    return cases


# ---------------------------------------------------------------------------------------------

def dump(path, doc):
    text = json.dumps(doc, indent=2, allow_nan=False)
    # Keep arrays of numbers on one line (the files hold thousands of raw values).
    text = re.sub(r"\[\s*([-+0-9.eE,\s]+?)\s*\]", lambda m: "[" + ", ".join(
        s.strip() for s in m.group(1).split(",")) + "]", text)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.write("\n")
    return len(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gbstats", default=os.environ.get("GBSTATS_PATH"),
                    help="directory containing the gbstats package (growthbook/packages/stats)")
    args = ap.parse_args()
    load_gbstats(args.gbstats)
    event_cases()
    cuped_cases()
    ratio_cases()
    ratio_cuped_cases()
    versions = {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
                "statsmodels": statsmodels.__version__}
    if GB_INFO:
        versions["gbstats"] = GB_INFO
    meta = {"generator": "packages/stats/test-vectors/generate_analysis_fixtures.py", "versions": versions}
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    docs = {
        "analysis.json": {**meta, "cases": CASES},
        "corrections.json": {**meta, "cases": correction_cases()},
        "percentiles.json": {**meta, "cases": percentile_cases()},
    }
    for name, doc in docs.items():
        size = dump(OUT / name, doc)
        print(f"{name}: {len(doc['cases'])} cases, {size} bytes")
    if CUPED_GRADIENT_DIFF:
        worst = max(CUPED_GRADIENT_DIFF)
        print(f"event CUPED relative se, §5/gbstats formula vs exact gradient: worst relative "
              f"difference {worst[0]:.3g} ({worst[1]})")
    if GB is not None:
        print(f"gbstats: {GB_CHECKS['compared']} values compared, worst scaled difference "
              f"{GB_CHECKS['worst'][0]:.3g} ({GB_CHECKS['worst'][1]})")
        for line in GB_CHECKS.get("gbstats_null", []):
            print(f"  no gbstats result where the conventions give one: {line}")


if __name__ == "__main__":
    main()
