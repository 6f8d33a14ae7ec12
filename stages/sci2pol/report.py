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
from stages.core.verdict import ClaimRecord, verdict_of
from stages.sci2pol.config import PAPER, ReportInputs, load_report
from stages.sci2pol.data import BENCH_TOPICS, QUALITY
from stages.sci2pol.io import SCORERS, VARIANTS, read_answers, read_losses, read_runs, read_scores, read_task_scores
from stages.sci2pol.tasks import STAGES, TASKS, paired_overall_difference, stage_scores

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
BACKEND_LABELS = {"smollm2": "SmolLM2-135M-Instruct", "gemma3": "Gemma-3-270M (base model)"}
VARIANT_LABELS = {"none": "(c) no fine-tuning", "unfiltered": "(b) LoRA on unfiltered pairs",
                  "curated": "(a) LoRA on curated pairs"}
TASK_METRIC = {"choice": "macro F1 of the most likely option",
               "open": "answer alone: section content × form factor (0-100)"}


@dataclass(frozen=True)
class Paths(ReportPaths):
    funnel: Path = inp("funnel counts and purity (JSON)")
    correlations: Path = inp("judge correlations and AUCs per seed, backend choice (JSON)")
    judge_scores: Path = inp("every scorer's score of every candidate brief (Parquet)")
    bench_scores: Path = inp("task scores per variant and seed (Parquet)")
    answers: Path = inp("every benchmark item's answer (Parquet)")
    losses: Path = inp("LoRA training and held-out losses (Parquet)")
    runs: Path = inp("LoRA runs: learning rate, step kept, held-out loss (Parquet)")


def scorer_labels(backend: str) -> dict[str, str]:
    """Row labels of the scorers, naming the LM judge's backend."""
    return {"rubric": "rubric judge with ground truth (labelled ceiling, not under test)",
            "lm": f"LM judge under test ({BACKEND_LABELS[backend]})",
            "rouge": "ROUGE-L vs a reference gold brief", "bertscore": "BERTScore (MiniLM) vs a reference gold brief"}


def num(x: float | None) -> float:
    """A JSON number, NaN for null (a constant scorer has no rank correlation)."""
    return float("nan") if x is None else float(x)


def verdict_metrics(correlations: dict[str, Any], overall: pd.DataFrame, answers: pd.DataFrame,
                    n_bootstrap: int, bootstrap_seed: int) -> dict[str, list[float]]:
    """Per seed: the LM judge's gate AUC and its rho minus ROUGE-L's and BERTScore's; bench overall of the
    curated adapters minus the unfiltered ones (same seed) and minus the base model (scored once), each with
    the 5% quantile of its paired bootstrap over items (``_lo``)."""
    per = correlations["per_seed"]
    wide = overall[overall.variant != "none"].pivot(index="seed", columns="variant", values="overall").sort_index()
    base = float(overall[overall.variant == "none"].overall.iloc[0])
    none = answers[answers.variant == "none"]
    lo: dict[str, list[float]] = {"overall_curated_minus_unfiltered_lo": [], "overall_curated_minus_none_lo": []}
    for seed in wide.index:
        cur = answers[(answers.variant == "curated") & (answers.seed == seed)]
        unf = answers[(answers.variant == "unfiltered") & (answers.seed == seed)]
        lo["overall_curated_minus_unfiltered_lo"].append(
            paired_overall_difference(cur, unf, n_bootstrap, bootstrap_seed)[1])
        lo["overall_curated_minus_none_lo"].append(paired_overall_difference(cur, none, n_bootstrap, bootstrap_seed)[1])
    return {"auc_lm_gold_vs_off_topic": [num(r["auc_lm"]) for r in per],
            "rho_lm_minus_rouge": [num(r["lm"]) - num(r["rouge"]) for r in per],
            "rho_lm_minus_bertscore": [num(r["lm"]) - num(r["bertscore"]) for r in per],
            "overall_curated_minus_unfiltered": (wide["curated"] - wide["unfiltered"]).tolist(),
            "overall_curated_minus_none": (wide["curated"] - base).tolist(), **lo}


def gate_checks(claim: ClaimRecord, gate: str, gated: list[str]) -> ClaimRecord:
    """The competence gate: unless the gate check holds, the gated checks are unclear (inconclusive, their
    values kept); the verdict comes from the non-gate checks by the usual rule (all hold: reproduced, all
    fail: not_reproduced, some hold: partly, otherwise inconclusive)."""
    status = {o.name: o.status for o in claim.checks}
    open_ = status[gate] == "holds"
    checks = [o if open_ or o.name not in gated else o.model_copy(update={"status": "unclear"}) for o in claim.checks]
    verdict = verdict_of([o.status for o in checks if o.name != gate])
    rule = (f"{claim.verdict_rule}; '{gate}' is the LM judge's competence gate, not a claim: unless it holds, "
            f"{gated} are unclear (inconclusive); the verdict comes from the other checks")
    return claim.model_copy(update={"verdict": verdict, "checks": checks, "verdict_rule": rule})


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


