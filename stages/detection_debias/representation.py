"""The representation score (RS) of object groups and the layout samplers it guides (Sec. 3.1 of the paper).

RS_g = F_g x (D_vis,g + beta D_ctx,g) / (1 + beta): a frequency term times the visual diversity of the group's
ROI features plus beta times the diversity of their context features (each diversity divided by its mean over
the groups, so a group of average diversity has RS = F). New layouts draw groups with p_g ∝ (RS_g + eps)^-tau;
the inverse-frequency sampler is the same rule on F_g alone.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

Diversity = Literal["cosine", "euclidean"]


def feature_diversity(features: np.ndarray, kind: Diversity = "cosine") -> float:
    """D(X) (Sec. 3.1): mean pairwise distance among a group's feature vectors (0 for identical ones or below two)."""
    x = np.asarray(features, dtype=np.float64)
    n = len(x)
    if n < 2:
        return 0.0
    if kind == "cosine":
        unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        dist = 1.0 - unit @ unit.T
    else:
        sq = (x ** 2).sum(1)
        dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * x @ x.T, 0.0))
    return float(max(0.0, (dist.sum() - np.trace(dist)) / (n * (n - 1))))


def frequency_term(counts: np.ndarray) -> np.ndarray:
    """F_g (Sec. 3.1): the group's instance count over the largest group's count."""
    counts = np.asarray(counts, dtype=np.float64)
    return counts / max(1.0, counts.max())


def normalised(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A diversity over its mean across the groups with two or more instances (average diversity = 1)."""
    d = np.asarray(d, dtype=np.float64)
    seen = np.asarray(counts) >= 2
    mean = d[seen].mean() if seen.any() else 0.0
    return d / mean if mean > 0 else np.zeros_like(d)


def representation_score(freq: np.ndarray, d_vis: np.ndarray, d_ctx: np.ndarray, beta: float) -> np.ndarray:
    """RS_g = F_g x (D_vis,g + beta D_ctx,g) / (1 + beta) (Eq. 1, diversities already normalised)."""
    return np.asarray(freq) * (np.asarray(d_vis) + beta * np.asarray(d_ctx)) / (1.0 + beta)


def sampling_probabilities(scores: np.ndarray, eps: float, tau: float) -> np.ndarray:
    """p_g ∝ (s_g + eps)^-tau (Eq. 2): the probability that a new layout's object is of group g."""
    w = (np.asarray(scores, dtype=np.float64) + eps) ** (-tau)
    return w / w.sum()


def group_scores(groups: np.ndarray, roi: np.ndarray, context: np.ndarray, n_groups: int, beta: float,
                 kind: Diversity, max_per_group: int, gen: np.random.Generator) -> dict[str, np.ndarray]:
    """Per group: count, F, raw and normalised D_vis / D_ctx, and RS, from the instances' ROI and context features
    (at most ``max_per_group`` instances per group, drawn at random, enter the pairwise diversities)."""
    counts = np.bincount(groups, minlength=n_groups)
    d_vis, d_ctx = np.zeros(n_groups), np.zeros(n_groups)
    for g in range(n_groups):
        idx = np.flatnonzero(groups == g)
        if len(idx) > max_per_group:
            idx = np.sort(gen.choice(idx, max_per_group, replace=False))
        d_vis[g] = feature_diversity(roi[idx], kind)
        d_ctx[g] = feature_diversity(context[idx], kind)
    freq = frequency_term(counts)
    nv, nc = normalised(d_vis, counts), normalised(d_ctx, counts)
    return {"count": counts, "frequency": freq, "d_vis": d_vis, "d_ctx": d_ctx, "d_vis_norm": nv, "d_ctx_norm": nc,
            "rs": representation_score(freq, nv, nc, beta)}


def percentile_rank(values: np.ndarray, members: list[int]) -> float:
    """Mean over ``members`` of the fraction of groups whose value is strictly below the member's (0 = lowest)."""
    values = np.asarray(values, dtype=np.float64)
    return float(np.mean([(values < values[m]).mean() for m in members]))
