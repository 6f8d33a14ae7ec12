"""Readers shared by the detection_debias steps: the object table with its images, the synthetic layouts,
the per-group scores, the detector weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import InputError, load_safetensors, read_parquet
from stages.detection_debias.config import PAPER
from stages.detection_debias.detector import CenterNet
from stages.detection_debias.expectations import groups_suite, layouts_suite, objects_suite
from stages.detection_debias.scenes import CLASSES, Bins

OBJECT_COLUMNS = ["image", "split", "cls", "x0", "y0", "x1", "y1", "group"]


def read_objects(path: Path, bins: Bins) -> pd.DataFrame:
    """The validated object table, sorted by image."""
    objects = read_parquet(path, OBJECT_COLUMNS)
    n_images = int(objects.image.max()) + 1 if len(objects) else 0
    validate_table(objects, f"{PAPER}.objects", objects_suite(len(objects), n_images, bins.image_size, bins.n_groups))
    return objects.sort_values(["image", "x0", "y0"], ignore_index=True)


def read_images(path: Path, n_images: int, image_size: int) -> torch.Tensor:
    """The images (n, 3, size, size) uint8, checked against the object table's image count."""
    tensors = load_safetensors(path)
    if set(tensors) != {"images"}:
        raise InputError(f"{path}: expected one tensor 'images', got {sorted(tensors)}")
    images = tensors["images"]
    if tuple(images.shape) != (n_images, 3, image_size, image_size) or images.dtype != torch.uint8:
        raise InputError(f"{path}: images of shape {tuple(images.shape)} {images.dtype}, expected uint8 "
                         f"({n_images}, 3, {image_size}, {image_size}) for the object table")
    return images


def read_layouts(path: Path, bins: Bins, n_seeds: int) -> pd.DataFrame:
    """The validated synthetic layouts."""
    layouts = read_parquet(path, ["seed_index", "arm", "image", "cls", "x0", "y0", "x1", "y1", "group"])
    validate_table(layouts, f"{PAPER}.layouts", layouts_suite(len(layouts), bins.image_size, bins.n_groups, n_seeds))
    return layouts


def read_groups(path: Path, n_groups: int) -> pd.DataFrame:
    """The validated per-group scores."""
    groups = read_parquet(path, ["seed_index", "group"])
    validate_table(groups, f"{PAPER}.groups", groups_suite(len(groups), n_groups))
    return groups


def layouts_of(objects: pd.DataFrame) -> dict[int, list[tuple[int, tuple[int, int, int, int]]]]:
    """Image -> its layout [(class, box)]."""
    out: dict[int, list[tuple[int, tuple[int, int, int, int]]]] = {}
    for r in objects.itertuples(index=False):
        out.setdefault(int(r.image), []).append((int(r.cls), (int(r.x0), int(r.y0), int(r.x1), int(r.y1))))
    return out


def ground_truth(objects: pd.DataFrame, image_ids: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(boxes, classes) of each image in ``image_ids``, in that order."""
    by = layouts_of(objects)
    return [(np.array([b for _, b in by.get(int(i), [])], dtype=float).reshape(-1, 4),
             np.array([c for c, _ in by.get(int(i), [])], dtype=np.int64)) for i in image_ids]


def load_detector(tensors: dict[str, torch.Tensor], prefix: str, width: int) -> CenterNet:
    """A detector from the weights under ``prefix`` of a safetensors dict."""
    model = CenterNet(len(CLASSES), width)
    state = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    if not state:
        raise InputError(f"no detector weights under '{prefix}'")
    model.load_state_dict(state)
    return model.eval()
