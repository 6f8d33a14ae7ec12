"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json, read_parquet, write_json
from stages.core.report import (
    band,
    figure,
    markdown_table,
    mean_std,
    read_timings,
    report_opening,
    verdict_section,
    write_markdown,
)
from stages.core.stage import StageContext, inp, out, stage_main
from stages.core.verdict import ClaimRecord, decide
from stages.text2grad.config import PAPER, ReportInputs, load_report
from stages.text2grad.critic import parse_scores

TIMED_STEPS = ("data", "reward_model", "sft", "ppo")
TITLE = ("Text2Grad: Reinforcement Learning from Natural Language Feedback "
         "(Wang et al., ICLR 2026; arXiv 2505.22338)")
CLAIM = ("Turning a natural-language critique into span-level rewards (a reward model that writes the critique and "
         "then scores each word, mapped to token rewards for PPO) optimises a policy better than PPO with one scalar "
         "reward per output; labelling most tokens densely, or dropping the critique from the reward model, loses "
         "part of that gain.")
PAPER_RESULT = ("Llama-3.1-8B policies: SLF5K summarisation ROUGE-L 0.262 with scalar-reward PPO vs 0.291 with "
                "Text2Grad; KodCode pass@1 62.5 vs 66.1; dense labelling of most tokens drops ROUGE-L to 0.196; "
                "a reward model without the critique is also worse than Text2Grad.")
LABELS = {"scalar": "(a) scalar PPO", "text2grad": "(b) Text2Grad", "dense": "(c) dense labels",
          "no_critique": "(d) no-critique RM"}


@dataclass(frozen=True)
class Paths:
    curves: Path = inp("PPO test curves")
    rm_evaluation: Path = inp("reward-model span F1")
    rm_examples: Path = inp("reward-model predictions on held-out outputs")
    timings: Path = inp("folder holding data.json, reward_model.json, sft.json, ppo.json")
    report: Path = out("report.md")
    metrics: Path = out("metrics.json")
    claim: Path = out("claim.json")
    plots: Path = out("folder of PNG plots")


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


def example_rows(examples: pd.DataFrame, n: int) -> list[str]:
    """Held-out outputs with the annotated and the predicted critique and spans."""
    crit = examples[examples.model == "critique"].sort_values("id")
    picked = crit[crit.critique.str.contains("unconfirmed|invented|repeated")].head(n)
    lines = []
    for r in picked.itertuples():
        lines += [f"- source: `{r.source}`",
                  f"  - annotated: {highlight(r.output, parse_scores(r.gold_scores))} — critique: `{r.critique}`",
                  f"  - reward model: {highlight(r.output, parse_scores(r.predicted_scores))} — critique: "
                  f"`{r.predicted_critique}`"]
    return lines


