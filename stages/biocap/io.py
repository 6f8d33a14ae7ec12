"""Readers and writers of the biocap tables and features (shared by the steps after ``data``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stages.biocap.config import PAPER
from stages.biocap.expectations import specimens_suite, taxa_suite, texts_suite
from stages.core.gx import validate_table
from stages.core.io import InputError, load_safetensors, read_parquet


def validate_tables(specimens: pd.DataFrame, taxa: pd.DataFrame, texts: pd.DataFrame) -> None:
    """Each table passes its suite."""
    validate_table(taxa, f"{PAPER}.taxa", taxa_suite(len(taxa)))
    validate_table(specimens, f"{PAPER}.specimens", specimens_suite(len(specimens), len(taxa)))
    validate_table(texts, f"{PAPER}.texts", texts_suite(len(texts)))


def read_tables(specimens_path: Path, taxa_path: Path,
                texts_path: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Validated (specimens, taxa, texts), each sorted by its id."""
    specimens, taxa, texts = read_parquet(specimens_path), read_parquet(taxa_path), read_parquet(texts_path)
    validate_tables(specimens, taxa, texts)  # before anything reads a column, so a missing one is named
    return (specimens.sort_values("row", ignore_index=True), taxa.sort_values("species_id", ignore_index=True),
            texts.sort_values("text_id", ignore_index=True))


def read_images(path: Path, n_rows: int) -> np.ndarray:
    """The uint8 image array (n, S, S, 3), checked against the specimen count."""
    try:
        images = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise InputError(f"{path}: not a readable .npy array (truncated or corrupt): {err}") from None
    if images.ndim != 4 or images.shape[0] != n_rows or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise InputError(f"{path}: expected uint8 images ({n_rows}, S, S, 3), got {images.shape} {images.dtype}")
    return images


def read_features(path: Path, n_images: int, n_texts: int) -> tuple[np.ndarray, np.ndarray]:
    """(image features (n_images, d_img), text features (n_texts, d_txt)) of the features file, checked."""
    tensors = load_safetensors(path)
    images, texts = tensors["images"].numpy(), tensors["texts"].numpy()
    if len(images) != n_images or len(texts) != n_texts:
        raise InputError(f"{path}: {len(images)} image and {len(texts)} text features for {n_images} images and "
                         f"{n_texts} texts")
    return images, texts


def run_file(arm: str, seed_index: int) -> str:
    """The weights file of one arm and seed inside the models folder."""
    return f"{arm}_s{seed_index}.safetensors"
