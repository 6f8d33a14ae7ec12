"""A CLIP on frozen encoders: cached features, trainable projectors, multi-positive InfoNCE, retrieval metrics.

The image encoder (EfficientNet-Lite0) and the text encoder (all-MiniLM-L6-v2) are frozen, so every
image and text is encoded once (:func:`encode_images`, :func:`encode_texts`) and training runs on
the cached features: only the projectors and the temperature learn (Radford et al. 2021, "CLIP",
§2.3; the image side may have several named projectors, one per kind of text it is paired with).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm

CLIP_INIT_TEMPERATURE = 0.07  # CLIP §2.5: learnable temperature initialised to 0.07
MAX_LOGIT_SCALE = 100.0        # and clipped so the logits are scaled by at most 100


def encode_images(encoder: Any, images: np.ndarray, batch_size: int = 64, desc: str = "encode images",
                  progress: bool = True) -> np.ndarray:
    """Pooled features (n, d) float32 of uint8 RGB images (n, H, W, 3), in batches (a progress bar if ``progress``)."""
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise ValueError(f"expected uint8 images (n, H, W, 3), got {images.shape} {images.dtype}")
    out = []
    with torch.no_grad():
        for start in tqdm(range(0, len(images), batch_size), desc=desc, unit="batch", disable=not progress):
            x = torch.as_tensor(images[start:start + batch_size]).permute(0, 3, 1, 2).float()
            out.append(encoder.features(x).numpy())
    return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)


def encode_texts(encoder: Any, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
    """Unit-norm sentence embeddings (n, d) float32 of ``texts`` (a sentence-transformers encoder)."""
    emb = encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                         show_progress_bar=len(texts) > batch_size)
    return np.asarray(emb, dtype=np.float32)


class Projector(nn.Module):
    """Frozen feature -> shared space: a 2-layer MLP (or one linear map when ``hidden`` is 0), unit-normalised."""

    def __init__(self, d_in: int, d_out: int, hidden: int = 0) -> None:
        super().__init__()
        self.net = (nn.Linear(d_in, d_out) if hidden == 0
                    else nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(x), dim=-1)


class FeatureCLIP(nn.Module):
    """Named image projectors, one text projector and a learnable logit scale, on cached features."""

    def __init__(self, image_dim: int, text_dim: int, embed_dim: int, image_heads: Sequence[str] = ("image",),
                 hidden: int = 0) -> None:
        super().__init__()
        if not image_heads or len(set(image_heads)) != len(image_heads):
            raise ValueError(f"image_heads must be unique and non-empty, got {list(image_heads)}")
        self.image = nn.ModuleDict({h: Projector(image_dim, embed_dim, hidden) for h in image_heads})
        self.text = Projector(text_dim, embed_dim, hidden)
        self.log_scale = nn.Parameter(torch.tensor(math.log(1.0 / CLIP_INIT_TEMPERATURE)))

    def embed_images(self, features: torch.Tensor, head: str) -> torch.Tensor:
        """Unit-norm image embeddings through the projector ``head``."""
        return self.image[head](features)

    def embed_texts(self, features: torch.Tensor) -> torch.Tensor:
        """Unit-norm text embeddings."""
        return self.text(features)

    def logit_scale(self) -> torch.Tensor:
        """exp(log_scale), clipped at 100 (CLIP §2.5)."""
        return self.log_scale.exp().clamp(max=MAX_LOGIT_SCALE)


def multi_positive_infonce(image_emb: torch.Tensor, text_emb: torch.Tensor, positives: torch.Tensor,
                           logit_scale: torch.Tensor | float) -> torch.Tensor:
    """Symmetric InfoNCE with several positives per row (CLIP eq. in §2.3; targets uniform over positives).

    ``positives[i, j]`` is True when text j describes image i. Each image's target is the uniform
    distribution over its positive texts, each text's over its positive images; the loss is the
    mean of the two cross-entropies. With one positive per row it is CLIP's loss.
    """
    pos = positives.to(image_emb.dtype)
    if (pos.sum(1) == 0).any() or (pos.sum(0) == 0).any():
        raise ValueError("every image and every text needs at least one positive")
    logits = logit_scale * image_emb @ text_emb.T
    i2t = -(pos / pos.sum(1, keepdim=True) * F.log_softmax(logits, dim=1)).sum(1).mean()
    t2i = -(pos / pos.sum(0, keepdim=True) * F.log_softmax(logits, dim=0)).sum(0).mean()
    return (i2t + t2i) / 2


def recall_at_k(query_emb: np.ndarray, gallery_emb: np.ndarray, relevant: np.ndarray,
                ks: Sequence[int] = (1, 5)) -> dict[int, float]:
    """Fraction of queries whose relevant gallery item ranks in the top k by cosine score (ties count against)."""
    scores = query_emb @ gallery_emb.T
    own = scores[np.arange(len(relevant)), relevant]
    rank = (scores > own[:, None]).sum(1) + (scores == own[:, None]).sum(1) - 1
    return {k: float((rank < k).mean()) for k in ks}


def zero_shot_predict(image_emb: np.ndarray, class_emb: np.ndarray) -> np.ndarray:
    """The class whose text embedding scores highest for each image."""
    return (image_emb @ class_emb.T).argmax(1)
