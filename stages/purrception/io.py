"""Readers shared by the purrception steps: the image array with its index and the code grids.

The feature net of the Fréchet distance and its loader are in :mod:`stages.core.image_metrics`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.purrception.config import PAPER
from stages.purrception.expectations import codes_suite, image_index_suite

N_CLASSES = 10  # Fashion-MNIST and sklearn digits both have ten classes


def validate(images: np.ndarray, index: pd.DataFrame) -> None:
    """The array and its index agree; the index passes its suite."""
    if images.ndim != 3 or images.dtype != np.uint8 or images.shape[1] != images.shape[2]:
        raise ValueError(f"{PAPER}.images: expected a uint8 array (n, S, S), got {images.shape} {images.dtype}")
    validate_table(index, f"{PAPER}.images", image_index_suite(len(images), N_CLASSES))


def read_images(images_path: Path, index_path: Path) -> dict[str, tuple[torch.Tensor, np.ndarray]]:
    """Validated {split: (images float32 (n, S, S) in [0, 1], labels)}."""
    images, index = np.load(images_path, allow_pickle=False), read_parquet(index_path)
    validate(images, index)
    out_: dict[str, tuple[torch.Tensor, np.ndarray]] = {}
    for split in ("train", "test"):
        rows = index[index.split == split].sort_values("row")
        out_[split] = (torch.as_tensor(images[rows.row.to_numpy()], dtype=torch.float32) / 255.0,
                       rows.label.to_numpy())
    return out_


def read_codes(path: Path, codebook_size: int, seq_len: int, split: str = "train") -> torch.Tensor:
    """The validated code grids of one split, flattened: (n, seq_len) int64."""
    table = read_parquet(path)
    validate_table(table, f"{PAPER}.codes", codes_suite(len(table), codebook_size, seq_len))
    rows = table[table.split == split].sort_values(["image", "pos"])
    return torch.as_tensor(rows.code.to_numpy(), dtype=torch.long).reshape(-1, seq_len)
