"""Step ``train``: every run of the grid (each configuration at its pilot-chosen lr, or at each lr of the grid),
with early stopping on the validation loss; the best-validation checkpoint is kept. A solve that fails is
recorded as diverged. The runs go over ``threads / max_threads`` processes (stages/denots/fitting.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.denots.config import PAPER, TrainConfig, load_train
from stages.denots.expectations import runs_suite, train_log_suite
from stages.denots.fitting import n_workers, train_all
from stages.denots.grid import run_grid
from stages.denots.io import load_tasks, perturbed_task


@dataclass(frozen=True)
class Paths:
    datasets: Path = inp("data folder from the data step")
    models: Path = out("folder: <run_id>.safetensors (best-validation checkpoint) per run that did not diverge")
    runs: Path = out("one row per run: spec, lr, parameters, diverged, reason, steps, best step and val loss (Parquet)")
    train_log: Path = out("loss and NFE per training step (Parquet)")


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train every run; write best-validation weights, the run table and the training log."""
    tasks = load_tasks(paths.datasets)
    noisy = {"pendulum": perturbed_task(tasks["pendulum"])} if cfg.stability is not None else {}
    with atomic_dir(paths.models) as folder:
        out = train_all(run_grid(cfg), tasks, noisy, cfg, ctx.seed, folder, n_workers(ctx.threads, cfg.max_threads))
    cap_threads(cfg.max_threads)
    rows = [o[0] for o in out]
    logs = [pd.DataFrame({"run_id": r["run_id"], "step": range(1, len(losses) + 1), "loss": losses, "nfe": nfes})
            for r, losses, nfes, _, _ in out]
    runs = pd.DataFrame(rows)
    log = pd.concat(logs, ignore_index=True)
    validate_table(runs, f"{PAPER}.runs", runs_suite(len(runs)))
    validate_table(log, f"{PAPER}.train_log", train_log_suite(int(runs.steps.sum())))
    write_parquet(runs, paths.runs)
    write_parquet(log, paths.train_log)
    return {"runs": len(runs), "diverged_in_training": int(runs.diverged.sum())}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
