"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json, read_parquet
from stages.core.report import (
    PaperCard,
    ReportPaths,
    band,
    decide_claim,
    figure,
    mean_std,
    read_timings,
    write_report,
)
from stages.core.stage import StageContext, Step, inp
from stages.text2grad.config import PAPER, ReportInputs, load_report
from stages.text2grad.critic import MAX_SPANS, parse_scores

TIMED_STEPS = ("data", "reward_model", "sft", "ppo")
CARD = PaperCard(
    paper=PAPER,
    title=("Text2Grad: Reinforcement Learning from Natural Language Feedback "
           "(Wang et al., ICLR 2026; arXiv 2505.22338)"),
    claim=("Turning a natural-language critique into span-level rewards (a reward model that writes the critique "
           "and then scores each word, mapped to token rewards for PPO) optimises a policy better than PPO with one "
           "scalar reward per output; labelling most tokens densely, or dropping the critique from the reward "
           "model, loses part of that gain."),
    paper_result=("Llama-3.1-8B policies: SLF5K summarisation ROUGE-L 0.262 with scalar-reward PPO vs 0.291 with "
                  "Text2Grad; KodCode pass@1 62.5 vs 66.1; dense labelling of most tokens drops ROUGE-L to 0.196; "
                  "a reward model without the critique is also worse than Text2Grad."),
)
LABELS = {"scalar": "(a) scalar PPO", "text2grad": "(b) Text2Grad", "dense": "(c) dense labels",
          "no_critique": "(d) no-critique RM"}


@dataclass(frozen=True)
class Paths(ReportPaths):
    curves: Path = inp("PPO test curves")
    rm_evaluation: Path = inp("reward-model span F1")
    rm_examples: Path = inp("reward-model predictions on held-out outputs")


def steps_to_target(curve: pd.DataFrame, target: float) -> float:
    """First evaluated PPO step whose test ROUGE-L reaches ``target`` (inf if none)."""
    hit = curve[curve.rouge_l >= target].step
    return float(hit.min()) if len(hit) else math.inf


def summarise(curves: pd.DataFrame, target: float) -> tuple[dict[str, dict[str, list[float]]], list[int]]:
    """Per scheme: final ROUGE-L, fact F1, KL and steps-to-target, one value per seed (seed order)."""
    last = int(curves.step.max())
    seeds = sorted(int(s) for s in curves.seed.unique())
    out: dict[str, dict[str, list[float]]] = {}
    for scheme, g in curves.groupby("scheme", sort=False):
        fin = g[g.step == last].set_index("seed").loc[seeds]
        out[str(scheme)] = {"rouge_l": fin.rouge_l.tolist(), "fact_f1": fin.fact_f1.tolist(), "kl": fin.kl.tolist(),
                            "length": fin.length.tolist(),
                            "steps_to_target": [steps_to_target(g[g.seed == s], target) for s in seeds]}
    return out, seeds


def verdict_metrics(final: dict[str, dict[str, list[float]]]) -> dict[str, list[float]]:
    """Per-seed differences of final test ROUGE-L: Text2Grad minus each other scheme."""
    base = np.asarray(final["text2grad"]["rouge_l"])
    return {f"rouge_text2grad_minus_{k}": (base - np.asarray(v["rouge_l"])).tolist()
            for k, v in final.items() if k != "text2grad"}


def plot_curves(curves: pd.DataFrame, path: Path, metric: str, ylabel: str, target: float | None = None) -> None:
    """A test metric vs PPO step: schemes as lines, seeds as bands."""
    with figure(path, figsize=(7, 4.2)) as (_, ax):
        for scheme, g in curves.groupby("scheme", sort=False):
            runs = np.stack([r.sort_values("step")[metric].to_numpy() for _, r in g.groupby("seed")])
            band(ax, np.sort(g.step.unique()), runs, LABELS.get(str(scheme), str(scheme)))
        if target is not None:
            ax.axhline(target, color="grey", ls=":", lw=1, label=f"target {target:g}")
        ax.set_xlabel("PPO step")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)


def plot_span_f1(rm: dict[str, Any], path: Path) -> None:
    """Word-level F1 of the good and poor labels for the two reward models."""
    names = ["critique", "no_critique"]
    with figure(path, figsize=(5.5, 3.6)) as (_, ax):
        for k, label in enumerate(["good", "poor"]):
            ax.bar(np.arange(2) + 0.38 * k, [rm[n][label]["f1"] for n in names], width=0.36, label=f"{label} spans")
        ax.set_xticks(np.arange(2) + 0.19, ["with critique", "without critique"])
        ax.set_ylim(0, 1)
        ax.set_ylabel("word-level F1 (held-out outputs)")
        ax.legend(fontsize=8)


