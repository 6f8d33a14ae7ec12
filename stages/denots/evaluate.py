"""Step ``evaluate``: validation/test score and NFE of every run, and the per-seed verdict metrics.

Scores: R² of the pendulum length, accuracy on JapaneseVowels. Each configuration was trained at every lr
of the sweep; the lr kept is the one with the lower best validation loss (``lr_chosen``). A run that diverged (in
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
from stages.denots.grid import RunSpec, build_model, config_grid, forward, reads_for_verdict, run_grid
from stages.denots.io import SplitTensors, Task, load_tasks, perturbed_task
from stages.denots.neural_cde import SolverDiverged, SolverSettings, base_solver, interpolate_real_time


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


def is_divergent(score: float, threshold: float | None) -> bool:
    """A run diverged when its score is not finite or, with a ``threshold``, below it (pendulum R² < threshold:
    predictions off by orders of magnitude, as a blown-up state gives; R² = −3·10²⁴ is divergence, not a score)."""
    return not math.isfinite(score) or (threshold is not None and score < threshold)


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


def state_statistics(model: torch.nn.Module, spec: RunSpec, data: SplitTensors, solver: SolverSettings,
                     batch_size: int) -> tuple[float, float]:
    """DeNOTS only: RMS of the final state h(D·T) and of the field's speed f(x̂(T), h(D·T)) there, over a split.
    A speed near 0 means the state has settled (held or at a fixed point) by the end of the horizon."""
    states, speeds = [], []
    with torch.no_grad():
        for start in range(0, data.values.shape[0], batch_size):
            values = data.values[start:start + batch_size]
            h = model.hidden_state(values, spec.horizon, solver)
            states.append(h)
            speeds.append(model.field(interpolate_real_time(values, torch.tensor(1.0)), h))
    return (float(torch.cat(states).pow(2).mean().sqrt()), float(torch.cat(speeds).pow(2).mean().sqrt()))


def evaluate_run(spec: RunSpec, row: pd.Series, task: Task, inputs: EvaluateInputs, models: Path) -> dict[str, Any]:
    """Scores of one run; a divergence here (failed solve, non-finite or divergent score) is recorded like one
    in training."""
    res = {"val_score": math.nan, "test_score": math.nan, "val_nfe": math.nan, "test_nfe": math.nan,
           "state_rms": math.nan, "end_speed_rms": math.nan, "diverged": bool(row.diverged), "reason": str(row.reason)}
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
        if spec.model == "denots":
            res["state_rms"], res["end_speed_rms"] = state_statistics(model, spec, task.splits["test"], solver,
                                                                      inputs.evaluate.batch_size)
    except SolverDiverged as err:
        res.update(diverged=True, reason=f"evaluation: {err}", val_score=math.nan, test_score=math.nan)
        return res
    threshold = inputs.evaluate.pendulum_divergence_r2 if task.regression else None
    if is_divergent(res["val_score"], threshold) or is_divergent(res["test_score"], threshold):
        res.update(diverged=True, reason=f"evaluation: R² below {threshold:g}")
    return res


def floored(results: pd.DataFrame, floors: dict[str, float]) -> pd.Series:
    """Scores for the verdict: a diverged run or a score below the floor counts as the floor."""
    floor = results.dataset.map(floors)
    return results.test_score.where(~results.diverged, floor).clip(lower=floor).fillna(floor)


def choose_lr(results: pd.DataFrame) -> pd.Series:
    """True for the run of each configuration whose best validation loss is lowest (the lr kept); diverged last,
    ties to the first lr. Uses the validation split only."""
    key = results.best_val_loss.where(~results.diverged, np.inf).fillna(np.inf)
    best = key.groupby(results.config_id).transform("min")
    first = results.assign(_k=key).groupby("config_id")._k.transform(lambda k: k.index == k.idxmin())
    return (key == best) & first.astype(bool)


def pick(frame: pd.DataFrame) -> pd.Series:
    """The run with the best validation score (diverged runs last; ties broken by order)."""
    ranked = frame.assign(_v=frame.val_score.where(~frame.diverged, -np.inf).fillna(-np.inf))
    return ranked.loc[ranked._v.idxmax()]


def compared(seed: int, method: pd.Series, other: pd.Series) -> dict[str, Any]:
    """The two runs one verdict metric compares, with their floored test scores and NFE."""
    return {"seed": int(seed), "method run": method.run_id, "method score": float(method.score),
            "method NFE": float(method.test_nfe), "compared run": other.run_id, "compared score": float(other.score),
            "compared NFE": float(other.test_nfe)}


def long_vs_d1(long_score: float, d1_score: float) -> float:
    """R²(D_max) − R²(D = 1) of one field and seed: negative when the long horizon hurts (Sec. 5, pendulum ablation)."""
    return float(long_score - d1_score)


def verdict_metrics(results: pd.DataFrame, inputs: EvaluateInputs) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Per-seed metrics (chosen-lr runs, perturbed runs excluded), and which runs each compares (for the report).

    Per field f on the pendulum: ``long_vs_d1__f``; the best baseline's R² (the competence gate);
    scaling D vs tightening tolerances; DeNOTS vs the best baseline on each data set (vowels: reported only)."""
    cfg = inputs.train
    floors = {"pendulum": inputs.evaluate.pendulum_score_floor, "vowels": inputs.evaluate.vowels_score_floor}
    r = results[results.lr_chosen & (results.group != "perturbed")]
    r = r.assign(score=floored(r, floors))
    seeds = sorted(r.seed_index.unique())
    per_seed: dict[str, list[float]] = {}
    chosen: dict[str, list[dict[str, Any]]] = {}
    pend = r[(r.dataset == "pendulum") & (r.group == "horizon")]
    d_long = max(cfg.pendulum.horizons)

    def one(frame: pd.DataFrame, field: str, horizon: float, s: int) -> pd.Series:
        return frame[(frame.field == field) & (frame.horizon == horizon) & (frame.seed_index == s)].iloc[0]

    def add(name: str, value: float, rows: dict[str, Any] | None = None) -> None:
        per_seed.setdefault(name, []).append(float(value))
        if rows is not None:
            chosen.setdefault(name, []).append(rows)

    for s in seeds:
        for f in cfg.pendulum.fields:
            long, d1 = one(pend, f, d_long, s), one(pend, f, 1.0, s)
            add(f"long_vs_d1__{f}", long_vs_d1(long.score, d1.score), compared(s, long, d1))
            add(f"long_r2__{f}", long.score)
            add(f"diverged__{f}", float(pend[(pend.field == f) & (pend.seed_index == s)].diverged.sum()))
        base_runs = r[(r.dataset == "pendulum") & (r.group == "baseline") & (r.seed_index == s)]
        add("baselines_best_at_cap", float((base_runs.best_step >= base_runs.step_cap).sum()))
        sweep = cfg.pendulum.tolerance_sweep
        if sweep is not None:
            mine = r[(r.dataset == "pendulum") & (r.field == sweep.field) & (r.seed_index == s)]
            scaled = pick(mine[(mine.group == "horizon") & (mine.horizon > 1)])
            tight = pick(mine[(mine.group == "tolerance") | ((mine.group == "horizon") & (mine.horizon == 1))])
            add("scale_minus_tolerance", scaled.score - tight.score, compared(s, scaled, tight))
        for name in ("pendulum", "vowels"):
            mine = r[(r.dataset == name) & (r.seed_index == s)]
            best = pick(mine[(mine.group == "horizon") & (mine.field == cfg.denots_field)])
            base = pick(mine[mine.group == "baseline"])
            add(f"denots_minus_baseline_{name}", best.score - base.score, compared(s, best, base))
            add(f"best_baseline_{name}", base.score)
    return per_seed, chosen


