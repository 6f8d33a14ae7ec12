"""Image classification assets: uint8 arrays per split, checked against the manifest when loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.expectations import image_labels_suite
from stages.assets.loaders import IMAGE_SPLITS, image_files
from stages.assets.manifest import write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir


def label_summary(images: dict[str, np.ndarray], labels: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per image: split, label, its min and max pixel (what the GX suite checks)."""
    return pd.concat([pd.DataFrame({"split": s, "label": labels[s].astype(np.int64),
                                    "pixel_min": images[s].min(axis=(1, 2)).astype(np.int64),
                                    "pixel_max": images[s].max(axis=(1, 2)).astype(np.int64)}) for s in IMAGE_SPLITS],
                     ignore_index=True)


def write_image_asset(folder: Path, asset: str, images: dict[str, np.ndarray], labels: dict[str, np.ndarray],
                      classes: list[str], pixel_max: int, shape: tuple[int, int], source: dict[str, Any],
                      licence: str, report: Path) -> dict[str, Any]:
    """Validate shapes and labels, then write ``<split>_images.npy`` / ``_labels.npy`` and the manifest."""
    for s in IMAGE_SPLITS:
        if images[s].ndim != 3 or images[s].shape[1:] != shape or images[s].dtype != np.uint8:
            raise ValueError(f"asset '{asset}': {s} images have shape {images[s].shape} {images[s].dtype}, "
                             f"expected (n, {shape[0]}, {shape[1]}) uint8")
        if len(labels[s]) != len(images[s]):
            raise ValueError(f"asset '{asset}': {len(labels[s])} {s} labels for {len(images[s])} images")
    validate_table(label_summary(images, labels), f"assets.{asset}.labels", image_labels_suite(len(classes), pixel_max))
    with atomic_dir(folder) as tmp:
        for s in IMAGE_SPLITS:
            for name, arr in zip(image_files(s), (images[s], labels[s].astype(np.int64)), strict=True):
                np.save(tmp / name, arr, allow_pickle=False)
        details = {"classes": classes, "pixel_max": pixel_max, "image_shape": list(shape),
                   **{f"{s}_count": len(images[s]) for s in IMAGE_SPLITS},
                   **{f"{s}_class_counts": np.bincount(labels[s], minlength=len(classes)).tolist()
                      for s in IMAGE_SPLITS}}
        return write_manifest(tmp, asset, source, licence, details=details, report=report)


