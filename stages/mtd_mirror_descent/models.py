"""Building the trained architectures from their params, with a seeded initialisation."""

from __future__ import annotations

import math

import torch
from torch import nn

from stages.core.seeding import derive_seed
from stages.core.transformer import TinyGPT
from stages.mtd_mirror_descent.attention_only import AttentionOnlyTransformer
from stages.mtd_mirror_descent.config import PAPER, ModelSpec


def init_seed(seed: int, model_name: str, seed_index: int) -> int:
    """The torch seed of one training run (the untrained baseline reuses it)."""
    return derive_seed(seed, PAPER, "init", model_name, seed_index) % 2**32


def build_model(spec: ModelSpec, q: int, m: int, seq_len: int, seed: int | None = None) -> nn.Module:
    """The model of ``spec``; attention-only models see relative offsets up to m + 1 (clipped beyond)."""
    if seed is not None:
        torch.manual_seed(seed)
    if spec.kind == "attention_only":
        return AttentionOnlyTransformer(q, spec.n_layers, spec.d_model, spec.n_heads, spec.d_head, max_offset=m + 1)
    return TinyGPT(q, spec.d_model, spec.n_layers, spec.n_heads, max_len=seq_len)


def lr_factor(step: int, warmup: int, total: int, cosine: bool) -> float:
    """Learning-rate multiplier: linear warm-up over ``warmup`` steps, then constant or cosine decay to 0."""
    ramp = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
    if not cosine:
        return ramp
    return ramp * 0.5 * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1)))