def stability_rows(results: pd.DataFrame) -> list[dict[str, Any]]:
    """Per perturbed configuration: test score of the chosen lr with inputs one ulp larger vs unperturbed."""
    r = results[results.lr_chosen]
    base = r[r.group != "perturbed"].set_index("config_id")
    rows = []
    for _, p in r[r.group == "perturbed"].iterrows():
        ref = base.loc[p.config_id.removesuffix("__ulp")]
        rows.append({"config": p.config_id.removesuffix("__ulp"), "lr (original)": float(ref.lr),
                     "lr (perturbed)": float(p.lr), "test score": float(ref.test_score),
                     "test score, inputs +1 ulp": float(p.test_score),
                     "abs difference": float(abs(p.test_score - ref.test_score)),
                     "diverged": f"{bool(ref.diverged)}/{bool(p.diverged)}"})
    return rows


def perturbed_replicate(results: pd.DataFrame) -> pd.DataFrame:
    """The chosen-lr runs of the seeds that have one-ulp reruns, each rerun standing in for its original
    (same configuration, group and seed): what the verdict would have read had the inputs been one ulp larger."""
    r = results[results.lr_chosen]
    twins = r[r.group == "perturbed"]
    seeds = sorted(twins.seed_index.unique())
    base = r[(r.group != "perturbed") & r.seed_index.isin(seeds)]
    by_config = twins.assign(config_id=twins.config_id.str.removesuffix("__ulp")).set_index("config_id")
    rows = []
    for _, row in base.iterrows():
        if row.config_id in by_config.index:
            twin = by_config.loc[row.config_id].copy()
            twin["config_id"], twin["group"] = row.config_id, row.group
            rows.append(twin.reindex(row.index))
        else:
            rows.append(row)
    return pd.DataFrame(rows, columns=base.columns)


