"""From a generator's output to hyperlinks: the one decoding rule of every method, memorisation, likelihood."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy.special import log_expit, logsumexp

from stages.relash.hypergraph import members_key


def decode_hyperlinks(probs: np.ndarray, rng: np.random.Generator, max_tries: int) -> list[str]:
    """Bernoulli memberships conditioned on size ≥ 2 (rejection, up to ``max_tries``), else the top two nodes."""
    m, _ = probs.shape
    out: list[str | None] = [None] * m
    todo = np.arange(m)
    for _ in range(max_tries):
        draws = rng.random((todo.size, probs.shape[1])) < probs[todo]
        ok = draws.sum(axis=1) >= 2
        for j, row in zip(todo[ok], draws[ok], strict=True):
            out[j] = members_key(np.flatnonzero(row))
        todo = todo[~ok]
        if todo.size == 0:
            break
    for j in todo:
        top = np.argsort(-probs[j], kind="stable")[:2]
        out[j] = members_key(top)
    return [s for s in out if s is not None]


def memorisation_rate(generated: Iterable[str], training: Iterable[str]) -> float:
    """Fraction of generated hyperlinks whose node set equals a training hyperlink's."""
    train = set(training)
    gen = list(generated)
    return float(np.mean([g in train for g in gen])) if gen else float("nan")


def mixture_log_likelihood(a: np.ndarray, x_std: np.ndarray, logits: np.ndarray, x_mean: np.ndarray,
                           log_s: np.ndarray) -> np.ndarray:
    """log (1/S) Σ_s P(A_j | u_s) N(x_j; mean_s, diag(s²)) per held-out hyperlink j, over S latent draws."""
    ll = a @ log_expit(logits).T + (1 - a) @ log_expit(-logits).T
    var = np.exp(2 * log_s)
    sq = ((x_std ** 2) / var).sum(axis=1)[:, None] - 2 * (x_std / var) @ x_mean.T + ((x_mean ** 2) / var).sum(axis=1)
    ll = ll - 0.5 * sq - log_s.sum() - 0.5 * x_std.shape[1] * math.log(2 * math.pi)
    return logsumexp(ll, axis=1) - math.log(logits.shape[0])
