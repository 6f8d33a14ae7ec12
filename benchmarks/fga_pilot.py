"""fga pilot: view policies and a class-disjoint CLIP, on a separate seed set and validation shifts only.

Run: PYTHONPATH=. python -m benchmarks.fga_pilot OUT_DIR. Uses the global seed 101 (the verdict run uses the
params' seed), the default profile's sizes with one test image per class (test results are not read), and
prints per view policy the validation accuracy of each method at its chosen knobs, per seed; then trains
the CLIP on five classes and measures its zero-shot accuracy on the five others (chance 0.2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from stages.assets.image_encoder import load_image_encoder
from stages.assets.loaders import load_images, load_sentence_encoder
from stages.core.clip import encode_images, encode_texts
from stages.core.io import read_json, read_parquet
from stages.core.seeding import apply_threads, derive_seed
from stages.core.stage import StageContext
from stages.fga import adapt, pretrain, views
from stages.fga.config import load_adapt, load_clip, load_views
from stages.fga.io import standardise
from stages.fga.shifts import corrupt, to_rgb

SEED = 101
PARAMS = Path("params.yaml")
ASSETS = {"images": Path("data/assets/fashion-mnist"), "image_encoder": Path("models/assets/efficientnet-lite0"),
          "text_encoder": Path("models/assets/minilm-l6-v2")}
POLICIES = {"crops 0.5-1, flips": {"crop_scale": [0.5, 1.0], "max_shift": 0, "flip": True},
            "crops 0.8-1, shifts 2 px, flips": {"crop_scale": [0.8, 1.0], "max_shift": 2, "flip": True},
            "shifts 2 px, flips, no crop": {"crop_scale": [1.0, 1.0], "max_shift": 2, "flip": True}}
SPLIT = ([0, 1, 4, 5, 8], [2, 3, 6, 7, 9])  # two halves, each with tops, a lower garment and footwear or a bag


def ctx(step: str) -> StageContext:
    return StageContext("fga", step, SEED, "default", 2)


def view_policies(out: Path) -> dict[str, dict]:
    clip_cfg = load_clip(PARAMS).model_copy(update={"n_test_per_class": 1})
    p = pretrain.Paths(**ASSETS, splits=out / "splits.parquet", clip=out / "clip.safetensors",
                       clip_log=out / "clip_log.parquet")
    if not p.clip.exists():
        pretrain.run(clip_cfg, p, ctx("pretrain"))
    summary = {}
    for name, policy in POLICIES.items():
        vin = load_views(PARAMS)
        vin = vin.model_copy(update={"views": vin.views.model_copy(update=policy), "clip": clip_cfg})
        d = out / name.replace(" ", "_").replace(",", "")
        d.mkdir(exist_ok=True)
        vp = views.Paths(images=ASSETS["images"], image_encoder=ASSETS["image_encoder"], splits=p.splits, clip=p.clip,
                         views=d / "views.parquet", embeddings=d / "embeddings.safetensors")
        if not vp.embeddings.exists():
            views.run(vin, vp, ctx("views"))
        ain = load_adapt(PARAMS)
        ain = ain.model_copy(update={"adapt": ain.adapt.model_copy(update={"n_seeds": 3})})
        ap = adapt.Paths(views=vp.views, embeddings=vp.embeddings, clip=p.clip, results=d / "results.parquet",
                         adaptation=d / "adaptation.json")
        adapt.run(ain, ap, ctx("adapt"))
        ad = read_json(ap.adaptation)
        val = {m: [s["validation_best"][m] for s in ad["seeds"]] for m in ad["seeds"][0]["validation_best"]}
        summary[name] = {"validation_best": val,
                         "views_vote_minus_single": [z - c for z, c in zip(val["zero"], val["coop"], strict=True)],
                         "fga_coop_minus_zero": [f - z for f, z in zip(val["fga_coop"], val["zero"], strict=True)],
                         "lambda_fga": [s["knobs"]["fga"]["lambda"] for s in ad["seeds"]],
                         "lambda_fga_coop": [s["knobs"]["fga_coop"]["lambda"] for s in ad["seeds"]],
                         "sharpness_ratio": [s["sharpness_ratio"] for s in ad["seeds"]],
                         "text_passes_fga_over_tpt": [s["text_passes_fga_over_tpt"] for s in ad["seeds"]]}
        print(name, json.dumps(summary[name]), flush=True)
    return summary


def class_split(out: Path) -> dict[str, float]:
    """Zero-shot accuracy of a CLIP trained on one half of the classes, on the other half (and on its own)."""
    cfg = load_clip(PARAMS)
    data = load_images(ASSETS["images"])
    splits = read_parquet(out / "splits.parquet")
    rows = splits[splits.role == "clip"]
    gen = torch.Generator().manual_seed(derive_seed(SEED, "fga", "clip-images"))
    rgb = to_rgb(corrupt(data.train_images[rows["index"].to_numpy()], "clean", 0, gen), cfg.image_size)
    feats = torch.as_tensor(encode_images(load_image_encoder(ASSETS["image_encoder"]), rgb, cfg.image_batch_size))
    labels = torch.as_tensor(rows.label.to_numpy())
    names = [pretrain.class_name(c) for c in data.classes]
    enc = load_sentence_encoder(ASSETS["text_encoder"])
    eval_feats = torch.as_tensor(encode_texts(enc, [cfg.eval_template.format(n) for n in names]))
    result = {}
    for seen, unseen in (SPLIT, SPLIT[::-1]):
        m = torch.isin(labels, torch.as_tensor(seen))
        mean, std = feats[m].mean(0), feats[m].std(0) + 1e-6
        texts = [(t.format(names[c]), c) for t in cfg.train_templates for c in seen]
        tf = torch.as_tensor(encode_texts(enc, [t for t, _ in texts]))
        model, _ = pretrain.train_clip(standardise(feats[m], mean, std), labels[m], tf,
                                       torch.as_tensor([c for _, c in texts]), cfg, derive_seed(SEED, "split"))
        with torch.no_grad():
            for part, classes in (("unseen", unseen), ("seen", seen)):
                sel = torch.isin(labels, torch.as_tensor(classes))
                img = model.embed_images(standardise(feats[sel], mean, std), "image")
                txt = model.embed_texts(eval_feats[classes])
                pred = torch.as_tensor(classes)[(img @ txt.T).argmax(-1)]
                result[f"train {seen} -> {part} {classes}"] = float((pred == labels[sel]).float().mean())
    print("class split", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    apply_threads(2)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    summary = {"view_policies": view_policies(out)}
    summary["class_split"] = class_split(out)
    (out / "pilot.json").write_text(json.dumps(summary, indent=1))
    means = {n: float(np.mean(s["views_vote_minus_single"])) for n, s in summary["view_policies"].items()}
    print("mean validation zero - coop per policy:", means)