def replicate_metrics(results: pd.DataFrame, inputs: EvaluateInputs) -> dict[str, Any] | None:
    """Per-seed verdict metrics of the one-ulp replicate, beside the originals of the same seeds (None without one).

    ``complete``: every configuration the verdict reads on these seeds was rerun, so every metric moved as it would."""
    stability = inputs.train.stability
    if stability is None or not stability.replicate:
        return None
    replicate = perturbed_replicate(results)
    seeds = sorted(int(x) for x in replicate.seed_index.unique())
    per_seed, _ = verdict_metrics(replicate, inputs)
    twins = set(results[results.lr_chosen & (results.group == "perturbed")].config_id.str.removesuffix("__ulp"))
    needed = {spec.config_id for spec in config_grid(inputs.train)
              if spec.seed_index in seeds and spec.group != "perturbed" and reads_for_verdict(spec, inputs.train)}
    return {"seeds": seeds, "per_seed": per_seed, "complete": needed <= twins,
            "rerun": len(needed & twins), "needed": len(needed)}


def describe(inputs: EvaluateInputs) -> str:
    """The grid and training protocol in words, for the report."""
    t = inputs.train
    sweep = t.pendulum.tolerance_sweep
    tols = ", ".join(f"rtol {x.rtol:g}/atol {x.atol:g}" for x in sweep.tolerances) if sweep else "none"
    es = t.early_stopping
    grid = ", ".join(f"{x:g}" for x in t.lrs)
    lr_text = (f"one lr per configuration, chosen from the grid {{{grid}}} on validation loss in a pilot with other "
               f"training seeds (benchmarks/denots_pilot.py; table below)" if t.lr_per_config is not None else
               f"each lr of the grid {{{grid}}}, per configuration the lr with the lowest best validation loss kept")
    return (f"Model: h(0) = W x(t₀), dh/dτ = f(x̂(τ/D), h) on τ ∈ [0, D·T], ŷ = W h(D·T), with x̂ the linear "
            f"interpolation of each sequence at its own real observation times (time unit: the longest training "
            f"observation time, so T = 1; the last observation is held after a sequence ends), hidden size {t.hidden}. "
            f"Solver for every ODE/CDE run: torchdiffeq {t.solver.method}, rtol {t.solver.rtol:g}, atol "
            f"{t.solver.atol:g}, at most {t.solver.max_num_steps} steps per solve (more = failed solve), "
            f"backpropagation through the solver. Horizons D: pendulum {[f'{d:g}' for d in t.pendulum.horizons]}, "
            f"JapaneseVowels {[f'{d:g}' for d in t.vowels.horizons]}; pendulum fields {list(t.pendulum.fields)}, "
            f"vowels fields {list(t.vowels.fields)}; tolerance sweep at D = 1 for {sweep.field if sweep else '-'}: "
            f"{tols}. Baselines: {list(t.baselines.models)} (SSM state size and Neural RDE/CDE widths matched to the "
            f"DeNOTS parameter count; the Neural RDE uses depth-2 log-signatures over windows of "
            f"{t.baselines.nrde_window} steps; the Neural CDE a natural cubic spline of (time, values)). Same protocol "
            f"for every model: Adam at {lr_text}, batch {t.batch_size}, gradient clipping {t.grad_clip:g}, at "
            f"most {t.pendulum.max_steps or t.trainer.max_steps} steps (pendulum) and "
            f"{t.vowels.max_steps or t.trainer.max_steps} (vowels), validation loss every {es.eval_every} steps, "
            f"early stopping after {es.patience} evaluations without improvement, the best-validation checkpoint "
            f"kept; {t.n_seeds} seeds, torch threads capped at {t.max_threads} per training process. The best D and "
            f"baseline of each seed are chosen on the validation "
            f"split; scores are on the test split.")


