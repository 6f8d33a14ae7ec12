"""Step ``train``: every arm × seed on the cached features, at equal steps; projector weights and loss logs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from stages.biocap.config import PAPER, TrainConfig, load_train
from stages.biocap.contrastive import TrainingData, train_arm, training_data
from stages.biocap.expectations import train_log_suite
from stages.biocap.io import read_features, read_tables, run_file
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import in_worker, map_runs


@dataclass(frozen=True)
class Paths:
    specimens: Path = inp("specimen table")
    taxa: Path = inp("taxon table")
    texts: Path = inp("text table")
    features: Path = inp("cached image and text features")
    models: Path = out("folder: <arm>_s<seed>.safetensors (projectors and logit scale)")
    train_log: Path = out("losses per arm, seed and logged step (Parquet)")


@dataclass(frozen=True)
class Shared:
    """What every run reads: the config, the indexed training data and the base seed."""

    cfg: TrainConfig
    data: TrainingData
    seed: int


def train_run(job: tuple[str, int], sh: Shared) -> tuple[dict[str, torch.Tensor], list[dict[str, float]]]:
    """One (arm, seed index) from scratch, seeded from the job alone: the projector weights and the loss log."""
    arm, s = job
    model, log = train_arm(arm, sh.data, sh.cfg, derive_seed(sh.seed, PAPER, "train", s), desc=f"{arm} seed {s}",
                           progress_bar=not in_worker())
    return dict(model.state_dict()), log


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train each arm with each seed over ``threads / max_threads`` processes; write the weights and the log."""
    specimens, _, texts = read_tables(paths.specimens, paths.taxa, paths.texts)
    image_features, text_features = read_features(paths.features, len(specimens), len(texts))
    data = training_data(image_features, text_features, specimens, texts)
    jobs = [(arm, s) for s in range(cfg.n_seeds) for arm in cfg.arms]
    results = map_runs(train_run, jobs, Shared(cfg, data, ctx.seed), threads=ctx.threads,
                       max_threads=cfg.max_threads, desc="biocap runs (arm × seed)")
    rows = []
    with atomic_dir(paths.models) as tmp:
        for (arm, s), (state, log) in zip(jobs, results, strict=True):
            save_safetensors(state, tmp / run_file(arm, s))
            rows += [{"arm": arm, "seed_index": s, **r} for r in log]
    log_table = pd.DataFrame(rows)
    validate_table(log_table, f"{PAPER}.train_log", train_log_suite(len(log_table), list(cfg.arms)))
    write_parquet(log_table, paths.train_log)
    final = log_table.sort_values("step").groupby("arm").loss.last()
    return {"final_loss": final.round(4).to_dict()}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
