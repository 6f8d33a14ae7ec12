"""Fidelity of a generated set of hyperlinks with attributes to a held-out real set.

Every distance is 0 for identical samples and grows as the samples drift apart. Structure:
node degrees, hyperlink sizes, class-pair co-membership and class homophily. Attributes:
means, standard deviations, and the joint relation with structure (attribute means given
size and given class mix). Overall: a Fréchet distance between Gaussians fitted to a fixed
featurisation of each hyperlink (spectral node features of the training hypergraph, size,
attributes) that no method trains.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
from scipy import linalg

from stages.relash.hypergraph import parse_members

SIZE_BINS = (2, 3, 4)  # the last bin is "4 or more"
STRUCTURE = ("degree_tv", "size_tv", "comembership_tv", "homophily_error")
ATTRIBUTE = ("attr_mean_error", "attr_std_error", "attr_given_size_error", "attr_given_mix_error")


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """½ Σ |p/Σp − q/Σq| of two non-negative count vectors."""
    return 0.5 * float(np.abs(p / max(p.sum(), 1e-12) - q / max(q.sum(), 1e-12)).sum())


def node_degrees(hyperlinks: Sequence[str], n_nodes: int) -> np.ndarray:
    """How many hyperlinks each node belongs to."""
    d = np.zeros(n_nodes)
    for key in hyperlinks:
        d[parse_members(key)] += 1
    return d


def size_histogram(hyperlinks: Sequence[str]) -> np.ndarray:
    """Counts of sizes 2, 3, ≥ 4."""
    sizes = np.array([len(parse_members(k)) for k in hyperlinks])
    return np.array([(sizes == 2).sum(), (sizes == 3).sum(), (sizes >= 4).sum()], dtype=float)


def class_pair_counts(hyperlinks: Sequence[str], node_class: np.ndarray, n_classes: int) -> np.ndarray:
    """Co-membership by class pair: each pair of members of a hyperlink adds 1 to its (unordered) class cell."""
    c = np.zeros((n_classes, n_classes))
    for key in hyperlinks:
        for a, b in combinations(parse_members(key), 2):
            lo, hi = sorted((node_class[a], node_class[b]))
            c[lo, hi] += 1
    return c[np.triu_indices(n_classes)]


def homophily(hyperlinks: Sequence[str], node_class: np.ndarray) -> float:
    """Fraction of co-member pairs in the same class."""
    same = total = 0
    for key in hyperlinks:
        for a, b in combinations(parse_members(key), 2):
            same += node_class[a] == node_class[b]
            total += 1
    return same / total if total else float("nan")


def is_mixed(hyperlinks: Sequence[str], node_class: np.ndarray) -> np.ndarray:
    """Whether each hyperlink spans more than one class."""
    return np.array([len({node_class[v] for v in parse_members(k)}) > 1 for k in hyperlinks])


def conditional_mean_error(x_gen: np.ndarray, g_gen: np.ndarray, x_ref: np.ndarray, g_ref: np.ndarray,
                           scale: np.ndarray) -> float:
    """Σ_b w_ref(b) mean_k |E_gen[x_k | b] − E_ref[x_k | b]| / scale_k over the reference's groups b.

    A group the generated set never produces is compared with the generated overall mean.
    """
    err = 0.0
    for b in np.unique(g_ref):
        ref = x_ref[g_ref == b].mean(axis=0)
        gen_rows = x_gen[g_gen == b]
        gen = gen_rows.mean(axis=0) if len(gen_rows) else x_gen.mean(axis=0)
        err += np.mean(g_ref == b) * float(np.mean(np.abs(gen - ref) / scale))
    return err


def size_groups(hyperlinks: Sequence[str]) -> np.ndarray:
    """Size bin of each hyperlink: 2, 3 or 4 (= 4 or more)."""
    return np.minimum([len(parse_members(k)) for k in hyperlinks], 4)


def hyperlink_features(hyperlinks: Sequence[str], x: np.ndarray, node_features: np.ndarray) -> np.ndarray:
    """Fixed featurisation: mean spectral feature of the members, size, attributes."""
    mean_feat = np.stack([node_features[parse_members(k)].mean(axis=0) for k in hyperlinks])
    sizes = np.array([[len(parse_members(k))] for k in hyperlinks], dtype=float)
    return np.concatenate([mean_feat, sizes, x], axis=1)


def frechet_distance(f1: np.ndarray, f2: np.ndarray) -> float:
    """‖μ₁ − μ₂‖² + Tr(Σ₁ + Σ₂ − 2(Σ₁Σ₂)^{1/2}) between Gaussians fitted to two feature sets."""
    mu1, mu2 = f1.mean(axis=0), f2.mean(axis=0)
    s1, s2 = np.cov(f1, rowvar=False), np.cov(f2, rowvar=False)
    covmean = linalg.sqrtm(s1 @ s2)
    covmean = np.real(covmean)
    return float(max(((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * covmean), 0.0))


def fidelity(gen: Sequence[str], x_gen: np.ndarray, ref: Sequence[str], x_ref: np.ndarray, node_class: np.ndarray,
             n_classes: int, node_features: np.ndarray, feature_mean: np.ndarray,
             feature_std: np.ndarray) -> dict[str, float]:
    """Every distance between a generated set and a reference set, plus the structure and attribute scores."""
    n_nodes = len(node_class)
    scale = x_ref.std(axis=0) + 1e-12
    out = {
        "degree_tv": total_variation(node_degrees(gen, n_nodes), node_degrees(ref, n_nodes)),
        "size_tv": total_variation(size_histogram(gen), size_histogram(ref)),
        "comembership_tv": total_variation(class_pair_counts(gen, node_class, n_classes),
                                           class_pair_counts(ref, node_class, n_classes)),
        "homophily_error": abs(homophily(gen, node_class) - homophily(ref, node_class)),
        "attr_mean_error": float(np.mean(np.abs(x_gen.mean(axis=0) - x_ref.mean(axis=0)) / scale)),
        "attr_std_error": float(np.mean(np.abs(x_gen.std(axis=0) - x_ref.std(axis=0)) / scale)),
        "attr_given_size_error": conditional_mean_error(x_gen, size_groups(gen), x_ref, size_groups(ref), scale),
        "attr_given_mix_error": conditional_mean_error(x_gen, is_mixed(gen, node_class), x_ref,
                                                       is_mixed(ref, node_class), scale),
    }
    f_gen = (hyperlink_features(gen, x_gen, node_features) - feature_mean) / feature_std
    f_ref = (hyperlink_features(ref, x_ref, node_features) - feature_mean) / feature_std
    out["frechet"] = frechet_distance(f_gen, f_ref)
    out["structure_score"] = float(np.mean([out[k] for k in STRUCTURE]))
    out["attribute_score"] = float(np.mean([out[k] for k in ATTRIBUTE]))
    return out
