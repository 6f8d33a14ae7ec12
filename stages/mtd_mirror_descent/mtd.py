"""Mixture of Transition Distributions: P(y_t | past) = Σ_g λ_g π*(y_{t−g}, y_t)."""

from __future__ import annotations

import numpy as np


def transition_matrix(q: int, concentration: float, floor: float, gen: np.random.Generator) -> np.ndarray:
    """A row-stochastic π* with strictly positive entries: Dirichlet rows mixed with uniform."""
    rows = gen.dirichlet(np.full(q, concentration), size=q)
    return (1.0 - floor) * rows + floor / q


def sample_sequences(pi: np.ndarray, m: int, length: int, n: int, dirichlet_alpha: float,
                     gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n sequences of the MTD model (Sec. 2): a fresh λ ~ Dir(α) per sequence, lag g ~ λ per token.

    The first m tokens are drawn uniformly (no full history yet). Returns tokens (n, length),
    λ (n, m) and the lags used (n, length; 0 where the token was drawn uniformly).
    """
    q = pi.shape[0]
    lam = gen.dirichlet(np.full(m, dirichlet_alpha), size=n)
    tokens = np.empty((n, length), dtype=np.int64)
    lags = np.zeros((n, length), dtype=np.int64)
    tokens[:, :m] = gen.integers(0, q, size=(n, m))
    cum_pi = np.cumsum(pi, axis=1)
    cum_lam = np.cumsum(lam, axis=1)
    for t in range(m, length):
        g = 1 + (gen.random((n, 1)) > cum_lam).sum(axis=1).clip(max=m - 1)
        prev = tokens[np.arange(n), t - g]
        tokens[:, t] = (gen.random((n, 1)) > cum_pi[prev]).sum(axis=1).clip(max=q - 1)
        lags[:, t] = g
    return tokens, lam, lags


def lag_transition_probs(pi: np.ndarray, tokens: np.ndarray, m: int) -> np.ndarray:
    """P[b, k, g−1] = π*(y_{k−g}, y_k) for positions k ≥ m and lags g = 1..m; shape (B, T−m, m)."""
    t = tokens.shape[1]
    return np.stack([pi[tokens[:, m - g:t - g], tokens[:, m:]] for g in range(1, m + 1)], axis=-1)


def next_token_distribution(pi: np.ndarray, tokens: np.ndarray, lam: np.ndarray, m: int) -> np.ndarray:
    """P(y_{T+1} = · | y_{1:T}, λ) = Σ_g λ_g π*(y_{T+1−g}, ·) for each row; tokens (B, T), λ (B, m)."""
    prev = tokens[:, -np.arange(1, m + 1)]  # y_T, y_{T−1}, ..., y_{T+1−m}
    return np.einsum("bg,bgj->bj", lam, pi[prev])


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL(p ‖ q) along the last axis (p > 0 here, so no 0·log 0 terms)."""
    return np.sum(p * (np.log(p) - np.log(q)), axis=-1)
