"""How well subspaces match ground truth (toy) and how concentrated patching effects are (LM)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stages.ndm.ndm import block_slices


def adjusted_rand_index(labels_a: Sequence[int], labels_b: Sequence[int]) -> float:
    """Hubert-Arabie adjusted Rand index of two partitions of the same items (1 = identical, ≈0 = chance)."""
    a = np.unique(np.asarray(labels_a), return_inverse=True)[1]
    b = np.unique(np.asarray(labels_b), return_inverse=True)[1]
    if len(a) != len(b):
        raise ValueError("the two labelings must have the same length")
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1)

    def pairs(v: np.ndarray) -> float:
        return float((v * (v - 1) / 2).sum())

    index = pairs(table)
    rows, cols, total = pairs(table.sum(axis=1)), pairs(table.sum(axis=0)), len(a) * (len(a) - 1) / 2
    expected = rows * cols / total if total else 0.0
    maximum = (rows + cols) / 2
    if maximum == expected:
        return 1.0
    return float((index - expected) / (maximum - expected))


def block_energy(rotation: np.ndarray, sizes: Sequence[int], directions: np.ndarray) -> np.ndarray:
    """Fraction of each direction's squared norm in each subspace: (n_directions, n_subspaces)."""
    coords = directions @ rotation  # rows: directions in the rotated basis
    sq = coords**2
    energy = np.stack([sq[:, sl].sum(axis=1) for sl in block_slices(sizes)], axis=1)
    return energy / np.maximum(energy.sum(axis=1, keepdims=True), 1e-30)


def subspace_assignment(rotation: np.ndarray, sizes: Sequence[int], directions: np.ndarray) -> np.ndarray:
    """Each feature's subspace: the one holding most of its embedding's energy (Sec. 4, toy evaluation)."""
    return block_energy(rotation, sizes, directions).argmax(axis=1)


def energy_concentration(rotation: np.ndarray, sizes: Sequence[int], directions: np.ndarray) -> float:
    """Overall: mean over features of the largest share of its energy that one subspace holds."""
    return float(block_energy(rotation, sizes, directions).max(axis=1).mean())


def dimension_purity(rotation: np.ndarray, directions: np.ndarray, groups: Sequence[int]) -> float:
    """Per dimension: mean over rotated dimensions of the largest share one true group has of its energy."""
    coords = (directions @ rotation) ** 2  # (features, dims)
    labels = np.asarray(groups)
    per_group = np.stack([coords[labels == g].sum(axis=0) for g in np.unique(labels)], axis=0)
    return float((per_group.max(axis=0) / np.maximum(per_group.sum(axis=0), 1e-30)).mean())


def gini(values: Sequence[float]) -> float:
    """Gini coefficient of non-negative values (0 = all equal, → 1 = one value holds everything)."""
    v = np.sort(np.abs(np.asarray(values, dtype=float)))
    n, total = len(v), v.sum()
    if n == 0 or total == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float(((2 * ranks - n - 1) * v).sum() / (n * total))
