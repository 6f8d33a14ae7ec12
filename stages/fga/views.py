"""Step ``views``: the shifted test and validation sets and their augmented views, each encoded once.

Test images get every test corruption at every severity, plus the clean image; validation images
get the validation corruptions (other kinds). Every (image, condition) has ``n_views`` views (view 0
the image itself), encoded by EfficientNet-Lite0 and projected by the frozen CLIP image projector;
the few-shot pool is encoded clean, view 0 only. Only the unit image embeddings are stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.assets.image_encoder import load_image_encoder
from stages.assets.loaders import load_images
from stages.core.clip import FeatureCLIP, encode_images
from stages.core.efficientnet_lite import EfficientNetLite0
from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import in_worker, map_runs
from stages.fga.config import PAPER, ViewsInputs, load_views
from stages.fga.expectations import views_suite
from stages.fga.io import load_clip_model, read_splits, standardise
from stages.fga.shifts import augmented_views, corrupt, to_rgb


@dataclass(frozen=True)
class Paths:
    images: Path = inp("Fashion-MNIST asset folder")
    image_encoder: Path = inp("EfficientNet-Lite0 asset folder")
    splits: Path = inp("image splits")
    clip: Path = inp("the trained CLIP")
    views: Path = out("one row per cached (image, condition): tensor, row, role, kind, severity, image, label")
    embeddings: Path = out("safetensors: pool (n_pool, d) and views (n_rows, n_views, d) unit image embeddings")


def conditions(cfg: ViewsInputs) -> list[tuple[str, str, int, int]]:
    """(role, kind, severity, n_views) of every condition: clean test (view 0), test and validation shifts."""
    v = cfg.views
    return ([("test", "clean", 0, 1)] + [("test", k, s, v.n_views) for k in v.test_corruptions for s in v.severities]
            + [("val", k, s, v.n_views) for k in v.val_corruptions for s in v.severities])


@dataclass(frozen=True)
class Shared:
    """What every condition reads: the config, the frozen encoder and CLIP, the grey images per role, the seed."""

    cfg: ViewsInputs
    encoder: EfficientNetLite0
    model: FeatureCLIP
    feature_mean: torch.Tensor
    feature_std: torch.Tensor
    images: dict[str, np.ndarray]  # role -> uint8 (n, 28, 28), in the order of the role's split rows
    seed: int


def condition_run(job: tuple[str, str, int, int], sh: Shared) -> torch.Tensor:
    """One condition (role, kind, severity, n_views), seeded from the job alone: its unit image embeddings.

    The few-shot pool (role ``pool``) is encoded clean, view 0 only: (n_pool, d). Every other condition
    is corrupted, augmented into its views, encoded and projected: (n, views.n_views, d), the clean test
    condition's single view repeated into the other slots (never read).
    """
    role, kind, severity, n_views = job
    v, c = sh.cfg.views, sh.cfg.clip

    def embed(rgb: np.ndarray, desc: str) -> torch.Tensor:
        feats = encode_images(sh.encoder, rgb, v.image_batch_size, desc, progress=not in_worker())
        with torch.no_grad():
            return sh.model.embed_images(standardise(feats, sh.feature_mean, sh.feature_std), "image")

    if role == "pool":
        gen = torch.Generator().manual_seed(derive_seed(sh.seed, PAPER, "pool"))
        return embed(to_rgb(corrupt(sh.images[role], "clean", 0, gen), c.image_size), "encode few-shot pool")
    gen = torch.Generator().manual_seed(derive_seed(sh.seed, PAPER, "views", role, kind, severity))
    x = corrupt(sh.images[role], kind, severity, gen)
    views = augmented_views(x, n_views, (v.crop_scale[0], v.crop_scale[1]), gen, v.max_shift,
                            v.flip)  # (n, V, 1, h, w)
    n = len(x)
    rgb = to_rgb(views.reshape(n * n_views, *views.shape[2:]), c.image_size)
    emb = embed(rgb, f"encode {role} {kind} {severity}").reshape(n, n_views, -1)
    if n_views < v.n_views:  # clean test keeps view 0 only; the other slots repeat it and are never read
        emb = emb[:, :1].expand(n, v.n_views, emb.shape[-1]).clone()
    return emb


def run(cfg: ViewsInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every condition (and the pool) over ``threads / max_threads`` processes; write the table and the embeddings."""
    v, c = cfg.views, cfg.clip
    data = load_images(paths.images)
    splits = read_splits(paths.splits)
    model, extra = load_clip_model(paths.clip, c.embed_dim, c.hidden)
    source = {"train": data.train_images, "test": data.test_images}
    parts = {role: splits[splits.role == role] for role in ("pool", "test", "val")}
    images = {role: source[part.source.iloc[0]][part["index"].to_numpy()] for role, part in parts.items()}
    shared = Shared(cfg, load_image_encoder(paths.image_encoder), model, extra["feature_mean"], extra["feature_std"],
                    images, ctx.seed)
    jobs = [("pool", "clean", 0, 1), *conditions(cfg)]
    pool_emb, *blocks = map_runs(condition_run, jobs, shared, threads=ctx.threads, max_threads=v.max_threads,
                                 desc="conditions", unit="shift")
    pool = parts["pool"]
    rows = [{"tensor": "pool", "row": i, "role": "pool", "kind": "clean", "severity": 0, "image": int(r["index"]),
             "label": int(r.label)} for i, (_, r) in enumerate(pool.iterrows())]
    start = 0
    for (role, kind, severity, _), emb in zip(jobs[1:], blocks, strict=True):
        rows += [{"tensor": "views", "row": start + i, "role": role, "kind": kind, "severity": severity,
                  "image": int(r["index"]), "label": int(r.label)} for i, (_, r) in enumerate(parts[role].iterrows())]
        start += len(emb)
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.views", views_suite(len(table)))
    write_parquet(table, paths.views)
    save_safetensors({"pool": pool_emb, "views": torch.cat(blocks)}, paths.embeddings)
    return {"n_pool": len(pool), "n_rows": start, "n_views": v.n_views,
            "images_encoded": len(pool) + sum(len(parts[r]) * nv for r, _, _, nv in conditions(cfg))}


main = Step(PAPER, "views", run, load_views, Paths)


if __name__ == "__main__":
    main()
