"""Step ``evaluate``: validation/test score and NFE of every run, and the per-seed verdict metrics.

Scores: R² of the pendulum length, accuracy on JapaneseVowels. A run that diverged (in
training or on held-out data) has no score; for the verdict metrics it counts at the
score floor of its data set (params), as does a score below the floor. Choices among runs
(best D, best tolerance, best baseline) are made on the validation split, never the test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_parquet, write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.denots.config import PAPER, EvaluateInputs, load_evaluate
from stages.denots.expectations import results_suite, runs_suite
from stages.denots.grid import RunSpec, build_model, forward, run_grid
from stages.denots.io import SplitTensors, Task, load_tasks
from stages.denots.neural_cde import SolverDiverged, SolverSettings, base_solver
from stages.denots.vector_fields import FEEDBACK_FIELDS, NO_FEEDBACK_FIELDS


@dataclass(frozen=True)
class Paths:
    datasets: Path = inp("data folder")
    models: Path = inp("trained weights")
    runs: Path = inp("run table from train")
    results: Path = out("one row per run: val/test score, test NFE, diverged (Parquet)")
    evaluation: Path = out("per-seed verdict metrics and the runs they compare (JSON)")


def r_squared(pred: np.ndarray, target: np.ndarray) -> float:
    """R² = 1 − Σ(y − ŷ)² / Σ(y − ȳ)², in float64 (collapsed no-feedback runs predict ~1e8)."""
    pred, target = np.asarray(pred, dtype=np.float64), np.asarray(target, dtype=np.float64)
    return float(1.0 - np.sum((target - pred) ** 2) / np.sum((target - target.mean()) ** 2))


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of argmax predictions equal to the label."""
    return float(np.mean(logits.argmax(axis=-1) == labels))


def score_split(model: torch.nn.Module, spec: RunSpec, task: Task, data: SplitTensors, solver: SolverSettings,
                batch_size: int) -> tuple[float, float]:
    """(score, mean NFE per batch) on one split; raises SolverDiverged."""
    outs, nfes = [], []
    with torch.no_grad():
        for start in range(0, data.values.shape[0], batch_size):
            idx = torch.arange(start, min(start + batch_size, data.values.shape[0]))
            out, nfe = forward(model, spec, data, idx, solver)
            outs.append(out)
            nfes.append(nfe)
    pred = torch.cat(outs).numpy()
    if not np.isfinite(pred).all():
        raise SolverDiverged("non-finite prediction")
    target = data.targets.numpy()
    score = r_squared(pred, target) if task.regression else accuracy(pred, target)
    return score, float(np.mean(nfes))


def evaluate_run(spec: RunSpec, row: pd.Series, task: Task, inputs: EvaluateInputs, models: Path) -> dict[str, Any]:
    """Scores of one run; a divergence here is recorded like one in training."""
    res = {"val_score": math.nan, "test_score": math.nan, "val_nfe": math.nan, "test_nfe": math.nan,
           "diverged": bool(row.diverged), "reason": str(row.reason)}
    if row.diverged:
        return res
    model = build_model(spec, task, inputs.train)
    model.load_state_dict(load_safetensors(models / f"{spec.run_id}.safetensors"))
    model.eval()
    solver = spec.solver(base_solver(inputs.train))
    try:
        res["val_score"], res["val_nfe"] = score_split(model, spec, task, task.splits["val"], solver,
                                                       inputs.evaluate.batch_size)
        res["test_score"], res["test_nfe"] = score_split(model, spec, task, task.splits["test"], solver,
                                                         inputs.evaluate.batch_size)
    except SolverDiverged as err:
        res.update(diverged=True, reason=f"evaluation: {err}", val_score=math.nan, test_score=math.nan)
    return res


def floored(results: pd.DataFrame, floors: dict[str, float]) -> pd.Series:
    """Scores for the verdict: a diverged run or a score below the floor counts as the floor."""
    floor = results.dataset.map(floors)
    return results.test_score.where(~results.diverged, floor).clip(lower=floor).fillna(floor)


def pick(frame: pd.DataFrame) -> pd.Series:
    """The run with the best validation score (diverged runs last; ties broken by order)."""
    ranked = frame.assign(_v=frame.val_score.where(~frame.diverged, -np.inf).fillna(-np.inf))
    return ranked.loc[ranked._v.idxmax()]


def compared(seed: int, method: pd.Series, other: pd.Series) -> dict[str, Any]:
    """The two runs one verdict metric compares, with their floored test scores and NFE."""
    return {"seed": int(seed), "method run": method.run_id, "method score": float(method.score),
            "method NFE": float(method.test_nfe), "compared run": other.run_id, "compared score": float(other.score),
            "compared NFE": float(other.test_nfe)}


