"""Controls for the closeness checks: shrinkage toward uniform λ, and a content-blind positional head.

Neither is in the paper; they are what a trained model must beat before "closer to mirror
descent" or "layer 1 computes the responsibilities" can mean anything. Any estimator shrunk
toward the uniform-λ predictor is a less confident version of it; a head that attends to
lags 1..m with fixed weights knows where the candidate parents are but not which one fits.
"""

from __future__ import annotations

import itertools

import numpy as np


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """TV(p, q) = ½ Σ |p − q| along the last axis."""
    return 0.5 * np.abs(p - q).sum(axis=-1)


def shrink(lam: np.ndarray, beta: float) -> np.ndarray:
    """The shrinkage family β·λ̂ + (1 − β)·uniform; the prediction is linear in λ, so it is shrunk the same way."""
    return beta * lam + (1.0 - beta) / lam.shape[-1]


def fit_beta(target: list[np.ndarray], estimate: list[np.ndarray], uniform: list[np.ndarray],
             grid: np.ndarray) -> float:
    """The β in ``grid`` whose β·estimate + (1 − β)·uniform prediction is closest in mean TV to ``target``.

    Each list holds one (n, q) array per context length; the mean is over lengths and rows.
    """
    def loss(beta: float) -> float:
        return float(np.mean([total_variation(t, beta * e + (1.0 - beta) * u).mean()
                              for t, e, u in zip(target, estimate, uniform, strict=True)]))

    return float(grid[int(np.argmin([loss(b) for b in grid]))])


def simplex_grid(m: int, step: float) -> np.ndarray:
    """Every point of the m-simplex whose coordinates are multiples of ``step``: shape (n_points, m)."""
    n = round(1.0 / step)
    pts = [c for c in itertools.product(range(n + 1), repeat=m - 1) if sum(c) <= n]
    return np.array([[*c, n - sum(c)] for c in pts], dtype=float) / n


def positional_head_tv(weights: np.ndarray, gamma: np.ndarray) -> float:
    """Mean TV between a content-blind head (fixed weights over lags 1..m) and the responsibilities γ (…, m)."""
    return float(total_variation(gamma, weights).mean())


def fit_positional_head(gamma: np.ndarray, step: float) -> np.ndarray:
    """The content-blind lag weights closest in mean TV to γ (fitted on one split): the simplex grid and uniform."""
    m = gamma.shape[-1]
    grid = np.vstack([np.full((1, m), 1.0 / m), simplex_grid(m, step)])
    flat = gamma.reshape(-1, gamma.shape[-1])
    return grid[int(np.argmin([positional_head_tv(w, flat) for w in grid]))]
