"""Step ``features``: every image through the frozen EfficientNet-Lite0 and every text through frozen MiniLM, once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from stages.assets.image_encoder import load_image_encoder
from stages.assets.loaders import load_sentence_encoder
from stages.biocap.config import PAPER, FeaturesConfig, load_features
from stages.biocap.io import read_images, read_tables
from stages.core.clip import encode_images, encode_texts
from stages.core.io import save_safetensors
from stages.core.stage import StageContext, Step, inp, out


@dataclass(frozen=True)
class Paths:
    images: Path = inp("specimen images (.npy)")
    specimens: Path = inp("specimen table")
    taxa: Path = inp("taxon table")
    texts: Path = inp("text table")
    image_encoder: Path = inp("EfficientNet-Lite0 asset folder")
    text_encoder: Path = inp("all-MiniLM-L6-v2 asset folder")
    features: Path = out("safetensors: images (n_images, 1280) and texts (n_texts, 384), rows in id order")


def run(cfg: FeaturesConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Encode each image and each distinct text string once; write both feature matrices."""
    specimens, _, texts = read_tables(paths.specimens, paths.taxa, paths.texts)
    images = read_images(paths.images, len(specimens))
    image_features = encode_images(load_image_encoder(paths.image_encoder), images, cfg.image_batch_size)
    unique, inverse = np.unique(texts.text.to_numpy(dtype=str), return_inverse=True)
    text_features = encode_texts(load_sentence_encoder(paths.text_encoder), unique.tolist(), cfg.text_batch_size)
    save_safetensors({"images": torch.from_numpy(image_features), "texts": torch.from_numpy(text_features[inverse])},
                     paths.features)
    return {"n_images": len(image_features), "n_texts": len(texts), "n_distinct_texts": len(unique)}


main = Step(PAPER, "features", run, load_features, Paths)


if __name__ == "__main__":
    main()
