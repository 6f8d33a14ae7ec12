"""Step ``train``: per data set and seed, ReLaSH (joint embedding + latent diffusion), the latent Gaussian, the VAE."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import map_runs
from stages.relash.baselines import fit_gaussian, train_vae
from stages.relash.config import PAPER, TrainConfig, load_train
from stages.relash.diffusion import train_score_model
from stages.relash.embedding import fit_joint_embedding
from stages.relash.expectations import train_log_suite
from stages.relash.io import FittedModels, dataset_arrays, model_file, read_hyperlinks, read_nodes, save_models

LOG_EVERY = 10


@dataclass(frozen=True)
class Paths:
    hyperlinks: Path = inp("hyperlinks")
    nodes: Path = inp("nodes")
    models: Path = out("folder: one safetensors per (data set, seed)")
    train_log: Path = out("training losses (Parquet)")


def log_rows(dataset: str, seed_index: int, model: str, losses: list[float]) -> list[dict[str, Any]]:
    """Every LOG_EVERY-th loss (and the last)."""
    steps = sorted(set(range(0, len(losses), LOG_EVERY)) | {len(losses) - 1})
    return [{"dataset": dataset, "seed_index": seed_index, "model": model, "step": s, "loss": float(losses[s])}
            for s in steps]


@dataclass(frozen=True)
class Shared:
    """What every fit reads: the config, the hypergraphs, their node attributes and the base seed."""

    cfg: TrainConfig
    hyperlinks: pd.DataFrame
    nodes: pd.DataFrame
    seed: int


def fit_run(job: tuple[str, int], sh: Shared) -> tuple[FittedModels, list[dict[str, Any]]]:
    """Every model on one (data set, seed index), seeded from the job alone: the fitted models and the log rows."""
    import torch

    name, s = job
    cfg = sh.cfg
    ds = dataset_arrays(name, sh.hyperlinks, sh.nodes)
    a, x = ds.incidence["train"], ds.attributes["train"]
    seed = derive_seed(sh.seed, PAPER, name, s)
    torch.manual_seed(seed % 2**63)
    emb, l_fit = fit_joint_embedding(a, x, cfg.latent_dim, cfg.fit_steps, cfg.fit_lr, cfg.ridge,
                                     derive_seed(seed, "embedding"))
    score, l_score = train_score_model(emb.U, cfg.score_hidden, cfg.score_steps, cfg.score_batch, cfg.score_lr,
                                       cfg.t_min, cfg.t_max, derive_seed(seed, "score"))
    g_mean, g_cov = fit_gaussian(emb.U.numpy().astype(np.float64))
    x_std = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-8)
    vae, l_vae = train_vae(a, x_std, cfg.latent_dim, cfg.vae_hidden, cfg.vae_steps, cfg.vae_batch, cfg.vae_lr,
                           derive_seed(seed, "vae"))
    rows: list[dict[str, Any]] = []
    for model, losses in (("joint_embedding", l_fit), ("score_model", l_score), ("vae", l_vae)):
        rows += log_rows(name, s, model, losses)
    return FittedModels(emb, score, g_mean, g_cov, vae), rows


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Fit every model on the training split of every data set, for every seed (over ``threads / max_threads``
    processes)."""
    hyperlinks, nodes = read_hyperlinks(paths.hyperlinks), read_nodes(paths.nodes)
    jobs = [(d, s) for d in hyperlinks.dataset.unique() for s in range(cfg.n_seeds)]
    results = map_runs(fit_run, jobs, Shared(cfg, hyperlinks, nodes, ctx.seed), threads=ctx.threads,
                       max_threads=cfg.max_threads, desc="data set × seed", unit="fit")
    paths.models.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for (name, s), (fitted, log_part) in zip(jobs, results, strict=True):
        save_models(fitted, model_file(paths.models, name, s))
        rows += log_part
    log = pd.DataFrame(rows)
    validate_table(log, "relash.train_log", train_log_suite)
    write_parquet(log, paths.train_log)
    last = log.sort_values("step").groupby(["dataset", "model"]).loss.last()
    return {f"{d}_{m}_final_loss": float(v) for (d, m), v in last.items()}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