def above_start(final: dict[str, dict[str, list[float]]], start: float) -> str:
    """Which schemes end above the warm start's ROUGE-L (mean over seeds), in words."""
    above = [LABELS.get(k, k) for k, v in final.items() if np.mean(v["rouge_l"]) > start]
    return f"Schemes ending above it: {', '.join(above)}." if above else "Every scheme ends below it."


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed final scores and write the report."""
    curves = read_parquet(paths.curves)
    rm = read_json(paths.rm_evaluation)
    examples = read_parquet(paths.rm_examples)
    timings = read_timings(paths.timings, TIMED_STEPS)
    final, seeds = summarise(curves, cfg.target_rouge)
    per_seed = verdict_metrics(final)
    verdict, outcomes = decide(cfg.verdict, per_seed)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_curves(curves, paths.plots / "rouge_l.png", "rouge_l", "test ROUGE-L (sampled summaries)", cfg.target_rouge)
    plot_curves(curves, paths.plots / "fact_f1.png", "fact_f1", "test fact F1")
    plot_curves(curves, paths.plots / "kl.png", "kl", "KL(π ‖ π_ref) per summary (nats)")
    plot_span_f1(rm, paths.plots / "span_f1.png")

    measured = {f"final ROUGE-L {LABELS[k]}": mean_std(v["rouge_l"]) for k, v in final.items()}
    measured |= {k: mean_std(v, 4) for k, v in per_seed.items()}
    measured["RM good/poor span F1 (with critique)"] = f"{rm['critique']['good']['f1']:.3f} / " \
                                                       f"{rm['critique']['poor']['f1']:.3f}"
    wall = float(sum(timings.values()))
    claim = ClaimRecord(paper=PAPER, title=TITLE, claim=CLAIM, paper_result=PAPER_RESULT, measured=measured,
                        verdict=verdict, verdict_rule=cfg.verdict.describe(), checks=outcomes, profile=ctx.profile,
                        seeds=seeds, wall_time_s=wall)
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
    n_steps = int(curves.step.max())
    md = [*report_opening(claim, timings),
          "## What the miniature does",
          "- Task: fact summarisation. A source lists short claims `NAME VERB ADJ NOUN .`; facts are stated plainly, "
          "distractors are hedged (`maybe ...`). The reference summary states the facts in source order. Stand-in "
          "for SLF5K, chosen because a program can write the critique exactly.",
          "- Annotation: a programmatic critic writes the paper's JSON (critique, ≤ 2 good spans, ≤ 2 poor spans, "
          "every span quoted from the output and named in the critique); word labels +1 / −1 / 0 follow.",
          f"- Reward models: TinyGPTs trained from scratch on {rm['n_train']} annotated noisy outputs to write the "
          "critique and then one score per word (the ablation writes only the scores); evaluated on "
          f"{rm['n_test']} held-out outputs.",
          "- Policy: a TinyGPT warm-started on noisy summaries (also the KL reference), then PPO with a value head, "
          "token-level GAE and clipped ratios; r_t = s_t − β(log π_old − log π_ref). Schemes: (a) the summed span "
          "scores on the last token, (b) Text2Grad's per-token scores, (c) every word outside the predicted poor "
          "spans +1, (d) per-token scores from the reward model trained without critiques. All rewards come from "
          "the trained reward models, never the programmatic critic. With the small BPE vocabulary trained here "
          "every task word is one token in the policy's outputs, so the greedy word-to-token alignment is one-to-one "
          "in practice (stops and special tokens get 0); multi-token, repeated and unmatched words are covered by "
          "the unit tests.",
          f"- Budget: {n_steps} PPO steps per run, {len(seeds)} seeds per scheme (same seed → same prompts, same "
          "warm start, same evaluation samples). Test metrics on sampled summaries (temperature 1), so they "
          f"measure the policy's distribution; the warm start scores ROUGE-L {start:.3f}.",
          "- Differences from the paper: tiny models trained from scratch (no 8B policy, no GPT-4o annotator), a "
          "synthetic task, far fewer PPO steps; one warm start and one pair of reward models shared by all seeds "
          "(seeds vary PPO sampling and the value head only). In (c) the dense labels are derived from the same "
          "reward model's predicted poor spans instead of a reward model trained on dense annotations.", "",
          "Sizing history: the first default run (reward models 600 steps, warm start 400 steps, PPO lr 5e-4, "
          "β = 0.05) left a warm start that rarely copied a fact exactly (test ROUGE-L 0.490, fact F1 0.122) and "
          "reward models with span F1 0.56 (good) / 0.68 (poor); under PPO every scheme raised its predicted reward "
          "while test ROUGE-L fell (final: scalar 0.364, Text2Grad 0.396, dense 0.318, no-critique 0.371; verdict "
          "partly). Training budgets were raised to 1500 steps each and PPO was made more conservative (lr 2e-4, "
          "β = 0.1) for a second run: warm start ROUGE-L 0.562 (fact F1 0.350); final ROUGE-L scalar 0.424, "
          "Text2Grad 0.547, dense 0.506, no-critique 0.450 after 40 steps (every scheme below the warm start, "
          "Text2Grad least; verdict partly, the dense check unclear on one seed). That run took 4.5 min on the "
          "then idle machine, below the 10-12 min budget, so "
          "this run uses 6000 reward-model training outputs, 3000 reward-model steps and 100 PPO steps. The "
          "verdict rule was not changed.", "",
          "## Results (mean ± std over seeds)", markdown_table(rows),
          f"Warm start (PPO step 0): test ROUGE-L {start:.3f}. {above_start(final, start)} PPO maximises the reward "
          "models' scores, not the task metric: a falling ROUGE-L under a rising predicted reward is the policy "
          "exploiting reward-model errors.", "",
          "Reward models on held-out outputs (word-level, against the critic's labels):", markdown_table(rm_rows),
          "Examples from the held-out outputs (**good**, ~~poor~~):", "", *example_rows(examples, 3), "",
          *verdict_section(claim),
          "The checks compare the schemes with each other at equal budget, not with the warm start: Text2Grad ends "
          f"{mean_std([x - start for x in final['text2grad']['rouge_l']])} ROUGE-L from the warm start, while the "
          "others' losses (table above) show the policy exploiting the reward models' errors. A gain in the paper's "
          "sense (PPO clearly above the supervised policy) would need a more accurate reward model than this "
          "miniature's (span F1 above).", "",
          "## Plots", "![ROUGE-L](plots/rouge_l.png)", "", "![fact F1](plots/fact_f1.png)", "",
          "![KL](plots/kl.png)", "", "![span F1](plots/span_f1.png)", ""]
    write_markdown("\n".join(md), paths.report)
    write_json({"per_seed": per_seed, "final": final, "reward_model": rm, "verdict": verdict}, paths.metrics)
    write_json(claim.model_dump(), paths.claim)
    return {"verdict": verdict}


def main() -> None:
    stage_main(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