def budget_text(inputs: EvaluateInputs) -> str:
    """The pendulum training budget in words, for the report's budget history."""
    t = inputs.train
    es = t.early_stopping
    return (f"at most {t.pendulum.max_steps or t.trainer.max_steps} steps, validation every {es.eval_every} steps, "
            f"patience {es.patience}, lr grid {', '.join(f'{x:g}' for x in t.lrs)}"
            + ("; one lr per configuration, chosen in a pilot on other seeds (validation loss)"
               if t.lr_per_config is not None else "; every lr run, the lr chosen per configuration on validation"))


def run(inputs: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every run on validation and test; compute the verdict metrics."""
    cap_threads(inputs.train.max_threads)
    tasks = load_tasks(paths.datasets)
    noisy = {"pendulum": perturbed_task(tasks["pendulum"])} if inputs.train.stability is not None else {}
    runs = read_parquet(paths.runs)
    validate_table(runs, f"{PAPER}.runs", runs_suite(len(runs)))
    by_id = runs.set_index("run_id")
    rows = []
    for spec in tqdm(run_grid(inputs.train), desc="evaluate runs"):
        if spec.run_id not in by_id.index:
            raise KeyError(f"run '{spec.run_id}' of the grid is missing from {paths.runs}; rerun train")
        row = by_id.loc[spec.run_id]
        rows.append({"run_id": spec.run_id, "config_id": spec.config_id, **spec.__dict__,
                     "n_params": int(row.n_params), "train_steps": int(row.steps), "best_step": int(row.best_step),
                     "step_cap": int(row.step_cap),
                     "best_val_loss": float(row.best_val_loss),
                     **evaluate_run(spec, row, noisy.get(spec.dataset, tasks[spec.dataset]) if spec.group == "perturbed"
                                   else tasks[spec.dataset], inputs, paths.models)})
    results = pd.DataFrame(rows)
    results["lr_chosen"] = choose_lr(results)
    validate_table(results, f"{PAPER}.results", results_suite(len(results)))
    write_parquet(results, paths.results)
    per_seed, chosen = verdict_metrics(results, inputs)
    write_json({"per_seed": per_seed, "chosen": chosen, "seeds": sorted(int(s) for s in results.seed_index.unique()),
                "long_horizon": max(inputs.train.pendulum.horizons), "lrs": list(inputs.train.lrs),
                "budget": budget_text(inputs),
                "fixed_lr": inputs.train.lr_per_config is not None,
                "processes": max(1, ctx.threads // inputs.train.max_threads),
                "n_cases": {name: {s: int(t.splits[s].values.shape[0]) for s in t.splits} for name, t in tasks.items()},
                "denots_field": inputs.train.denots_field, "description": describe(inputs),
                "score_floors": {"pendulum": inputs.evaluate.pendulum_score_floor,
                                 "vowels": inputs.evaluate.vowels_score_floor},
                "stability": stability_rows(results),
                "replicate": replicate_metrics(results, inputs),
                "tolerance_field": sweep.field if (sweep := inputs.train.pendulum.tolerance_sweep) else None},
               paths.evaluation)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
