#!/usr/bin/env python3
"""Expected answers of the power and duration routes (hosts/server/test/rest-experiment-power.test.ts).

The inputs are what the test seeds, with the mean and variance worked out by hand from its events
(docs/statistics.md §14): revenue sums per unit [20, 20, 30, 40, 0 x 6] (mean 11, variance
2090/9), purchase conversions 5 of 10 (mean 0.5, variance 2.5/9), 10 units in the 14-day window.

- Fixed horizon: statsmodels NormalIndPower (solve_power for nobs1 at `ratio` = n_T/n_C, power for
  the current power); per arm ceil(nobs1) and ceil(ratio * nobs1).
- Sequential (two-sided normal mixture, docs/statistics.md §9): brentq on the power at one look,
  Phi(d/se - b) + Phi(-d/se - b), b = sqrt((1+r)/r (ln(1+r) - 2 ln alpha)), r = 2n rho^2,
  rho^2 = (-2 ln alpha + ln(1 - 2 ln alpha)) / N*.

Run: /usr/bin/python3 packages/stats/test-vectors/generate_power_api_fixtures.py
writes hosts/server/test/fixtures/power-api.json.
"""
import json
import math
import os

import scipy
import statsmodels
from scipy import optimize, stats
from statsmodels.stats.power import NormalIndPower

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "..", "hosts", "server", "test", "fixtures", "power-api.json")

REVENUE = (11.0, 2090.0 / 9.0)
PURCHASE = (0.5, 2.5 / 9.0)
UNITS, WINDOW_DAYS = 10, 14


def fixed(mean, var, mde, alpha, power, sides, ratio=1.0):
    d = abs(mde * mean) / math.sqrt(var)
    alt = "two-sided" if sides == "two" else "larger"
    nobs1 = float(NormalIndPower().solve_power(effect_size=d, alpha=alpha, power=power, ratio=ratio, alternative=alt))
    return [math.ceil(nobs1), math.ceil(ratio * nobs1)]


def sequential(mean, var, mde, alpha, power, tuning_n):
    effect = abs(mde * mean)
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / tuning_n

    def power_at(n):
        r = 2 * n * rho2
        b = math.sqrt((1 + r) / r * (math.log1p(r) - 2 * math.log(alpha)))
        d = effect / math.sqrt(var * 2 / n)
        return stats.norm.cdf(d - b) + stats.norm.cdf(-d - b)

    n = optimize.brentq(lambda n: power_at(n) - power, 1e-3, 1e12, xtol=1e-12, rtol=1e-15, maxiter=500)
    return [math.ceil(n), math.ceil(n)]


def current_power(mean, var, mde, alpha, n_c, n_t):
    d = abs(mde * mean) / math.sqrt(var)
    return float(NormalIndPower().power(effect_size=d, nobs1=n_c, alpha=alpha, ratio=n_t / n_c, alternative="two-sided"))


def main():
    cases = {
        "revenue": {"mean": REVENUE[0], "variance": REVENUE[1], "mde": 0.1, "alpha": 0.05, "power": 0.8, "traffic_allocation": 0.5,
                    "exposures_per_day": UNITS / WINDOW_DAYS * 0.5, "fixed": fixed(*REVENUE, 0.1, 0.05, 0.8, "two")},
        "purchase_sequential": {"mean": PURCHASE[0], "variance": PURCHASE[1], "mde": 0.2, "alpha": 0.05, "power": 0.8, "tuning_n": 5000,
                                "exposures_per_day": UNITS / WINDOW_DAYS, "fixed": fixed(*PURCHASE, 0.2, 0.05, 0.8, "two"),
                                "sequential": sequential(*PURCHASE, 0.2, 0.05, 0.8, 5000)},
        "by_hand_weighted": {"mean": 25.0, "variance": 900.0, "mde": 0.05, "alpha": 0.1, "power": 0.9, "sides": "one", "weights": [1, 3],
                             "exposures_per_day": 1000.0, "fixed": fixed(25.0, 900.0, 0.05, 0.1, 0.9, "one", ratio=3.0)},
        "experiment_revenue": {"mean": REVENUE[0], "variance": REVENUE[1], "mde": 0.1, "alpha": 0.05, "power": 0.8, "participants": [30, 30],
                               "fixed": fixed(*REVENUE, 0.1, 0.05, 0.8, "two"),
                               "current_power": current_power(*REVENUE, 0.1, 0.05, 30, 30)},
    }
    out = {"generator": "packages/stats/test-vectors/generate_power_api_fixtures.py",
           "versions": {"scipy": scipy.__version__, "statsmodels": statsmodels.__version__}, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
