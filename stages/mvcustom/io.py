"""Readers shared by the mvcustom steps: the view table with its render tensors, the cameras of a view."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import InputError, load_safetensors, read_parquet
from stages.mvcustom.config import PAPER, DataConfig
from stages.mvcustom.expectations import views_suite
from stages.mvcustom.scene import Camera


def read_renders(table_path: Path, renders_path: Path, size: int) -> tuple[pd.DataFrame, dict[str, torch.Tensor]]:
    """The validated view table and its tensors {'images': (n, 3, s, s) in [0, 1], 'depth': (n, s, s)}, checked."""
    views = read_parquet(table_path)
    validate_table(views, f"{PAPER}.views", views_suite(len(views)))
    tensors = load_safetensors(renders_path)
    if set(tensors) != {"images", "depth"}:
        raise InputError(f"{renders_path}: expected tensors 'images' and 'depth', got {sorted(tensors)}")
    n = len(views)
    if tuple(tensors["images"].shape) != (n, 3, size, size) or tuple(tensors["depth"].shape) != (n, size, size):
        raise InputError(f"{renders_path}: shapes {tuple(tensors['images'].shape)} / {tuple(tensors['depth'].shape)} "
                         f"do not match {n} views of {size} x {size}")
    if float(tensors["images"].min()) < 0 or float(tensors["images"].max()) > 1 or float(tensors["depth"].min()) <= 0:
        raise InputError(f"{renders_path}: images must lie in [0, 1] and depths be positive")
    return views.sort_values("row", ignore_index=True), tensors


def camera(row: pd.Series | dict, cfg: DataConfig) -> Camera:
    """The camera of one view row."""
    return Camera(float(row["azimuth"]), float(row["elevation"]), cfg.radius, cfg.focal, cfg.image_size)


def poses(rows: pd.DataFrame) -> np.ndarray:
    """(n, 2) azimuth and elevation of view rows, in row order."""
    return rows[["azimuth", "elevation"]].to_numpy(dtype=np.float32)
