"""Readers shared by the m3cotbench steps: the scene table with its images, the outputs table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import InputError, load_safetensors, read_parquet
from stages.m3cotbench.config import PAPER
from stages.m3cotbench.expectations import outputs_suite, scenes_suite
from stages.m3cotbench.scene import IMAGE_SIZE, Scene


def read_scenes(path: Path) -> pd.DataFrame:
    """The validated scene table, sorted by scan."""
    scenes = read_parquet(path)
    validate_table(scenes, f"{PAPER}.scenes", scenes_suite(len(scenes)))
    return scenes.sort_values("scan", ignore_index=True)


def read_images(path: Path, n_scans: int) -> torch.Tensor:
    """The scans (n, 32, 32), checked against the scene table's row count."""
    tensors = load_safetensors(path)
    if set(tensors) != {"images"}:
        raise InputError(f"{path}: expected one tensor 'images', got {sorted(tensors)}")
    images = tensors["images"]
    if tuple(images.shape) != (n_scans, IMAGE_SIZE, IMAGE_SIZE):
        raise InputError(f"{path}: images of shape {tuple(images.shape)}, expected ({n_scans}, {IMAGE_SIZE}, "
                         f"{IMAGE_SIZE}) for the scene table")
    return images


def read_outputs(path: Path) -> pd.DataFrame:
    """The validated outputs table."""
    outputs = read_parquet(path)
    validate_table(outputs, f"{PAPER}.outputs", outputs_suite(len(outputs)))
    return outputs


def scene_of(row: pd.Series) -> Scene:
    """The Scene of one scene-table row."""
    return Scene(modality=row.modality, shape=row["shape"], radius=int(row.radius), location=row.location,
                 level=int(row.level))
