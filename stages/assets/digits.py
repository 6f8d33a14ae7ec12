"""Stage ``assets-digits``: scikit-learn's bundled 8x8 handwritten digits (1,797 images, pixels 0..16)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stages.assets.config import DigitsConfig, load_digits
from stages.assets.images import write_image_asset
from stages.assets.manifest import package_source
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, out

ASSET = "digits"
LICENCE = "UCI ML hand-written digits (CC BY 4.0), shipped inside scikit-learn (BSD-3-Clause)"


@dataclass(frozen=True)
class Paths:
    images: Path = out("asset folder: <split>_images.npy, <split>_labels.npy, manifest.json")
    manifest: Path = out("committed copy of the manifest")


def run(cfg: DigitsConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """A stratified, seeded train/test split of ``sklearn.datasets.load_digits``."""
    from sklearn.datasets import load_digits as sklearn_digits
    from sklearn.model_selection import train_test_split

    bunch = sklearn_digits()
    images = bunch.images.astype(np.uint8)
    if not np.array_equal(images, bunch.images):
        raise ValueError("digits pixels are not integers in 0..16")
    split_seed = derive_seed(ctx.seed, "assets", ASSET) % 2**32
    x_tr, x_te, y_tr, y_te = train_test_split(images, bunch.target, test_size=cfg.test_fraction,
                                              stratify=bunch.target, random_state=split_seed)
    source = package_source("scikit-learn") | {"loader": "sklearn.datasets.load_digits"}
    manifest = write_image_asset(paths.images, ASSET, {"train": x_tr, "test": x_te}, {"train": y_tr, "test": y_te},
                                 [str(i) for i in range(10)], 16, (8, 8), source, LICENCE, paths.manifest)
    return {"train": manifest["details"]["train_count"], "test": manifest["details"]["test_count"]}


main = Step("assets", ASSET, run, load_digits, Paths)


if __name__ == "__main__":
    main()
