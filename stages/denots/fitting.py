"""Training machinery of ``denots`` (used by the train step and the pilot): one run with early stopping on the
validation loss (the best-validation checkpoint kept), and many runs over worker processes.

Same protocol for every model (DeNOTS fields, GRU-Δt, SSM, Neural RDE, Neural CDE): Adam, batch, gradient clipping,
step cap, evaluation interval and patience; the lr is the run's own.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from stages.core.io import save_safetensors
from stages.core.seeding import derive_seed
from stages.core.threads import cap_threads
from stages.denots.config import PAPER, TrainConfig
from stages.denots.grid import RunSpec, build_model, forward, init_seed, loss_fn
from stages.denots.io import Task
from stages.denots.neural_cde import SolverDiverged, SolverSettings, base_solver
from stages.denots.vector_fields import n_parameters


@dataclass
class Fit:
    """What one training run produced."""

    model: torch.nn.Module
    losses: list[float] = field(default_factory=list)
    nfes: list[int] = field(default_factory=list)
    val_curve: list[tuple[int, float]] = field(default_factory=list)
    best_step: int = 0
    best_val_loss: float = math.inf
    diverged: str = ""
    failure: str = ""  # why training stopped early (solver/non-finite), even when an earlier checkpoint is kept


def mean_loss(model: torch.nn.Module, spec: RunSpec, task: Task, split: str, solver: SolverSettings,
              batch_size: int) -> float:
    """Loss over a whole split (batches weighted by size), no gradients; raises SolverDiverged."""
    data = task.splits[split]
    n = data.values.shape[0]
    total = 0.0
    with torch.no_grad():
        for start in range(0, n, batch_size):
            idx = torch.arange(start, min(start + batch_size, n))
            out, _ = forward(model, spec, data, idx, solver)
            total += float(loss_fn(task, out, data.targets[idx])) * len(idx)
    return total / n


def best_checkpoint(val_curve: list[tuple[int, float]]) -> tuple[int, float]:
    """(step, loss) of the lowest finite validation loss (earliest on ties); (0, inf) if none is finite."""
    finite = [(s, v) for s, v in val_curve if math.isfinite(v)]
    return min(finite, key=lambda x: (x[1], x[0])) if finite else (0, math.inf)


def should_stop(val_curve: list[tuple[int, float]], patience: int) -> bool:
    """True once the last ``patience`` evaluations brought no improvement on the best before them."""
    if len(val_curve) <= patience:
        return False
    best_before = min(v for _, v in val_curve[:-patience])
    return all(not v < best_before for _, v in val_curve[-patience:])


def fit(spec: RunSpec, task: Task, cfg: TrainConfig, seed: int, max_steps: int) -> Fit:
    """Adam at the run's lr, shuffled batches seeded per configuration, validation loss every
    ``eval_every`` steps (and at the start), early stopping; the best-validation weights are restored."""
    torch.manual_seed(init_seed(seed, spec))
    model = build_model(spec, task, cfg)
    solver = spec.solver(base_solver(cfg))
    result = Fit(model)
    opt = torch.optim.Adam(model.parameters(), lr=spec.lr)
    data = task.splits["train"]
    n = data.values.shape[0]
    gen = torch.Generator().manual_seed(derive_seed(seed, PAPER, "batches", spec.dataset, spec.seed_index) % 2**32)
    es = cfg.early_stopping
    best_state = copy.deepcopy(model.state_dict())

    def validate(step: int) -> None:
        nonlocal best_state
        try:
            v = mean_loss(model, spec, task, "val", solver, cfg.batch_size * 4)
        except SolverDiverged:
            v = math.inf
        result.val_curve.append((step, v if math.isfinite(v) else math.inf))
        if result.val_curve[-1][1] < result.best_val_loss:
            result.best_step, result.best_val_loss = step, result.val_curve[-1][1]
            best_state = copy.deepcopy(model.state_dict())

    validate(0)
    step, order, pos = 0, torch.randperm(n, generator=gen), 0
    while step < max_steps:
        if pos + min(cfg.batch_size, n) > n:
            order, pos = torch.randperm(n, generator=gen), 0
        idx = order[pos:pos + cfg.batch_size]
        pos += cfg.batch_size
        try:
            out, nfe = forward(model, spec, data, idx, solver)
        except SolverDiverged as err:
            result.diverged = f"solver: {err}"
            break
        loss = loss_fn(task, out, data.targets[idx])
        if not torch.isfinite(loss):
            result.diverged = "non-finite loss"
            break
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        step += 1
        result.losses.append(float(loss.detach()))
        result.nfes.append(nfe)
        if step % es.eval_every == 0 or step == max_steps:
            validate(step)
            if should_stop(result.val_curve, es.patience):
                break
    result.failure = result.diverged
    if result.diverged and result.best_step > 0:
        result.diverged = ""  # a later failure does not undo the best checkpoint, which is what is kept
    if not math.isfinite(result.best_val_loss):
        result.diverged = result.diverged or "no finite validation loss"
    model.load_state_dict(best_state)
    return result


_WORKER: dict[str, Any] = {}


def _init_worker(tasks: dict[str, Task], noisy: dict[str, Task], cfg: TrainConfig, seed: int, folder: Path | None,
                 max_threads: int) -> None:
    """Per training process: the tasks, config and output folder, and its torch thread cap."""
    cap_threads(max_threads)
    _WORKER.update(tasks=tasks, noisy=noisy, cfg=cfg, seed=seed, folder=folder)


Trained = tuple[dict[str, Any], list[float], list[int], list[tuple[int, float]], tuple[float, float]]


def train_one(spec: RunSpec) -> Trained:
    """Train one run in a worker; its best-validation weights are written there. Row, losses, NFEs, val curve, and
    (wall, CPU) seconds (timings vary between identical runs, so they stay out of the run table)."""
    w = _WORKER
    cfg: TrainConfig = w["cfg"]
    task = w["noisy"][spec.dataset] if spec.group == "perturbed" else w["tasks"][spec.dataset]
    steps = getattr(cfg, spec.dataset).max_steps or cfg.trainer.max_steps
    start, cpu = time.perf_counter(), time.process_time()
    res = fit(spec, task, cfg, w["seed"], steps)
    times = (time.perf_counter() - start, time.process_time() - cpu)
    if not res.diverged and w["folder"] is not None:
        save_safetensors(dict(res.model.state_dict()), w["folder"] / f"{spec.run_id}.safetensors",
                         metadata={"run_id": spec.run_id})
    row = {"run_id": spec.run_id, "config_id": spec.config_id, **spec.__dict__,
           "n_params": n_parameters(res.model), "diverged": bool(res.diverged), "reason": res.failure,
           "steps": len(res.losses), "step_cap": steps, "best_step": res.best_step,
           "best_val_loss": res.best_val_loss if math.isfinite(res.best_val_loss) else math.nan,
           "final_loss": res.losses[-1] if res.losses else math.nan,
           "mean_train_nfe": float(sum(res.nfes) / len(res.nfes)) if res.nfes else math.nan}
    return row, res.losses, res.nfes, res.val_curve, times


def train_all(specs: list[RunSpec], tasks: dict[str, Task], noisy: dict[str, Task], cfg: TrainConfig, seed: int,
              folder: Path | None, workers: int) -> list[Trained]:
    """Every run of ``specs``, in order, over ``workers`` processes (each run is seeded on its own, so the
    result does not depend on the number of processes)."""
    args = (tasks, noisy, cfg, seed, folder, cfg.max_threads)
    if workers <= 1:
        _init_worker(*args)
        return [train_one(s) for s in tqdm(specs, desc="denots runs")]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=args) as pool:
        return list(tqdm(pool.imap(train_one, specs, chunksize=1), total=len(specs), desc="denots runs"))


def n_workers(threads: int, max_threads: int) -> int:
    """Training processes: the step's global thread budget divided by the per-process torch thread cap."""
    return max(1, threads // max_threads)