def highlight(output: str, scores: list[int]) -> str:
    """Markdown: good words in bold, poor words struck through."""
    marks = {1: "**{}**", -1: "~~{}~~", 0: "{}"}
    return " ".join(marks[s].format(w) for w, s in zip(output.split(), scores, strict=False))


def example_rows(examples: pd.DataFrame, n: int) -> list[dict[str, str]]:
    """Held-out outputs with the annotated and the predicted critique and spans."""
    crit = examples[examples.model == "critique"].sort_values("id")
    picked = crit[crit.critique.str.contains("unconfirmed|invented|repeated")].head(n)
    return [{"source": r.source, "annotated": highlight(r.output, parse_scores(r.gold_scores)),
             "critique": r.critique, "predicted": highlight(r.output, parse_scores(r.predicted_scores)),
             "predicted_critique": r.predicted_critique} for r in picked.itertuples()]


def above_start(final: dict[str, dict[str, list[float]]], start: float) -> list[str]:
    """The schemes that end above the warm start's ROUGE-L (mean over seeds)."""
    return [LABELS.get(k, k) for k, v in final.items() if np.mean(v["rouge_l"]) > start]


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed final scores and write the report."""
    curves = read_parquet(paths.curves, columns=["scheme", "seed", "step", "rouge_l", "fact_f1", "kl", "length"])
    rm = read_json(paths.rm_evaluation)
    examples = read_parquet(paths.rm_examples, columns=["model", "id", "source", "output", "critique", "gold_scores",
                                                        "predicted_critique", "predicted_scores"])
    timings = read_timings(paths.timings, TIMED_STEPS)
    final, seeds = summarise(curves, cfg.target_rouge)
    per_seed = verdict_metrics(final)
    measured = {f"final ROUGE-L {LABELS[k]}": mean_std(v["rouge_l"]) for k, v in final.items()}
    measured |= {k: mean_std(v, 4) for k, v in per_seed.items()}
    measured["RM good/poor span F1 (with critique)"] = f"{rm['critique']['good']['f1']:.3f} / " \
                                                       f"{rm['critique']['poor']['f1']:.3f}"
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=seeds, profile=ctx.profile, timings=timings,
                         measured=measured)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_curves(curves, paths.plots / "rouge_l.png", "rouge_l", "test ROUGE-L (sampled summaries)", cfg.target_rouge)
    plot_curves(curves, paths.plots / "fact_f1.png", "fact_f1", "test fact F1")
    plot_curves(curves, paths.plots / "kl.png", "kl", "KL(π ‖ π_ref) per summary (nats)")
    plot_span_f1(rm, paths.plots / "span_f1.png")

    start = curves[curves.step == 0].groupby("scheme").rouge_l.mean().mean()
    rows = [{"scheme": LABELS.get(k, k), "final ROUGE-L": mean_std(v["rouge_l"]),
             "change from warm start": mean_std([x - start for x in v["rouge_l"]]),
             "final fact F1": mean_std(v["fact_f1"]),
             "KL to reference": mean_std(v["kl"], 2), "words": mean_std(v["length"], 1),
             f"steps to ROUGE-L ≥ {cfg.target_rouge:g}": ", ".join("not reached" if math.isinf(s) else f"{s:.0f}"
                                                                 for s in v["steps_to_target"])}
            for k, v in final.items()]
    prf = "{precision:.3f} / {recall:.3f} / {f1:.3f}"
    rm_rows = [{"reward model": n, "good P / R / F1": prf.format(**rm[n]["good"]),
                "poor P / R / F1": prf.format(**rm[n]["poor"]),
                "word accuracy": rm[n]["word_accuracy"],
                "critique exact match": "-" if rm[n]["critique_exact"] is None else f"{rm[n]['critique_exact']:.3f}",
                "training steps": rm[n]["steps"]} for n in ("critique", "no_critique")]
    metrics = {"per_seed": per_seed, "final": final, "reward_model": rm, "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, rm=rm, max_spans=MAX_SPANS, n_steps=int(curves.step.max()),
                 start=start, rows=rows, rm_rows=rm_rows, above=above_start(final, start),
                 examples=example_rows(examples, 3),
                 text2grad_change=[x - start for x in final["text2grad"]["rouge_l"]])
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