def verdict_metrics(results: pd.DataFrame, inputs: EvaluateInputs) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Per-seed metrics of the verdict checks, and which runs each compares (for the report)."""
    cfg = inputs.train
    floors = {"pendulum": inputs.evaluate.pendulum_score_floor, "vowels": inputs.evaluate.vowels_score_floor}
    r = results.assign(score=floored(results, floors))
    seeds = sorted(r.seed_index.unique())
    per_seed: dict[str, list[float]] = {k: [] for k in (
        "feedback_long_vs_d1", "nofeedback_degradation", "scale_minus_tolerance",
        "denots_minus_baseline_pendulum", "denots_minus_baseline_vowels")}
    chosen: dict[str, list[dict[str, Any]]] = {k: [] for k in per_seed}
    pend = r[(r.dataset == "pendulum") & (r.group == "horizon")]
    d_long = max(cfg.pendulum.horizons)

    def score(frame: pd.DataFrame, field: str, horizon: float, s: int) -> float:
        row = frame[(frame.field == field) & (frame.horizon == horizon) & (frame.seed_index == s)]
        return float(row.score.iloc[0])

    fb = [f for f in cfg.pendulum.fields if f in FEEDBACK_FIELDS]
    nofb = [f for f in cfg.pendulum.fields if f in NO_FEEDBACK_FIELDS]
    d1_std = {f: float(np.std([score(pend, f, 1.0, s) for s in seeds], ddof=1)) if len(seeds) > 1 else 0.0
              for f in fb}
    for s in seeds:
        if fb:
            per_seed["feedback_long_vs_d1"].append(min(score(pend, f, d_long, s) - score(pend, f, 1.0, s) + d1_std[f]
                                                       for f in fb))
        if nofb:
            per_seed["nofeedback_degradation"].append(min(score(pend, f, 1.0, s) - score(pend, f, d_long, s)
                                                          for f in nofb))
        sweep = cfg.pendulum.tolerance_sweep
        if sweep is not None:
            mine = r[(r.dataset == "pendulum") & (r.field == sweep.field) & (r.seed_index == s)]
            scaled = pick(mine[(mine.group == "horizon") & (mine.horizon > 1)])
            tight = pick(mine[(mine.group == "tolerance") | ((mine.group == "horizon") & (mine.horizon == 1))])
            per_seed["scale_minus_tolerance"].append(float(scaled.score - tight.score))
            chosen["scale_minus_tolerance"].append(compared(s, scaled, tight))
        for name in ("pendulum", "vowels"):
            mine = r[(r.dataset == name) & (r.seed_index == s)]
            best = pick(mine[(mine.group == "horizon") & (mine.field == cfg.denots_field)])
            base = pick(mine[mine.group == "baseline"])
            per_seed[f"denots_minus_baseline_{name}"].append(float(best.score - base.score))
            chosen[f"denots_minus_baseline_{name}"].append(compared(s, best, base))
    return {k: v for k, v in per_seed.items() if v}, {k: v for k, v in chosen.items() if v}


def describe(inputs: EvaluateInputs) -> str:
    """The grid and training budget in words, for the report."""
    t = inputs.train
    sweep = t.pendulum.tolerance_sweep
    tols = ", ".join(f"rtol {x.rtol:g}/atol {x.atol:g}" for x in sweep.tolerances) if sweep else "none"
    return (f"Model: h(0) = W x̂(0), dh/dτ = f(x̂(τ/D), h) on τ ∈ [0, D], ŷ = W h(D), with x̂ a natural cubic "
            f"spline (torchcde) of the observations over [0, 1] (time is an input channel), hidden size {t.hidden}. "
            f"Solver for every ODE run: torchdiffeq {t.solver.method}, rtol {t.solver.rtol:g}, atol {t.solver.atol:g}, "
            f"at most {t.solver.max_num_steps} steps per solve (more = diverged), backpropagation through the "
            f"solver. Horizons D: pendulum {[f'{d:g}' for d in t.pendulum.horizons]}, JapaneseVowels "
            f"{[f'{d:g}' for d in t.vowels.horizons]}; fields {list(t.pendulum.fields)}; tolerance sweep at D = 1 "
            f"for {sweep.field if sweep else '-'}: {tols}. Baselines: {list(t.baselines.models)} (SSM state size "
            f"and Neural RDE width matched to the DeNOTS parameter count; the Neural RDE uses depth-2 "
            f"log-signatures over windows of {t.baselines.nrde_window} steps). Every run: Adam lr {t.lr:g}, batch "
            f"{t.batch_size}, {t.pendulum.max_steps or t.trainer.max_steps} steps (pendulum) and "
            f"{t.vowels.max_steps or t.trainer.max_steps} (vowels), gradient clipping {t.grad_clip:g}, "
            f"{t.n_seeds} seeds, torch threads capped at {t.max_threads}. The best D, tolerance and baseline of each "
            f"seed are chosen on the validation split; scores below are on the test split.")


def run(inputs: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every run on validation and test; compute the verdict metrics."""
    cap_threads(inputs.train.max_threads)
    tasks = load_tasks(paths.datasets)
    runs = read_parquet(paths.runs)
    validate_table(runs, f"{PAPER}.runs", runs_suite(len(runs)))
    by_id = runs.set_index("run_id")
    rows = []
    for spec in tqdm(run_grid(inputs.train), desc="evaluate runs"):
        if spec.run_id not in by_id.index:
            raise KeyError(f"run '{spec.run_id}' of the grid is missing from {paths.runs}; rerun train")
        row = by_id.loc[spec.run_id]
        rows.append({"run_id": spec.run_id, **spec.__dict__, "n_params": int(row.n_params),
                     "train_steps": int(row.steps),
                     **evaluate_run(spec, row, tasks[spec.dataset], inputs, paths.models)})
    results = pd.DataFrame(rows)
    validate_table(results, f"{PAPER}.results", results_suite(len(results)))
    write_parquet(results, paths.results)
    per_seed, chosen = verdict_metrics(results, inputs)
    write_json({"per_seed": per_seed, "chosen": chosen, "seeds": sorted(int(s) for s in results.seed_index.unique()),
                "long_horizon": max(inputs.train.pendulum.horizons),
                "n_cases": {name: {s: int(t.splits[s].values.shape[0]) for s in t.splits} for name, t in tasks.items()},
                "denots_field": inputs.train.denots_field, "description": describe(inputs),
                "score_floors": {"pendulum": inputs.evaluate.pendulum_score_floor,
                                 "vowels": inputs.evaluate.vowels_score_floor},
                "tolerance_field": sweep.field if (sweep := inputs.train.pendulum.tolerance_sweep) else None},
               paths.evaluation)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
