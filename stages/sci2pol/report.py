"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.sci2pol.config import PAPER, ReportInputs, load_report
from stages.sci2pol.data import BENCH_TOPICS, QUALITY
from stages.sci2pol.io import SCORERS, VARIANTS, read_answers, read_losses, read_scores, read_task_scores
from stages.sci2pol.tasks import STAGES, TASKS, stage_scores

TIMED_STEPS = ("corpus", "agree", "bench")
CARD = PaperCard(
    paper=PAPER,
    title=("Sci2Pol-Bench and Sci2Pol-Corpus: evaluating and fine-tuning LLMs on policy brief generation "
           "from a scientific paper (ICLR 2026)"),
    claim=("Open-ended brief writing is scored reliably by an LLM judge with rubrics, which agrees with expert "
           "judgement where ROUGE and BERTScore fail to capture brief quality; and fine-tuning on a corpus curated "
           "by linking policy documents to the papers they cite, LLM-judge screening and in-context polishing "
           "improves models on the 18-task benchmark."),
    paper_result=("18 tasks in five stages, 13 LLMs evaluated; the LLM judge aligns with expert judgement while "
                  "BERTScore and ROUGE do not; the corpus funnel goes from 140,000 candidate pairs (5.6M policy "
                  "records) to 639 pairs (intermediate counts 1,407 and 1,011); fine-tuning improves every model "
                  "(LLaMA-3.1-8B 56.63 → 64.27, Gemma-27B 71.40 → 73.43), and fine-tuned Gemma-27B surpasses "
                  "GPT-4o and DeepSeek-V3."),
)
SCORER_LABELS = {"rubric": "rubric judge (ground truth; ceiling)", "lm": "LM judge (SmolLM2-135M)",
                 "rouge": "ROUGE-L vs gold brief", "bertscore": "BERTScore (MiniLM) vs gold brief"}
VARIANT_LABELS = {"none": "(c) no fine-tuning", "unfiltered": "(b) LoRA on unfiltered pairs",
                  "curated": "(a) LoRA on curated pairs"}
TASK_METRIC = {"choice": "macro F1 of the most likely option", "open": ""}
LOSS_WINDOW = 4  # LoRA steps averaged at the start and at the end of training


@dataclass(frozen=True)
class Paths(ReportPaths):
    funnel: Path = inp("funnel counts and purity (JSON)")
    correlations: Path = inp("judge correlations per seed (JSON)")
    judge_scores: Path = inp("every scorer's score of every candidate brief (Parquet)")
    bench_scores: Path = inp("task scores per variant and seed (Parquet)")
    answers: Path = inp("every benchmark item's answer (Parquet)")
    losses: Path = inp("LoRA training losses (Parquet)")


def verdict_metrics(correlations: dict[str, Any], overall: pd.DataFrame) -> dict[str, list[float]]:
    """Per seed: the LM judge's rho minus ROUGE-L's and BERTScore's; bench overall differences of the variants."""
    per = correlations["per_seed"]
    wide = overall.pivot(index="seed", columns="variant", values="overall").sort_index()
    return {"rho_lm_minus_rouge": [r["lm"] - r["rouge"] for r in per],
            "rho_lm_minus_bertscore": [r["lm"] - r["bertscore"] for r in per],
            "overall_curated_minus_unfiltered": (wide["curated"] - wide["unfiltered"]).tolist(),
            "overall_unfiltered_minus_none": (wide["unfiltered"] - wide["none"]).tolist()}


def open_metric(task: str, stage: str) -> str:
    """How an open task is scored, in words."""
    if stage == "summarization":
        return "summary rubric (clarity, accuracy, coverage; 1-5 → 0-100)"
    return "brief rubric on the gold brief with this section replaced (0-5 → 0-100)"


