"""Step ``train``: every run of the grid with Lightning; a solve that fails is recorded as diverged."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.trainer import build_trainer
from stages.denots.config import PAPER, TrainConfig, load_train
from stages.denots.expectations import runs_suite, train_log_suite
from stages.denots.grid import RunSpec, build_model, forward, init_seed, loss_fn, run_grid
from stages.denots.io import Task, load_tasks
from stages.denots.neural_cde import SolverDiverged, SolverSettings, base_solver
from stages.denots.vector_fields import n_parameters


@dataclass(frozen=True)
class Paths:
    datasets: Path = inp("data folder from the data step")
    models: Path = out("folder: <run_id>.safetensors per run that trained without diverging")
    runs: Path = out("one row per run: spec, parameters, diverged, reason, steps, NFE (Parquet)")
    train_log: Path = out("loss and NFE per training step (Parquet)")


class SequenceModule(lightning.LightningModule):
    """Trains one model; a failed solve or a non-finite loss stops training and marks the run diverged."""

    def __init__(self, model: torch.nn.Module, spec: RunSpec, task: Task, solver: SolverSettings, lr: float) -> None:
        super().__init__()
        self.model, self.spec, self.task, self.solver, self.lr = model, spec, task, solver, lr
        self.losses: list[float] = []
        self.nfes: list[int] = []
        self.diverged: str = ""

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor | None:
        idx = batch[0]
        data = self.task.splits["train"]
        try:
            out, nfe = forward(self.model, self.spec, data, idx, self.solver)
        except SolverDiverged as err:
            return self._stop(f"solver: {err}")
        loss = loss_fn(self.task, out, data.targets[idx])
        if not torch.isfinite(loss):
            return self._stop("non-finite loss")
        self.losses.append(float(loss.detach()))
        self.nfes.append(nfe)
        return loss

    def _stop(self, reason: str) -> None:
        self.diverged = reason
        self.trainer.should_stop = True
        return None

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.model.parameters(), lr=self.lr)


def train_run(spec: RunSpec, task: Task, cfg: TrainConfig, seed: int) -> SequenceModule:
    """Fit one run with the shared TrainerConfig; data order seeded per run."""
    lightning.seed_everything(init_seed(seed, spec), workers=True, verbose=False)
    model = build_model(spec, task, cfg)
    module = SequenceModule(model, spec, task, spec.solver(base_solver(cfg)), cfg.lr)
    n_train = task.splits["train"].values.shape[0]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(n_train)),
                                         batch_size=cfg.batch_size, shuffle=True, drop_last=n_train > cfg.batch_size,
                                         generator=torch.Generator().manual_seed(init_seed(seed, spec)))
    steps = getattr(cfg, spec.dataset).max_steps or cfg.trainer.max_steps
    trainer = build_trainer(cfg.trainer, gradient_clip_val=cfg.grad_clip, max_epochs=-1, max_steps=steps)
    trainer.fit(module, loader)
    return module


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train every run; write weights of runs that finished, the run table and the training log."""
    cap_threads(cfg.max_threads)
    tasks = load_tasks(paths.datasets)
    rows, logs = [], []
    with atomic_dir(paths.models) as folder:
        for spec in tqdm(run_grid(cfg), desc="denots runs"):
            module = train_run(spec, tasks[spec.dataset], cfg, ctx.seed)
            if not module.diverged:
                save_safetensors(dict(module.model.state_dict()), folder / f"{spec.run_id}.safetensors",
                                 metadata={"run_id": spec.run_id})
            rows.append({"run_id": spec.run_id, **spec.__dict__, "n_params": n_parameters(module.model),
                         "diverged": bool(module.diverged), "reason": module.diverged,
                         "steps": len(module.losses),
                         "final_loss": module.losses[-1] if module.losses else math.nan,
                         "mean_train_nfe": float(sum(module.nfes) / len(module.nfes)) if module.nfes else math.nan})
            logs.append(pd.DataFrame({"run_id": spec.run_id, "step": range(1, len(module.losses) + 1),
                                      "loss": module.losses, "nfe": module.nfes}))
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
