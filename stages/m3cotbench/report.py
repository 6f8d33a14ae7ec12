"""Step ``report``: the leaderboard, the four metric families per task, the verdict, report.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.gx import validate_table
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp
from stages.m3cotbench.config import PAPER, ReportInputs, load_report
from stages.m3cotbench.expectations import MODELS, scores_suite
from stages.m3cotbench.metrics import bootstrap_se, cot_impact, token_cost_ratio, useful_steps_per_token
from stages.m3cotbench.scene import TASKS

TIMED_STEPS = ("data", "train", "score")
CHAIN_MODELS = ["rule_based", "unfaithful", "cot", "cot_shuffled"]
CHANCE = {task: 1 / len(answers) for task, (_, answers) in TASKS.items()}
CARD = PaperCard(
    paper=PAPER,
    title=("M3CoTBench: a benchmark for chain-of-thought reasoning of multimodal models in medical image "
           "understanding (ICLR 2026; abstract in ../shared/seeds/iclr2026-abstracts.txt, issue 32)"),
    claim=("Scoring the reasoning path (step correctness against key steps, efficiency, impact of CoT, consistency "
           "of paths) separates faithful from unfaithful reasoning that answer equally well, and CoT impact is "
           "negative on tasks where verbalising loses visual detail (pre-registered here: the fine lesion-size "
           "grade)."),
    paper_result=("Current multimodal models often reach answers through unreliable, clinically uninterpretable "
                  "reasoning, and CoT does not always help (24 examination types, 13 tasks; abstract)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    scores: Path = inp("per-item scores")
    matcher: Path = inp("matcher threshold and pair accuracies")
    training: Path = inp("training losses and validation accuracies")


def per_seed_mean(scores: pd.DataFrame, model: str, column: str, n_seeds: int,
                  tasks: list[str] | None = None) -> list[float]:
    """Per seed, a column's mean over one model's items (macro over tasks: each task weighs the same)."""
    part = scores[scores.model == model]
    if tasks is not None:
        part = part[part.task.isin(tasks)]
    by = part.groupby(["seed_index", "task"])[column].mean().groupby("seed_index").mean()
    return [float(by.get(s, np.nan)) for s in range(n_seeds)]


def above_chance(scores: pd.DataFrame, model: str, n_seeds: int) -> list[float]:
    """Per seed, a model's accuracy minus chance, averaged over tasks."""
    part = scores[scores.model == model]
    by = part.groupby(["seed_index", "task"]).correct.mean().reset_index()
    by["gain"] = by.correct - by.task.map(CHANCE)
    means = by.groupby("seed_index").gain.mean()
    return [float(means.get(s, np.nan)) for s in range(n_seeds)]


def verdict_metrics(scores: pd.DataFrame, matcher: dict[str, Any], n_seeds: int,
                    cot_hurts_tasks: list[str]) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: gates (rule-based accuracy, trained models above chance, matcher accuracy,
    matched answers) and claims (F1 and consistency gaps at matched accuracy, CoT impact on the pre-registered
    tasks)."""
    acc = {m: np.array(per_seed_mean(scores, m, "correct", n_seeds)) for m in MODELS}
    f1 = {m: np.array(per_seed_mean(scores, m, "f1", n_seeds)) for m in CHAIN_MODELS}
    cons = {m: np.array(per_seed_mean(scores, m, "consistency", n_seeds)) for m in ("rule_based", "unfaithful")}
    hurt = [cot_impact(c, d) for c, d in zip(per_seed_mean(scores, "cot", "correct", n_seeds, cot_hurts_tasks),
                                             per_seed_mean(scores, "direct", "correct", n_seeds, cot_hurts_tasks),
                                             strict=True)]
    return {"rule_based_accuracy": acc["rule_based"].tolist(),
            "trained_min_gain_over_chance": np.minimum(above_chance(scores, "direct", n_seeds),
                                                       above_chance(scores, "cot", n_seeds)).tolist(),
            "matcher_test_accuracy": [matcher["test_accuracy"]] * n_seeds,
            "accuracy_gap_faithful_unfaithful": np.abs(acc["rule_based"] - acc["unfaithful"]).tolist(),
            "f1_faithful_minus_unfaithful": (f1["rule_based"] - f1["unfaithful"]).tolist(),
            "f1_cot_minus_cot_shuffled": (f1["cot"] - f1["cot_shuffled"]).tolist(),
            "consistency_faithful_minus_unfaithful": (cons["rule_based"] - cons["unfaithful"]).tolist(),
            "cot_impact_on_preregistered_tasks": hurt}


def family_table(scores: pd.DataFrame, n_seeds: int, n_boot: int, seed: int) -> list[dict[str, Any]]:
    """The leaderboard: per model, accuracy, step P/R/F1, useful steps per 100 tokens, tokens, consistency
    (mean ± std over seeds, macro over tasks), and the bootstrap SE of F1 over items (seed 0)."""
    rows = []
    for m in MODELS:
        part = scores[scores.model == m]
        eff = [100 * useful_steps_per_token(part[part.seed_index == s].n_matched, part[part.seed_index == s].tokens)
               for s in range(n_seeds)]
        f1_items = part[part.seed_index == 0].f1.to_numpy()
        rows.append({"model": m, "accuracy": mean_std(per_seed_mean(scores, m, "correct", n_seeds)),
                     "step precision": mean_std(per_seed_mean(scores, m, "precision", n_seeds)),
                     "step recall": mean_std(per_seed_mean(scores, m, "recall", n_seeds)),
                     "step F1": mean_std(per_seed_mean(scores, m, "f1", n_seeds)),
                     "F1 bootstrap SE (seed 0)": f"{bootstrap_se(f1_items, n_boot, rng(seed, PAPER, 'boot', m)):.4f}",
                     "useful steps / 100 tokens": mean_std(eff),
                     "tokens": mean_std(per_seed_mean(scores, m, "tokens", n_seeds), 1),
                     "consistency (LCS)": mean_std(per_seed_mean(scores, m, "consistency", n_seeds))})
    return rows


def task_rows(scores: pd.DataFrame, n_seeds: int, n_boot: int, seed: int,
              cot_hurts_tasks: list[str]) -> list[dict[str, Any]]:
    """Per task: direct and CoT accuracy, impact (mean ± std over seeds, and bootstrap SE over items on seed
    0), CoT step F1, token cost ratio CoT / direct."""
    rows = []
    for task in TASKS:
        t = scores[scores.task == task]
        d = [t[(t.model == "direct") & (t.seed_index == s)].correct.mean() for s in range(n_seeds)]
        c = [t[(t.model == "cot") & (t.seed_index == s)].correct.mean() for s in range(n_seeds)]
        diff = (t[(t.model == "cot") & (t.seed_index == 0)].sort_values("scan").correct.to_numpy()
                - t[(t.model == "direct") & (t.seed_index == 0)].sort_values("scan").correct.to_numpy())
        ratio = [token_cost_ratio(t[(t.model == "cot") & (t.seed_index == s)].tokens,
                                  t[(t.model == "direct") & (t.seed_index == s)].tokens) for s in range(n_seeds)]
        rows.append({"task": task + (" (pre-registered: CoT hurts)" if task in cot_hurts_tasks else ""),
                     "chance": f"{CHANCE[task]:.3f}", "direct accuracy": mean_std(d), "CoT accuracy": mean_std(c),
                     "impact": mean_std([cot_impact(a, b) for a, b in zip(c, d, strict=True)]),
                     "impact SE (seed 0)": f"{bootstrap_se(diff, n_boot, rng(seed, PAPER, 'boot', task)):.4f}",
                     "CoT step F1": mean_std([t[(t.model == "cot") & (t.seed_index == s)].f1.mean()
                                              for s in range(n_seeds)]),
                     "tokens CoT / direct": mean_std(ratio, 2)})
    return rows


def level_rows(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Accuracy and step F1 by difficulty level (contrast), per trained model, over every seed."""
    rows = []
    for m in ("direct", "cot"):
        part = scores[scores.model == m]
        for level, g in part.groupby("level"):
            rows.append({"model": m, "level": int(level), "accuracy": f"{g.correct.mean():.3f}",
                         "step F1": f"{g.f1.mean():.3f}" if m == "cot" else "–"})
    return rows


