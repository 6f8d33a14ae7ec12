"""Step ``evaluate``: zero-shot accuracy on held-out taxa (in distribution, shifted), caption retrieval, seen taxa."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.biocap.config import PAPER, EvaluateInputs, load_evaluate
from stages.biocap.contrastive import caption_head, image_heads, label_head, standardise
from stages.biocap.expectations import results_suite
from stages.biocap.io import read_features, read_tables, run_file
from stages.core.clip import FeatureCLIP, recall_at_k, zero_shot_predict
from stages.core.gx import validate_table
from stages.core.io import load_safetensors, write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out

CLASS_TEXT = "mixed"  # zero-shot class prompt: "a photo of <taxonomic string>, the <common name>"


@dataclass(frozen=True)
class Paths:
    specimens: Path = inp("specimen table")
    taxa: Path = inp("taxon table")
    texts: Path = inp("text table")
    features: Path = inp("cached image and text features")
    models: Path = inp("trained projectors")
    results: Path = out("one value per arm, seed and metric (Parquet)")
    evaluation: Path = out("set sizes and chance levels (JSON)")


@dataclass(frozen=True)
class EvalSet:
    """Images of one test, the candidate classes (species ids) and each image's class index."""

    rows: np.ndarray
    classes: np.ndarray
    targets: np.ndarray


def zero_shot_sets(specimens: pd.DataFrame, taxa: pd.DataFrame) -> dict[str, EvalSet]:
    """Held-out test and val taxa, in distribution (id) and shifted; training taxa on their seen-test images."""
    sets = {}
    for name, split, role, shifted in (("test_id", "test", "test", False), ("test_shift", "test", "test", True),
                                       ("val_id", "val", "val", False), ("val_shift", "val", "val", True),
                                       ("seen", "seen_test", "train", False)):
        classes = np.sort(taxa[taxa.role == role].species_id.to_numpy())
        part = specimens[(specimens.split == split) & (specimens.shifted == shifted)]
        sets[name] = EvalSet(rows=part.row.to_numpy(), classes=classes,
                             targets=np.searchsorted(classes, part.species_id.to_numpy()))
    return sets


def retrieval_sets(specimens: pd.DataFrame, texts: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(gallery image rows, query text ids in gallery order): test gallery = seen-test + held-out test images in
    distribution; val gallery = val images in distribution. Queries use the caption format held out of training."""
    queries = texts[texts.kind == "query"].set_index("row").text_id
    out_ = {}
    for name, splits in (("test", ("seen_test", "test")), ("val", ("val",))):
        rows = specimens[specimens.split.isin(splits) & ~specimens.shifted].row.to_numpy()
        out_[name] = (rows, queries.loc[rows].to_numpy())
    return out_


def evaluate_model(model: FeatureCLIP, arm: str, images: torch.Tensor, text_features: torch.Tensor,
                   class_text: dict[int, int], zs: dict[str, EvalSet],
                   retrieval: dict[str, tuple[np.ndarray, np.ndarray]], ks: list[int]) -> dict[str, float]:
    """Every metric of one trained model."""
    out_: dict[str, float] = {}
    with torch.no_grad():
        for name, s in zs.items():
            img = model.embed_images(images[s.rows], label_head(arm)).numpy()
            cls = model.embed_texts(text_features[[class_text[int(c)] for c in s.classes]]).numpy()
            out_[f"zero_shot_{name}"] = float((zero_shot_predict(img, cls) == s.targets).mean())
        for name, (rows, query_ids) in retrieval.items():
            gallery = model.embed_images(images[rows], caption_head(arm)).numpy()
            queries = model.embed_texts(text_features[query_ids]).numpy()
            for k, r in recall_at_k(queries, gallery, np.arange(len(rows)), ks).items():
                out_[f"{name}_recall_at_{k}"] = r
    return out_


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every arm and seed the train step wrote."""
    specimens, taxa, texts = read_tables(paths.specimens, paths.taxa, paths.texts)
    image_features, text_features = read_features(paths.features, len(specimens), len(texts))
    train_rows = specimens[specimens.split == "train"].row.to_numpy()
    images = torch.as_tensor(standardise(image_features, train_rows), dtype=torch.float32)
    texts_t = torch.as_tensor(text_features, dtype=torch.float32)
    class_text = texts[texts.kind == CLASS_TEXT].set_index("species_id").text_id.to_dict()
    zs, retrieval = zero_shot_sets(specimens, taxa), retrieval_sets(specimens, texts)
    rows = []
    for s in range(cfg.n_seeds):
        for arm in cfg.arms:
            model = FeatureCLIP(images.shape[1], texts_t.shape[1], cfg.embed_dim, image_heads(arm), cfg.hidden)
            model.load_state_dict(load_safetensors(paths.models / run_file(arm, s)), strict=True)
            metrics = evaluate_model(model.eval(), arm, images, texts_t, class_text, zs, retrieval,
                                     cfg.evaluate.recall_ks)
            rows += [{"arm": arm, "seed_index": s, "metric": k, "value": v} for k, v in metrics.items()]
    results = pd.DataFrame(rows)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), list(cfg.arms)))
    write_parquet(results, paths.results)
    summary = {"arms": list(cfg.arms), "n_seeds": cfg.n_seeds, "recall_ks": list(cfg.evaluate.recall_ks),
               "zero_shot": {n: {"images": len(s.rows), "classes": len(s.classes), "chance": 1 / len(s.classes)}
                             for n, s in zs.items()},
               "retrieval": {n: {"gallery": len(r)} for n, (r, _) in retrieval.items()},
               "n_train_images": len(train_rows), "n_train_taxa": int((taxa.role == "train").sum())}
    write_json(summary, paths.evaluation, finite=True)
    return {"mean": results.groupby(["arm", "metric"]).value.mean().round(3).unstack().to_dict()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
