"""Step ``data``: seeded train / validation / test subsets of the image asset, resized, as uint8 + validated index."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F

from stages.assets.loaders import load_images
from stages.core.io import atomic_path, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.ssg.config import PAPER, DataConfig, load_data
from stages.ssg.io import N_CLASSES, validate


@dataclass(frozen=True)
class Paths:
    asset: Path = inp("image asset folder (data/assets/fashion-mnist; digits for smoke tests)")
    images: Path = out("uint8 array (n, S, S) of the chosen images (.npy)")
    index: Path = out("one row per image: split, row, label, pixel_mean (Parquet)")


def resize(images: np.ndarray, pixel_max: int, size: int) -> np.ndarray:
    """Rescale to 0..255 and resize to size × size (area averaging when shrinking), as uint8."""
    x = torch.as_tensor(images, dtype=torch.float32)[:, None] * (255.0 / pixel_max)
    if x.shape[-1] != size:
        x = F.interpolate(x, size=(size, size), mode="area" if size < x.shape[-1] else "bilinear")
    return x[:, 0].round().clamp(0, 255).to(torch.uint8).numpy()


def build(cfg: DataConfig, asset: Path, seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    """The seeded subsets (train, val from the asset's train split, disjoint; test from its test split)."""
    splits = load_images(asset)
    if len(splits.classes) != N_CLASSES:
        raise ValueError(f"{PAPER}: {asset} has {len(splits.classes)} classes, expected {N_CLASSES}")
    if cfg.n_train + cfg.n_val > len(splits.train_images):
        raise ValueError(f"{PAPER}.data: n_train + n_val = {cfg.n_train + cfg.n_val} exceeds the "
                         f"{len(splits.train_images)} train images of {asset}")
    if cfg.n_test > len(splits.test_images):
        raise ValueError(f"{PAPER}.data.n_test={cfg.n_test} exceeds the {len(splits.test_images)} test images")
    pool = rng(seed, PAPER, "subset", "train").permutation(len(splits.train_images))
    picks = {"train": (splits.train_images, splits.train_labels, np.sort(pool[:cfg.n_train])),
             "val": (splits.train_images, splits.train_labels, np.sort(pool[cfg.n_train:cfg.n_train + cfg.n_val])),
             "test": (splits.test_images, splits.test_labels,
                      np.sort(rng(seed, PAPER, "subset", "test").choice(len(splits.test_images), cfg.n_test,
                                                                         replace=False)))}
    arrays, frames, start = [], [], 0
    for split, (imgs, labels, pick) in picks.items():
        small = resize(imgs[pick], splits.pixel_max, cfg.image_size)
        n = len(pick)
        arrays.append(small)
        frames.append(pd.DataFrame({"split": split, "row": np.arange(start, start + n), "label": labels[pick],
                                    "pixel_mean": small.reshape(n, -1).mean(axis=1)}))
        start += n
    return np.concatenate(arrays), pd.concat(frames, ignore_index=True)


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the array and its index."""
    images, index = build(cfg, paths.asset, ctx.seed)
    validate(images, index)
    with atomic_path(paths.images) as tmp, open(tmp, "wb") as fh:
        np.save(fh, images, allow_pickle=False)
    write_parquet(index, paths.index)
    return {"n_train": cfg.n_train, "n_val": cfg.n_val, "n_test": cfg.n_test, "image_size": cfg.image_size}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
