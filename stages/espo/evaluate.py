"""Step ``evaluate``: held-out success of the warm start and every RL run; collapse and stall of each run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.io import read_json, read_parquet, write_json
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.espo.config import PAPER, EvaluateConfig, ModelConfig, load_evaluate
from stages.espo.diffusion import load_policy, success_and_reward
from stages.espo.expectations import RL_LOG_COLUMNS
from stages.espo.io import Examples, read_tables, task_examples

MAIN = ("d1", "token_elbo", "espo")
DIAGNOSTICS = ("clip_fraction", "log_ratio_std", "log_ratio_max", "kl")


@dataclass(frozen=True)
class Paths:
    sudoku: Path = inp("Sudoku table")
    countdown: Path = inp("Countdown table")
    warmstart: Path = inp("warm-start weights and manifest")
    rl_models: Path = inp("RL weights and manifest")
    rl_log: Path = inp("RL training log")
    evaluation: Path = out("metrics per run, per task, per seed (JSON)")


def start_and_end_reward(rewards: np.ndarray, tail_fraction: float) -> tuple[float, float]:
    """Mean training reward over the first and over the last ``tail_fraction`` of iterations."""
    k = max(1, round(len(rewards) * tail_fraction))
    return float(rewards[:k].mean()), float(rewards[-k:].mean())


def sampled_metrics(model: torch.nn.Module, ex: Examples, cfg: EvaluateConfig, seed: int) -> dict[str, float]:
    """Success and reward under the RL sampling temperature, over n_samples draws (same draws for every model)."""
    gen = torch.Generator().manual_seed(derive_seed(seed, PAPER, "evaluate", ex.task))
    draws = [success_and_reward(model, ex, cfg.sampler_steps, temperature=cfg.sample_temperature, gen=gen)
             for _ in range(cfg.n_samples)]
    return {"test_sampled_success": float(np.mean([d[0] for d in draws])),
            "test_sampled_reward": float(np.mean([d[1] for d in draws]))}


def is_collapsed(start: float, end: float, fraction: float) -> bool:
    """Collapse: the last-tail mean reward is below ``fraction`` of the starting reward."""
    return end < fraction * start


def paired_differences(runs: pd.DataFrame, task: str, a: str, b: str, metric: str) -> list[float]:
    """metric(a) − metric(b) per seed index present for both variants on ``task``."""
    t = runs[runs.task == task].set_index(["variant", "seed_index"])[metric]
    seeds = sorted(set(t.loc[a].index) & set(t.loc[b].index)) if a in t.index and b in t.index else []
    return [float(t.loc[(a, s)] - t.loc[(b, s)]) for s in seeds]


def run_means(log: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    """Per run: the mean over iterations of each training diagnostic (clip fraction, ratio spread, KL)."""
    return log.groupby("run")[list(columns)].mean()


def per_seed_metrics(runs: pd.DataFrame, warm: dict[str, dict[str, float]]) -> dict[str, list[float]]:
    """The verdict's per-seed metrics (Sudoku test success; differences paired by RL seed) and its positive controls.

    Positive controls: the best of the three objectives beats the warm start (RL can move held-out
    success at this budget), and the token-level ELBO ratios leave 1 (mean clip fraction), so the
    comparison is not between two objectives with the same gradient.
    """
    sud = runs[runs.task == "sudoku"]
    w = warm["sudoku"]["test_success"]
    espo = sud[sud.variant == "espo"].sort_values("seed_index").test_success.to_numpy()
    main = sud[sud.variant.isin(MAIN)]
    complete = main.groupby("seed_index").variant.nunique() == len(MAIN)
    best = main[main.seed_index.isin(complete[complete].index)].groupby("seed_index").test_success.max()
    token = sud[sud.variant == "token_elbo"].sort_values("seed_index")
    metrics = {
        "sudoku_espo_minus_d1_success": paired_differences(runs, "sudoku", "espo", "d1", "test_success"),
        "sudoku_espo_minus_token_elbo_success": paired_differences(runs, "sudoku", "espo", "token_elbo",
                                                                  "test_success"),
        "sudoku_espo_minus_warmstart_success": [float(v - w) for v in espo],
        "sudoku_best_minus_warmstart_success": [float(v - w) for v in best.sort_index()],
        "sudoku_token_elbo_clip_fraction": token.mean_clip_fraction.tolist(),
    }
    for variant in MAIN:
        metrics[f"sudoku_{variant}_success"] = sud[sud.variant == variant].sort_values(
            "seed_index").test_success.tolist()
    return metrics


def run(cfg: EvaluateConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Greedy decoding on the test split for every model; training-curve diagnostics per run."""
    cap_threads(cfg.max_threads)
    tables = read_tables(paths)
    ws_manifest = read_json(Path(paths.warmstart) / "manifest.json")
    rl_manifest = read_json(Path(paths.rl_models) / "manifest.json")
    spec = ModelConfig(**ws_manifest["model"])
    log = read_parquet(paths.rl_log, columns=RL_LOG_COLUMNS)
    means = run_means(log, DIAGNOSTICS)
    tasks = sorted({r["task"] for r in rl_manifest["runs"]})
    tests = {t: task_examples(tables, t, "test") for t in tasks}
    warm = {}
    for t in tasks:
        model = load_policy(Path(paths.warmstart), t, spec, ws_manifest["tasks"][t]["max_len"]).eval()
        success, reward = success_and_reward(model, tests[t], cfg.sampler_steps)
        warm[t] = {"test_success": success, "test_reward": reward, **sampled_metrics(model, tests[t], cfg, ctx.seed),
                   **{k: v for k, v in ws_manifest["tasks"][t].items() if k != "val_curve"}}
    rows = []
    for r in tqdm(rl_manifest["runs"], desc="evaluate", unit="run"):
        max_len = ws_manifest["tasks"][r["task"]]["max_len"]
        model = load_policy(Path(paths.rl_models), r["run"], spec, max_len).eval()
        success, reward = success_and_reward(model, tests[r["task"]], cfg.sampler_steps)
        curve = log[log.run == r["run"]].sort_values("iteration").reward.to_numpy()
        start, end = start_and_end_reward(curve, cfg.tail_fraction)
        diag = means.loc[r["run"]]
        rows.append({**r, "test_success": success, "test_reward": reward,
                     **{f"mean_{k}": float(diag[k]) for k in DIAGNOSTICS},
                     **sampled_metrics(model, tests[r["task"]], cfg, ctx.seed), "train_start_reward": start,
                     "train_end_reward": end, "collapsed": is_collapsed(start, end, cfg.collapse_fraction),
                     "stalled": end - start < cfg.stall_gain})
    runs = pd.DataFrame(rows)
    per_seed = per_seed_metrics(runs, warm)
    write_json({"warmstart": warm, "runs": rows, "per_seed": per_seed, "n_test": {t: len(e) for t, e in tests.items()},
                "seeds": sorted(runs[(runs.task == "sudoku") & (runs.variant == "espo")].seed_index.tolist()),
                "collapse_fraction": cfg.collapse_fraction, "tail_fraction": cfg.tail_fraction,
                "stall_gain": cfg.stall_gain}, paths.evaluation)
    return {k: float(np.mean(v)) if v else float("nan") for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
