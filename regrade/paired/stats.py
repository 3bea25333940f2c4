"""Statistics of a paired before/after table.

A comparison of a treatment against a baseline over the same N tasks has four counts:
``retained`` (pass, pass), ``regressions`` b (pass, fail), ``gains`` c (fail, pass) and
``residual`` (fail, fail). The net effect is delta = (c - b) / N.

- :func:`mcnemar_exact`: two-sided exact McNemar test, p = min(1, 2 P[X <= min(b, c)])
  for X ~ Binomial(b + c, 1/2); concordant tasks carry no information about direction.
- :func:`mcnemar_mid_p`: the mid-p McNemar test, the exact p less the probability of the
  observed count, 2 (P[X <= min(b, c) - 1] + P[X = min(b, c)] / 2). Fagerland, Lydersen and
  Laake (BMC Medical Research Methodology 13:91, 2013) find it keeps the nominal level in
  practice with more power than the exact test, which is conservative for small b + c.
- :func:`newcombe_interval`: Newcombe's hybrid score interval for a difference of paired
  proportions (method 10, Statistics in Medicine 1998): Wilson limits of each margin
  combined with the phi correlation of the 2x2 table.
- :func:`wald_interval`: the paired Wald interval delta +- z sqrt((b + c)/N^2 - (c - b)^2/N^3),
  which reproduces the Regression Tax study's Table 2 (labelled "Newcombe" there).
- :func:`adjust`: Bonferroni or Holm adjusted p-values over a family of comparisons.
"""

from __future__ import annotations

import math
from statistics import NormalDist

CORRECTIONS = ("bonferroni", "holm", "none")
INTERVALS = ("newcombe", "wald")
TESTS = ("exact", "mid-p")


def mcnemar_exact(regressions: int, gains: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (1 when there are none)."""
    n = regressions + gains
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(regressions, gains) + 1))
    return min(1.0, 2 * tail / 2**n)


def mcnemar_mid_p(regressions: int, gains: int) -> float:
    """Two-sided mid-p McNemar p-value from the discordant pairs (1 when there are none)."""
    n = regressions + gains
    if n == 0:
        return 1.0
    k = min(regressions, gains)
    below = sum(math.comb(n, i) for i in range(k))
    return min(1.0, (2 * below + math.comb(n, k)) / 2**n)


def mcnemar(regressions: int, gains: int, test: str = "exact") -> float:
    """The McNemar p-value by ``test``, one of :data:`TESTS`."""
    if test == "exact":
        return mcnemar_exact(regressions, gains)
    if test == "mid-p":
        return mcnemar_mid_p(regressions, gains)
    raise ValueError(f"unknown test {test!r}; choose one of: {', '.join(TESTS)}")


def _z(alpha: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2)


def wilson(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval of one proportion."""
    if n == 0:
        return 0.0, 1.0
    z = _z(alpha)
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    # at 0 (n) successes the bound is exactly 0 (1); the formula leaves a rounding's 1e-19 there
    return (0.0 if successes == 0 else (centre - spread) / scale), (1.0 if successes == n else (centre + spread) / scale)


def newcombe_interval(retained: int, regressions: int, gains: int, residual: int,
                      alpha: float = 0.05) -> tuple[float, float]:
    """Newcombe's method 10 interval for delta = p_treatment - p_baseline, as fractions."""
    n = retained + regressions + gains + residual
    if n == 0:
        raise ValueError("no paired tasks")
    p_treatment, p_baseline = (retained + gains) / n, (retained + regressions) / n
    delta = p_treatment - p_baseline
    l1, u1 = wilson(retained + gains, n, alpha)
    l2, u2 = wilson(retained + regressions, n, alpha)
    phi = _phi(retained, regressions, gains, residual)
    lower = delta - math.sqrt(max(0.0, (p_treatment - l1) ** 2 - 2 * phi * (p_treatment - l1) * (u2 - p_baseline)
                                  + (u2 - p_baseline) ** 2))
    upper = delta + math.sqrt(max(0.0, (u1 - p_treatment) ** 2 - 2 * phi * (u1 - p_treatment) * (p_baseline - l2)
                                  + (p_baseline - l2) ** 2))
    return lower, upper


def _phi(a: int, b: int, c: int, d: int) -> float:
    """The phi coefficient of the 2x2 table (a d - b c with Newcombe's continuity adjustment)."""
    n = a + b + c + d
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    numerator = float(a * d - b * c)
    if numerator > n / 2:
        numerator -= n / 2
    elif numerator >= 0:
        numerator = 0
    return numerator / math.sqrt(margins)


def wald_interval(retained: int, regressions: int, gains: int, residual: int,
                  alpha: float = 0.05) -> tuple[float, float]:
    """The paired Wald interval for delta, as fractions."""
    n = retained + regressions + gains + residual
    if n == 0:
        raise ValueError("no paired tasks")
    delta = (gains - regressions) / n
    spread = _z(alpha) * math.sqrt(max(0.0, (gains + regressions) / n**2 - (gains - regressions) ** 2 / n**3))
    return delta - spread, delta + spread


def mean_interval(differences: list[float], alpha: float = 0.05) -> tuple[float, float]:
    """Normal interval of a mean paired difference (soft task scores): mean +- z sd / sqrt(n)."""
    n = len(differences)
    mean = sum(differences) / n
    if n < 2:
        return mean, mean
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    spread = _z(alpha) * math.sqrt(variance / n)
    return mean - spread, mean + spread


def adjust(p_values: list[float], method: str = "bonferroni") -> list[float]:
    """Adjusted p-values over the family ``p_values`` (in the same order)."""
    m = len(p_values)
    if method == "none":
        return list(p_values)
    if method == "bonferroni":
        return [min(1.0, p * m) for p in p_values]
    if method == "holm":
        order = sorted(range(m), key=lambda i: p_values[i])
        adjusted, running = [0.0] * m, 0.0
        for rank, index in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[index]))
            adjusted[index] = running
        return adjusted
    raise ValueError(f"unknown correction {method!r}; choose one of: {', '.join(CORRECTIONS)}")
