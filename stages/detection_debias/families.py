"""The planted group families (which groups each planted bias under-represents) and per-family mAP."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stages.detection_debias.scenes import CLASSES, SIZE_NAMES, Bins


def families(bins: Bins, rare_class: str, rare_position_class: str, low_diversity_class: str,
             low_diversity_size: str) -> dict[str, list[int]]:
    """Group ids per family: each plant, their union (under-represented), the rest (unplanted), and by size."""
    groups = range(bins.n_groups)
    parts = {g: bins.parts(g) for g in groups}
    last = bins.n_position_bins - 1
    fam = {
        "rare_class": [g for g in groups if parts[g][0] == CLASSES.index(rare_class)],
        "large": [g for g in groups if parts[g][1] == SIZE_NAMES.index("large")],
        "low_diversity": [g for g in groups if parts[g][:2] == (CLASSES.index(low_diversity_class),
                                                                 SIZE_NAMES.index(low_diversity_size))],
        "rare_position": [g for g in groups if parts[g][0] == CLASSES.index(rare_position_class)
                          and parts[g][2] == last and bins.n_position_bins > 1],
    }
    planted = sorted(set().union(*fam.values()))
    fam["under_represented"] = planted
    fam["unplanted"] = [g for g in groups if g not in planted]
    fam["small"] = [g for g in groups if parts[g][1] == SIZE_NAMES.index("small")]
    return fam


def family_map(ap: pd.DataFrame, members: list[int], arm: str, split: str, n_seeds: int) -> list[float]:
    """Per seed: the mean AP over a family's groups (macro: each group weighs the same) of one arm on one split."""
    part = ap[(ap.arm == arm) & (ap.split == split) & ap.group.isin(members)]
    by = part.groupby("seed_index").ap.mean()
    return [float(by.get(s, np.nan)) for s in range(n_seeds)]


def overall_map(ap: pd.DataFrame, arm: str, split: str, n_seeds: int) -> list[float]:
    """Per seed: the overall mAP (mean AP over classes) of one arm on one split."""
    part = ap[(ap.arm == arm) & (ap.split == split) & (ap.group == -1)].set_index("seed_index").ap
    return [float(part.get(s, np.nan)) for s in range(n_seeds)]
