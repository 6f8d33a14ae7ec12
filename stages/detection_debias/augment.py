"""New layouts at one synthetic budget: reused training layouts, or fresh layouts whose objects' groups are drawn
from a sampler's group probabilities (inverse frequency or RS-guided)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from stages.detection_debias.scenes import Bins, layout_from_groups

Layout = list[tuple[int, tuple[int, int, int, int]]]


def reused_layouts(train_layouts: list[Layout], n: int, gen: np.random.Generator) -> list[Layout]:
    """``n`` training layouts drawn with replacement (to be rendered again with a new appearance)."""
    picks = gen.integers(len(train_layouts), size=n)
    return [list(train_layouts[i]) for i in picks]


def sampled_layouts(bins: Bins, probs: np.ndarray, n: int, max_objects: int, gen: np.random.Generator) -> list[Layout]:
    """``n`` new layouts: 1..max_objects objects each, every object's group drawn from ``probs``."""
    out = []
    for _ in range(n):
        k = int(gen.integers(1, max_objects + 1))
        out.append(layout_from_groups(bins, [int(g) for g in gen.choice(len(probs), size=k, p=probs)], gen))
    return out


def layouts_table(layouts: list[Layout], bins: Bins, **keys: object) -> pd.DataFrame:
    """One row per object of each layout (image = the layout's index), with ``keys`` as constant columns."""
    rows = [{**keys, "image": i, "cls": c, "x0": b[0], "y0": b[1], "x1": b[2], "y1": b[3],
             "group": bins.group_of_box(c, b)} for i, layout in enumerate(layouts) for c, b in layout]
    return pd.DataFrame(rows, columns=[*keys, "image", "cls", "x0", "y0", "x1", "y1", "group"])
