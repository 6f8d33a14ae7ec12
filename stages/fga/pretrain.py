"""Step ``pretrain``: disjoint image splits, then a small CLIP on frozen encoders trained on the CLIP split only.

Images: Fashion-MNIST upscaled to RGB through frozen EfficientNet-Lite0; texts: class names in the
training templates through frozen MiniLM. Only the projectors and the temperature learn (stages/core/clip.py).
The zero-shot class prompt (``eval_template``) is never a training template.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.assets.image_encoder import load_image_encoder
from stages.assets.loaders import load_images, load_sentence_encoder
from stages.core.clip import FeatureCLIP, encode_images, encode_texts, multi_positive_infonce
from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_parquet
from stages.core.seeding import derive_seed, rng
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.fga.config import PAPER, ClipConfig, load_clip
from stages.fga.expectations import clip_log_suite, splits_suite
from stages.fga.io import save_clip_state, standardise
from stages.fga.shifts import corrupt, to_rgb


@dataclass(frozen=True)
class Paths:
    images: Path = inp("Fashion-MNIST asset folder")
    image_encoder: Path = inp("EfficientNet-Lite0 asset folder")
    text_encoder: Path = inp("all-MiniLM-L6-v2 asset folder")
    splits: Path = out("role, asset split, index and label of every image used (Parquet)")
    clip: Path = out("CLIP projectors, logit scale, image-feature statistics, class-prompt text features")
    clip_log: Path = out("CLIP training loss per logged step (Parquet)")


def class_name(raw: str) -> str:
    """'T-shirt/top' -> 't-shirt or top'."""
    return raw.lower().replace("/", " or ")


def make_splits(train_labels: np.ndarray, test_labels: np.ndarray, cfg: ClipConfig, seed: int) -> pd.DataFrame:
    """Per class, disjoint CLIP / few-shot pool / validation images from the asset's train split; test images
    from its test split."""
    gen = rng(seed, PAPER, "splits")
    rows = []
    sizes = (("clip", cfg.n_clip_per_class), ("pool", cfg.n_fewshot_pool_per_class), ("val", cfg.n_val_per_class))
    for c in range(10):
        order = gen.permutation(np.flatnonzero(train_labels == c))
        start = 0
        for role, n in sizes:
            rows += [{"role": role, "source": "train", "index": int(i), "label": c} for i in order[start:start + n]]
            start += n
        test = gen.permutation(np.flatnonzero(test_labels == c))[:cfg.n_test_per_class]
        rows += [{"role": "test", "source": "test", "index": int(i), "label": c} for i in test]
    return pd.DataFrame(rows)


def train_clip(image_features: torch.Tensor, labels: torch.Tensor, text_features: torch.Tensor,
               text_labels: torch.Tensor, cfg: ClipConfig, seed: int) -> tuple[FeatureCLIP, list[dict[str, float]]]:
    """Projectors trained by multi-positive InfoNCE: each image with one random template of its class."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = FeatureCLIP(image_features.shape[1], text_features.shape[1], cfg.embed_dim, ("image",), cfg.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    by_class = [torch.nonzero(text_labels == c).flatten() for c in range(10)]
    n, batch = len(labels), min(cfg.batch_size, len(labels))
    log = []
    for step in tqdm(range(1, cfg.steps + 1), desc="train CLIP", unit="step"):
        idx = torch.randperm(n, generator=gen)[:batch]
        y = labels[idx]
        pick = torch.stack([by_class[int(c)][torch.randint(len(by_class[int(c)]), (1,), generator=gen)][0]
                            for c in y])
        loss = multi_positive_infonce(model.embed_images(image_features[idx], "image"),
                                      model.embed_texts(text_features[pick]), y[:, None] == y[None, :],
                                      model.logit_scale())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % max(1, cfg.steps // 20) == 0 or step == cfg.steps:
            log.append({"step": step, "loss": float(loss)})
    return model.eval(), log


def run(cfg: ClipConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Split the images, encode the CLIP split and the prompts once, train the projectors."""
    data = load_images(paths.images)
    splits = make_splits(data.train_labels, data.test_labels, cfg, ctx.seed)
    validate_table(splits, f"{PAPER}.splits", splits_suite(len(splits)))
    clip_rows = splits[splits.role == "clip"]
    gen = torch.Generator().manual_seed(derive_seed(ctx.seed, PAPER, "clip-images"))
    rgb = to_rgb(corrupt(data.train_images[clip_rows["index"].to_numpy()], "clean", 0, gen), cfg.image_size)
    feats = torch.as_tensor(encode_images(load_image_encoder(paths.image_encoder), rgb, cfg.image_batch_size,
                                          desc="encode CLIP images"))
    mean, std = feats.mean(0), feats.std(0) + 1e-6
    names = [class_name(c) for c in data.classes]
    texts = [t.format(n) for t in cfg.train_templates for n in names]
    text_encoder = load_sentence_encoder(paths.text_encoder)
    text_feats = torch.as_tensor(encode_texts(text_encoder, texts))
    class_feats = torch.as_tensor(encode_texts(text_encoder, [cfg.eval_template.format(n) for n in names]))
    text_labels = torch.arange(len(texts)) % 10
    cap_threads(cfg.max_threads)
    model, log = train_clip(standardise(feats, mean, std), torch.as_tensor(clip_rows.label.to_numpy()), text_feats,
                            text_labels, cfg, derive_seed(ctx.seed, PAPER, "clip"))
    log_table = pd.DataFrame(log)
    validate_table(log_table, f"{PAPER}.clip_log", clip_log_suite(len(log_table)))
    write_parquet(splits, paths.splits)
    write_parquet(log_table, paths.clip_log)
    save_safetensors(save_clip_state(model, mean, std, class_feats), paths.clip)
    return {"n_clip_images": len(clip_rows), "final_loss": round(log[-1]["loss"], 4),
            "classes": names}


main = Step(PAPER, "pretrain", run, load_clip, Paths)


if __name__ == "__main__":
    main()