def plot_funnel(funnel: list[dict[str, Any]], path: Path) -> None:
    """Count after each funnel step (log scale)."""
    with figure(path, figsize=(6.4, 3.6)) as (_, ax):
        names, counts = [r["step"] for r in funnel], [r["count"] for r in funnel]
        ax.bar(names, counts, color="#4C72B0")
        for i, c in enumerate(counts):
            ax.text(i, c, str(c), ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("pairs (citations for the first bar)")
        ax.set_title("corpus funnel")


def plot_scores_by_kind(scores: pd.DataFrame, path: Path) -> None:
    """Mean score (0-5 scale) of each scorer for each kind of brief, kinds ordered by quality label."""
    kinds = sorted(QUALITY, key=lambda k: (-QUALITY[k], k))
    with figure(path, figsize=(7.5, 4.2)) as (_, ax):
        x = np.arange(len(kinds))
        ax.plot(x, [QUALITY[k] for k in kinds], "k--", lw=1, label="quality label")
        for s in SCORERS:
            means = scores.groupby("kind")[s].mean().reindex(kinds)
            ax.plot(x, means.to_numpy(), marker="o", label=SCORER_LABELS[s])
        ax.set_xticks(x, [k.replace("_", "\n") for k in kinds], fontsize=8)
        ax.set_ylabel("mean score (0-5 scale)")
        ax.legend(fontsize=7)


def plot_stages(stages: pd.DataFrame, path: Path) -> None:
    """Stage means and overall per variant (bars = mean over seeds, ticks = seeds)."""
    cols = [*[s for s in STAGES if s in stages.columns], "overall"]
    with figure(path, figsize=(8, 4)) as (_, ax):
        x = np.arange(len(cols))
        w = 0.8 / len(VARIANTS)
        for k, v in enumerate(VARIANTS):
            sub = stages[stages.variant == v]
            ax.bar(x + k * w, sub[cols].mean().to_numpy(), width=w, label=VARIANT_LABELS[v])
            for _, r in sub.iterrows():
                ax.plot(x + k * w, r[cols].to_numpy(dtype=float), "k_", ms=6)
        ax.set_xticks(x + w, cols, fontsize=8)
        ax.set_ylabel("score (0-100)")
        ax.set_ylim(0, 115)
        ax.legend(fontsize=8, loc="upper center", ncol=3)


def plot_losses(losses: pd.DataFrame, path: Path) -> None:
    """LoRA training loss per step, one line per (variant, seed)."""
    with figure(path, figsize=(6.4, 3.8)) as (_, ax):
        for (v, s), g in losses.groupby(["variant", "seed"]):
            ax.plot(g.step, g.loss, label=f"{v} seed {s}", color="#C44E52" if v == "curated" else "#8172B2",
                    alpha=0.8, ls="-" if s == losses.seed.min() else ":")
        ax.set_xlabel("LoRA step")
        ax.set_ylabel("training loss (brief tokens)")
        ax.legend(fontsize=7)


def task_rows(bench: pd.DataFrame) -> list[dict[str, Any]]:
    """The 18 tasks: stage, metric, and each variant's score ± std over seeds (mean bootstrap SE)."""
    rows = []
    for t in TASKS:
        row: dict[str, Any] = {"stage": t.stage, "task": t.name,
                               "metric": TASK_METRIC["choice"] if t.kind == "choice" else open_metric(t.name, t.stage)}
        for v in VARIANTS:
            sub = bench[(bench.task == t.name) & (bench.variant == v)].sort_values("seed")
            row[v] = f"{mean_std(sub.score.tolist(), 1)}, SE {sub.se.mean():.1f}"
        rows.append(row)
    return rows


def example_rows(answers: pd.DataFrame, n: int) -> list[dict[str, Any]]:
    """The first item of a few open tasks (first seed): every variant's answer and score."""
    open_tasks = [t.name for t in TASKS if t.kind == "open"][:n]
    seed = int(answers.seed.min())
    rows = []
    for task in open_tasks:
        for v in VARIANTS:
            r = answers[(answers.task == task) & (answers.variant == v) & (answers.seed == seed) & (answers.item == 0)]
            if len(r):
                text = str(r.answer.iloc[0]).replace("|", "/")
                rows.append({"task": task, "variant": v, "score": f"{r.item_score.iloc[0]:.0f}",
                             "answer": (text[:160] + "…") if len(text) > 160 else text})
    return rows


def finetune_effects(stages: pd.DataFrame, losses: pd.DataFrame) -> list[dict[str, Any]]:
    """Each fine-tuned variant's change from no fine-tuning per stage, and its training loss at start and end."""
    cols = [*STAGES, "overall"]
    base = stages[stages.variant == "none"][cols].mean()
    effects = []
    for v in ("curated", "unfiltered"):
        delta = stages[stages.variant == v][cols].mean() - base
        up = [c for c in STAGES if delta[c] > 0]
        down = [c for c in STAGES if delta[c] < 0]
        loss = losses[losses.variant == v].groupby("seed").loss
        first = loss.apply(lambda x: x.head(LOSS_WINDOW).mean()).mean()
        last = loss.apply(lambda x: x.tail(LOSS_WINDOW).mean()).mean()
        effects.append({"label": VARIANT_LABELS[v], "overall": delta["overall"],
                        "stages": {c: delta[c] for c in STAGES}, "up": up, "down": down,
                        "first": first, "last": last})
    return effects


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed numbers and write the report."""
    funnel = read_json(paths.funnel)
    corr = read_json(paths.correlations)
    jscores = read_scores(paths.judge_scores)
    bench = read_task_scores(paths.bench_scores)
    answers = read_answers(paths.answers)
    losses = read_losses(paths.losses)
    timings = read_timings(paths.timings, TIMED_STEPS)
    stages = stage_scores(bench)
    per_seed = verdict_metrics(corr, stages[["variant", "seed", "overall"]])
    rho = {s: [r[s] for r in corr["per_seed"]] for s in SCORERS}
    overall = {v: stages[stages.variant == v].sort_values("seed").overall.tolist() for v in VARIANTS}
    measured = {f"Spearman rho, {SCORER_LABELS[s]}": mean_std(rho[s], 3) for s in SCORERS}
    measured |= {f"bench overall, {VARIANT_LABELS[v]}": mean_std(overall[v], 2) for v in VARIANTS}
    measured |= {k: mean_std(v, 3) for k, v in per_seed.items()}
    counts = " → ".join(f"{r['count']:,}" for r in funnel["funnel"])
    measured["funnel (citations → link → screen → split → filter → polish)"] = counts
    seeds = sorted(int(s) for s in stages.seed.unique())
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=seeds, profile=ctx.profile, timings=timings,
                         measured=measured)

    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_funnel(funnel["funnel"], paths.plots / "funnel.png")
    plot_scores_by_kind(jscores, paths.plots / "scores_by_kind.png")
    plot_stages(stages, paths.plots / "bench_stages.png")
    plot_losses(losses, paths.plots / "lora_loss.png")

    funnel_rows = [{"step": r["step"], "count": r["count"]} for r in funnel["funnel"]]
    purity_rows = [{"set": k, "share of pairs that are a gold brief of the linked paper": v}
                   for k, v in funnel["purity"].items()]
    rho_rows = [{"scorer": SCORER_LABELS[s], "Spearman rho with the quality labels": mean_std(rho[s], 3),
                 "per seed": ", ".join(f"{x:.3f}" for x in rho[s])} for s in SCORERS]
    kinds = sorted(QUALITY, key=lambda k: (-QUALITY[k], k))
    by_kind = jscores.groupby("kind")[SCORERS].mean().reindex(kinds)
    kind_rows = [{"brief": k, "label": QUALITY[k], **{s: float(by_kind.loc[k, s]) for s in SCORERS}} for k in kinds]
    stage_rows = [{"variant": VARIANT_LABELS[v],
                   **{c: mean_std(stages[stages.variant == v].sort_values("seed")[c].tolist(), 1)
                      for c in [*STAGES, "overall"]}} for v in VARIANTS]
    loss_rows = [{"variant": v, "seed": int(s), f"first {LOSS_WINDOW} steps": float(g.loss.head(LOSS_WINDOW).mean()),
                  f"last {LOSS_WINDOW} steps": float(g.loss.tail(LOSS_WINDOW).mean())}
                 for (v, s), g in losses.groupby(["variant", "seed"])]
    lm_spread = jscores.groupby("kind").lm.mean()
    metrics = {"per_seed": per_seed, "funnel": funnel, "correlations": corr,
               "bench_stages": stages.to_dict(orient="records"), "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, cfg=cfg, funnel=funnel, n_pairs=funnel["funnel"][-1]["count"],
                 n_bench_topics=len(BENCH_TOPICS), n_tasks=len(TASKS),
                 briefs_per_paper=corr["n_briefs_per_seed"] // corr["n_papers"], loss_window=LOSS_WINDOW,
                 funnel_rows=funnel_rows, purity_rows=purity_rows, rho_rows=rho_rows, kind_rows=kind_rows,
                 lm_min=lm_spread.min(), lm_max=lm_spread.max(), task_rows=task_rows(bench), stage_rows=stage_rows,
                 effects=finetune_effects(stages, losses), loss_rows=loss_rows, examples=example_rows(answers, 6))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
