"""The four CoT metric families of M3CoTBench (Sec. 3.3 of the paper), each a named function."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def step_prf(n_pred: int, n_key: int, n_matched: int) -> tuple[float, float, float]:
    """Correctness (Sec. 3.3): precision = matched / predicted steps, recall = matched / key steps, F1 their
    harmonic mean; an empty chain scores 0 on all three (and a task with no key steps is not defined)."""
    p = n_matched / n_pred if n_pred else 0.0
    r = n_matched / n_key if n_key else 0.0
    f = 2 * p * r / (p + r) if p + r > 0 else 0.0
    return p, r, f


def greedy_matches(sim: np.ndarray, threshold: float) -> int:
    """One-to-one matches between predicted steps (rows) and key steps (columns): greedily by highest
    similarity, a pair counting only if its similarity is at least the threshold."""
    if sim.size == 0:
        return 0
    sim = sim.astype(float).copy()
    n = 0
    while True:
        i, j = np.unravel_index(int(np.argmax(sim)), sim.shape)
        if sim[i, j] < threshold or not np.isfinite(sim[i, j]):
            return n
        n += 1
        sim[i, :] = -np.inf
        sim[:, j] = -np.inf


def useful_steps_per_token(n_matched: Sequence[int], n_tokens: Sequence[int]) -> float:
    """Efficiency (Sec. 3.3): matched (useful) steps per output token, summed over items."""
    total = float(np.sum(n_tokens))
    return float(np.sum(n_matched)) / total if total else 0.0


def token_cost_ratio(cot_tokens: Sequence[int], direct_tokens: Sequence[int]) -> float:
    """Efficiency (Sec. 3.3): mean output tokens with CoT over mean output tokens answering directly; NaN
    (undefined, left out of mean ± std) when the direct model said nothing, as a barely trained one can."""
    direct = float(np.mean(direct_tokens))
    return float(np.mean(cot_tokens)) / direct if direct else float("nan")


def cot_impact(cot_accuracy: float, direct_accuracy: float) -> float:
    """Impact (Sec. 3.3): accuracy with CoT minus accuracy answering directly (negative when CoT hurts)."""
    return cot_accuracy - direct_accuracy


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two step paths (dynamic programming)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def lcs_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """Consistency of two paths (Sec. 3.3): 2 LCS / (|a| + |b|); two empty paths are identical (1)."""
    if not a and not b:
        return 1.0
    return 2 * lcs_length(a, b) / (len(a) + len(b))


def path_consistency(paths: Sequence[Sequence[str]]) -> float:
    """Consistency over repeated samples: mean LCS similarity over all pairs of paths."""
    pairs = [lcs_similarity(paths[i], paths[j]) for i in range(len(paths)) for j in range(i + 1, len(paths))]
    return float(np.mean(pairs)) if pairs else 1.0


def bootstrap_se(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> float:
    """Bootstrap standard error of a mean over items (resampling items with replacement)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return 0.0
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return float(values[idx].mean(axis=1).std(ddof=1))
