"""Estimators read off simulated flows: scaling exponents, escape times, a located transition.

None of them calls the formulas under test (λ_c = c^{1/4}, the BBP overlaps, the stall
ratio); they take numbers measured on sampled matrices and return numbers.
"""

from __future__ import annotations

import numpy as np


def scaling_exponent(sizes: np.ndarray, gaps: np.ndarray) -> float:
    """Least-squares slope of log gap on log n: gap ∝ n^slope (−½ for CLT-size fluctuations)."""
    x, y = np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(gaps, dtype=float))
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("a scaling exponent needs at least two distinct sizes")
    return float(np.polyfit(x, y, 1)[0])


def bootstrap_interval(values: np.ndarray, seed: int, draws: int = 2000, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` over resamples of them (one value per seed)."""
    values = np.asarray(values, dtype=float)
    gen = np.random.default_rng(seed)
    means = values[gen.integers(0, values.size, size=(draws, values.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def settle_time(t: np.ndarray, q: np.ndarray, target: float, tolerance: float) -> float:
    """First recorded time from which ||q| − target| ≤ tolerance·target at every later record.

    The last recorded time if even the last record is outside that band (a censored time).
    """
    inside = np.abs(np.abs(np.asarray(q, dtype=float)) - target) <= tolerance * target
    if not inside[-1]:
        return float(t[-1])
    outside = np.nonzero(~inside)[0]
    return float(t[outside[-1] + 1]) if outside.size else float(t[0])


def peak_ratio(ratios: np.ndarray, times: np.ndarray) -> float:
    """The scanned ratio with the longest settle time; the mean of the tied ones if several."""
    ratios, times = np.asarray(ratios, dtype=float), np.asarray(times, dtype=float)
    return float(ratios[times == times.max()].mean())


def hinge_fit(lams: np.ndarray, y: np.ndarray, n_grid: int = 2001) -> tuple[float, float, float, float]:
    """Fit y ≈ b + a·h + d·h², h = max(0, λ − λ̂), by least squares; returns (λ̂, a, d, b).

    The quadratic term lets the rise above λ̂ bend (an overlap curve is concave there);
    λ̂ is searched on a uniform grid between the smallest and the third-largest λ (so at
    least three points lie on the rising side); a, d, b are linear least squares at each λ̂.
    """
    lams, y = np.asarray(lams, dtype=float), np.asarray(y, dtype=float)
    order = np.argsort(lams)
    lams, y = lams[order], y[order]
    if lams.size < 4:
        raise ValueError("a hinge fit needs at least four points")
    best = (np.inf, float("nan"), float("nan"), float("nan"), float("nan"))
    for knot in np.linspace(lams[0], lams[-3], n_grid):
        h = np.maximum(0.0, lams - knot)
        design = np.stack([np.ones_like(lams), h, h * h], axis=1)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        sse = float(np.sum((design @ coef - y) ** 2))
        if sse < best[0]:
            best = (sse, float(knot), float(coef[1]), float(coef[2]), float(coef[0]))
    return best[1], best[2], best[3], best[4]