def plot_separation(scores: pd.DataFrame, path: Path) -> None:
    """Accuracy vs step F1 per model and seed: equal accuracy, different F1 is what the metrics must show."""
    with figure(path, figsize=(6, 4)) as (_, ax):
        for j, m in enumerate(MODELS):
            g = scores[scores.model == m].groupby("seed_index")[["correct", "f1"]].mean()
            ax.scatter(g.correct, g.f1, color=f"C{j}", label=m)
        ax.set_xlabel("answer accuracy")
        ax.set_ylabel("step F1")
        ax.legend(fontsize=7)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict and write the report."""
    scores = read_parquet(paths.scores)
    validate_table(scores, f"{PAPER}.scores", scores_suite(len(scores)))
    matcher = read_json(paths.matcher)
    training = read_json(paths.training)
    n_seeds = int(scores.seed_index.max()) + 1
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(scores, matcher, n_seeds, cfg.cot_hurts_tasks)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    n_boot = cfg.n_boot
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_separation(scores, paths.plots / "accuracy_vs_f1.png")
    acc = {m: float(np.mean(per_seed_mean(scores, m, "correct", n_seeds))) for m in MODELS}
    f1 = {m: float(np.mean(per_seed_mean(scores, m, "f1", n_seeds))) for m in MODELS}
    cons = {m: float(np.mean(per_seed_mean(scores, m, "consistency", n_seeds))) for m in MODELS}
    impact = {t: [cot_impact(c, d) for c, d in zip(per_seed_mean(scores, "cot", "correct", n_seeds, [t]),
                                                   per_seed_mean(scores, "direct", "correct", n_seeds, [t]),
                                                   strict=True)] for t in TASKS}
    train_rows = [{"seed": t["seed_index"], "model": t["model"], "final loss": f"{t['loss'][-1]:.4f}",
                   "validation accuracy": f"{t['val_accuracy']:.3f}"} for t in training]
    metrics = {"per_seed": per_seed, "accuracy": acc, "step_f1": f1, "consistency": cons, "impact": impact,
               "matcher": {k: matcher[k] for k in ("threshold", "val_accuracy", "test_accuracy")},
               "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, n_seeds=n_seeds, acc=acc, f1=f1, cons=cons, impact=impact,
                 matcher=matcher, n_items=int((scores.model == "cot").sum() // n_seeds),
                 n_scans=int(scores.scan.nunique()), tasks=list(TASKS), chance=CHANCE,
                 leaderboard=family_table(scores, n_seeds, n_boot, ctx.seed),
                 task_rows=task_rows(scores, n_seeds, n_boot, ctx.seed, cfg.cot_hurts_tasks),
                 level_rows=level_rows(scores), train_rows=train_rows, gates=cfg.gates,
                 epochs=len(training[0]["loss"]),
                 cot_hurts_tasks=cfg.cot_hurts_tasks, n_boot=n_boot,
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
