"""Readers and writers shared by the fga steps: the image splits, the CLIP file, the cached view embeddings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.clip import FeatureCLIP
from stages.core.gx import validate_table
from stages.core.io import InputError, load_safetensors, read_parquet
from stages.fga.config import PAPER
from stages.fga.expectations import splits_suite, views_suite

ROLES = ("clip", "pool", "val", "test")  # CLIP training, few-shot pool, validation shifts, test shifts
CLIP_EXTRA = ("feature_mean", "feature_std", "class_features")


def read_splits(path: Path) -> pd.DataFrame:
    """The validated split table (role, source split, index in the asset, label), sorted by role and index."""
    splits = read_parquet(path)
    validate_table(splits, f"{PAPER}.splits", splits_suite(len(splits)))
    return splits.sort_values(["role", "source", "index"], ignore_index=True)


def read_views_table(path: Path) -> pd.DataFrame:
    """The validated table of cached image-condition rows (role, kind, severity, image, label, row)."""
    views = read_parquet(path)
    validate_table(views, f"{PAPER}.views", views_suite(len(views)))
    return views.sort_values(["tensor", "row"], ignore_index=True)


def save_clip_state(model: FeatureCLIP, feature_mean: torch.Tensor, feature_std: torch.Tensor,
                    class_features: torch.Tensor) -> dict[str, torch.Tensor]:
    """The tensors of the CLIP file: projector weights, logit scale, image-feature statistics, class-prompt features."""
    return {**model.state_dict(), "feature_mean": feature_mean, "feature_std": feature_std,
            "class_features": class_features}


def load_clip_model(path: Path, embed_dim: int, hidden: int) -> tuple[FeatureCLIP, dict[str, torch.Tensor]]:
    """(the frozen CLIP, {feature_mean, feature_std, class_features}) of a CLIP file."""
    tensors = load_safetensors(path)
    missing = [k for k in CLIP_EXTRA if k not in tensors]
    if missing:
        raise InputError(f"{path}: missing tensors {missing}")
    extra = {k: tensors.pop(k) for k in CLIP_EXTRA}
    image_dim, text_dim = extra["feature_mean"].shape[-1], extra["class_features"].shape[-1]
    model = FeatureCLIP(image_dim, text_dim, embed_dim, ("image",), hidden)
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as err:
        raise InputError(f"{path}: weights do not match the CLIP of fga.clip: {str(err).splitlines()[0]}") from None
    return model.eval().requires_grad_(False), extra


def read_embeddings(path: Path, views: pd.DataFrame, n_views: int) -> dict[str, torch.Tensor]:
    """{'pool': (n_pool, d), 'views': (n_rows, n_views, d)} unit image embeddings, checked against the table."""
    tensors = load_safetensors(path)
    if set(tensors) != {"pool", "views"}:
        raise InputError(f"{path}: expected tensors 'pool' and 'views', got {sorted(tensors)}")
    n_pool, n_rows = int((views.tensor == "pool").sum()), int((views.tensor == "views").sum())
    if tensors["pool"].shape[0] != n_pool or tuple(tensors["views"].shape[:2]) != (n_rows, n_views):
        raise InputError(f"{path}: shapes {tuple(tensors['pool'].shape)} / {tuple(tensors['views'].shape)} do not "
                         f"match {n_pool} pool rows and {n_rows} rows of {n_views} views")
    return tensors


def standardise(features: np.ndarray | torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """Image features centred and scaled by the CLIP training images' statistics."""
    return (torch.as_tensor(features, dtype=torch.float32) - mean) / std