def plot_scores_by_kind(scores: pd.DataFrame, labels: dict[str, str], path: Path) -> None:
    """Mean score (0-5 scale) of each scorer for each kind of brief, kinds ordered by quality label."""
    kinds = sorted(QUALITY, key=lambda k: (-QUALITY[k], k))
    with figure(path, figsize=(7.5, 4.2)) as (_, ax):
        x = np.arange(len(kinds))
        ax.plot(x, [QUALITY[k] for k in kinds], "k--", lw=1, label="quality label")
        for s in SCORERS:
            means = scores.groupby("kind")[s].mean().reindex(kinds)
            ax.plot(x, means.to_numpy(), marker="o", label=labels[s])
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
    """Held-out brief loss per evaluation of every LoRA run (one line per set, seed and learning rate)."""
    val = losses[losses.split == "val"]
    with figure(path, figsize=(6.4, 3.8)) as (_, ax):
        for (v, s, lr), g in val.groupby(["variant", "seed", "lr"]):
            ax.plot(g.step, g.loss, label=f"{v} seed {s} lr {lr:g}", color="#C44E52" if v == "curated" else "#8172B2",
                    alpha=0.8, ls="-" if s == val.seed.min() else ":", marker=".")
        ax.set_xlabel("LoRA step")
        ax.set_ylabel("held-out brief loss")
        ax.legend(fontsize=6)


def task_rows(bench: pd.DataFrame) -> list[dict[str, Any]]:
    """The 18 tasks: stage, metric, the base model's score and each fine-tuned set's score ± std over seeds."""
    rows = []
    for t in [t for t in TASKS if t.name in set(bench.task)]:
        row: dict[str, Any] = {"stage": t.stage, "task": t.name, "metric": TASK_METRIC[t.kind]}
        for v in VARIANTS:
            sub = bench[(bench.task == t.name) & (bench.variant == v)].sort_values("seed")
            row[v] = (f"{sub.score.iloc[0]:.1f}, SE {sub.se.iloc[0]:.1f}" if v == "none"
                      else f"{mean_std(sub.score.tolist(), 1)}, SE {sub.se.mean():.1f}")
        rows.append(row)
    return rows


def example_rows(answers: pd.DataFrame, n_items: int = 2) -> list[dict[str, Any]]:
    """The first items of each open task: the base model's and the first seed's fine-tuned answers."""
    open_tasks = [t.name for t in TASKS if t.kind == "open" and t.name in set(answers.task)]
    seed = int(answers[answers.variant != "none"].seed.min()) if (answers.variant != "none").any() else 0
    rows = []
    for task in open_tasks:
        for item in range(n_items):
            for v in VARIANTS:
                r = answers[(answers.task == task) & (answers.variant == v) & (answers.item == item)
                            & ((answers.seed == seed) | (answers.variant == "none"))]
                if len(r):
                    text = str(r.answer.iloc[0]).replace("|", "/")
                    rows.append({"task": task, "item": item, "variant": v, "score": f"{r.item_score.iloc[0]:.0f}",
                                 "answer": (text[:150] + "…") if len(text) > 150 else text})
    return rows


TIE = 1e-9  # stage means that differ by float rounding only are unchanged


def finetune_effects(stages: pd.DataFrame) -> list[dict[str, Any]]:
    """Each fine-tuned set's change from the base model per stage (means over seeds)."""
    cols = [*STAGES, "overall"]
    base = stages[stages.variant == "none"][cols].mean()
    effects = []
    for v in ("curated", "unfiltered"):
        delta = stages[stages.variant == v][cols].mean() - base
        effects.append({"label": VARIANT_LABELS[v], "overall": delta["overall"],
                        "stages": {c: 0.0 if abs(delta[c]) <= TIE else delta[c] for c in STAGES},
                        "up": [c for c in STAGES if delta[c] > TIE], "down": [c for c in STAGES if delta[c] < -TIE]})
    return effects


def fit_summary(runs: pd.DataFrame, max_steps: int, lr_grid: list[float]) -> dict[str, Any]:
    """How the recipe's choices fell: runs stopped early, runs whose best held-out loss was their last evaluation,
    and whether a chosen learning rate sits at the grid's upper edge."""
    chosen = sorted({float(x) for x in runs[runs.used].lr})
    return {"n_runs": len(runs), "n_stopped": int((runs.steps_run < max_steps).sum()),
            "n_last": int((runs.best_step == runs.steps_run).sum()), "chosen": [f"{x:g}" for x in chosen],
            "at_edge": max(chosen) >= max(lr_grid)}


