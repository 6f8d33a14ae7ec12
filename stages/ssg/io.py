"""Readers shared by the ssg steps: the image array with its index, the token table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.ssg.config import PAPER
from stages.ssg.expectations import SPLITS, image_index_suite, tokens_suite

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
    for split in SPLITS:
        rows = index[index.split == split].sort_values("row")
        out_[split] = (torch.as_tensor(images[rows.row.to_numpy()], dtype=torch.float32) / 255.0,
                       rows.label.to_numpy())
    return out_


def tokens_table(tokens: dict[str, tuple[torch.Tensor, np.ndarray]]) -> pd.DataFrame:
    """Long format (split, image, label, pos, code) of {split: (token sequences (n, L), labels)}."""
    frames = []
    for split, (t, labels) in tokens.items():
        flat = t.numpy()
        n, seq_len = flat.shape
        frames.append(pd.DataFrame({"split": split, "image": np.repeat(np.arange(n), seq_len),
                                    "label": np.repeat(np.asarray(labels), seq_len),
                                    "pos": np.tile(np.arange(seq_len), n), "code": flat.ravel()}))
    return pd.concat(frames, ignore_index=True)


def read_tokens(path: Path, codebook_size: int, seq_len: int, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The validated token sequences (n, seq_len) int64 and labels (n,) of one split."""
    table = read_parquet(path)
    validate_table(table, f"{PAPER}.tokens", tokens_suite(len(table), codebook_size, seq_len, N_CLASSES))
    rows = table[table.split == split].sort_values(["image", "pos"])
    tokens = torch.as_tensor(rows.code.to_numpy(), dtype=torch.long).reshape(-1, seq_len)
    labels = torch.as_tensor(rows.label.to_numpy()[::seq_len], dtype=torch.long)
    return tokens, labels