def run_rows(runs: pd.DataFrame, losses: pd.DataFrame) -> list[dict[str, Any]]:
    """Every LoRA run: set, seed, learning rate, held-out loss before training and at the step kept."""
    val = losses[losses.split == "val"]
    rows = []
    for r in runs.sort_values(["variant", "seed", "lr"]).itertuples():
        v0 = val[(val.variant == r.variant) & (val.seed == r.seed) & (val.lr == r.lr) & (val.step == 0)].loss
        rows.append({"set": r.variant, "seed": int(r.seed), "lr": f"{r.lr:g}",
                     "training examples": int(r.n_train), "steps run": int(r.steps_run),
                     "step kept": int(r.best_step), "held-out loss at step 0": float(v0.iloc[0]) if len(v0) else None,
                     "held-out loss kept": float(r.best_val), "used": "yes" if r.used else "no"})
    return rows


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed numbers and write the report."""
    funnel = read_json(paths.funnel)
    corr = read_json(paths.correlations)
    jscores = read_scores(paths.judge_scores)
    bench = read_task_scores(paths.bench_scores)
    answers = read_answers(paths.answers)
    losses = read_losses(paths.losses)
    runs = read_runs(paths.runs)
    timings = read_timings(paths.timings, TIMED_STEPS)
    labels = scorer_labels(corr["backend"])
    stages = stage_scores(bench)
    per_seed = verdict_metrics(corr, stages[["variant", "seed", "overall"]], answers, cfg.bench.n_bootstrap,
                               cfg.bench.bootstrap_seed)
    rho = {s: [num(r[s]) for r in corr["per_seed"]] for s in SCORERS}
    aucs = {s: [num(r[f"auc_{s}"]) for r in corr["per_seed"]] for s in SCORERS}
    overall = {v: stages[stages.variant == v].sort_values("seed").overall.tolist() for v in VARIANTS}
    measured = {f"Spearman rho, {labels[s]}": mean_std(rho[s], 3) for s in SCORERS}
    measured |= {f"gold vs off-topic AUC, {labels[s]}": mean_std(aucs[s], 3) for s in SCORERS}
    measured |= {f"bench overall, {VARIANT_LABELS[v]}": mean_std(overall[v], 2) for v in VARIANTS}
    measured |= {k: mean_std(v, 3) for k, v in per_seed.items()}
    measured["funnel (citations → link → screen → split → filter → polish)"] = \
        " → ".join(f"{r['count']:,}" for r in funnel["funnel"])
    seeds = sorted(int(s) for s in stages[stages.variant != "none"].seed.unique())
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=seeds, profile=ctx.profile, timings=timings,
                         measured=measured)
    claim = gate_checks(claim, cfg.report.gate, cfg.report.gated)

    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_funnel(funnel["funnel"], paths.plots / "funnel.png")
    plot_scores_by_kind(jscores, labels, paths.plots / "scores_by_kind.png")
    plot_stages(stages, paths.plots / "bench_stages.png")
    plot_losses(losses, paths.plots / "lora_loss.png")

    kinds = sorted(QUALITY, key=lambda k: (-QUALITY[k], k))
    by_kind = jscores.groupby("kind")[SCORERS].mean().reindex(kinds)
    gate_open = next(o.status for o in claim.checks if o.name == cfg.report.gate) == "holds"
    metrics = {"per_seed": per_seed, "funnel": funnel, "correlations": corr,
               "bench_stages": stages.to_dict(orient="records"), "verdict": claim.verdict}
    write_report(
        paths, claim, metrics, timings, cfg=cfg, funnel=funnel, n_pairs=funnel["funnel"][-1]["count"],
        n_bench_topics=len(BENCH_TOPICS), n_tasks=len(set(bench.task)),
        tasks_not_run=[t.name for t in TASKS if t.name not in set(bench.task)], backend=BACKEND_LABELS[corr["backend"]],
        briefs_per_paper=corr["n_briefs_per_seed"] // corr["n_papers"], gate_open=gate_open,
        funnel_rows=[{"step": r["step"], "count": r["count"]} for r in funnel["funnel"]],
        purity_rows=[{"set": k, "share of pairs that are a gold brief of the linked paper": v}
                     for k, v in funnel["purity"].items()],
        val_rows=[{"backend": BACKEND_LABELS[r["backend"]], "gold vs off-topic AUC": r["auc_gold_vs_off_topic"],
                   "Spearman rho": r["rho"]} for r in corr["validation"]],
        rho_rows=[{"scorer": labels[s], "Spearman rho with the labels": mean_std(rho[s], 3),
                   "gold vs off-topic AUC": mean_std(aucs[s], 3),
                   "rho per seed": ", ".join(f"{x:.3f}" for x in rho[s])} for s in SCORERS],
        kind_rows=[{"brief": k, "label": QUALITY[k], **{s: float(by_kind.loc[k, s]) for s in SCORERS}}
                   for k in kinds],
        task_rows=task_rows(bench),
        stage_rows=[{"variant": VARIANT_LABELS[v],
                     **{c: mean_std(stages[stages.variant == v].sort_values("seed")[c].tolist(), 1)
                        for c in [*STAGES, "overall"]}} for v in VARIANTS],
        effects=finetune_effects(stages), run_rows=run_rows(runs, losses), examples=example_rows(answers),
        fits=fit_summary(runs, cfg.finetune.max_steps, cfg.finetune.lr_grid))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
