"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.biocap.config import PAPER, ReportInputs, load_report
from stages.biocap.expectations import results_suite, train_log_suite
from stages.core.gx import validate_table
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, write_report
from stages.core.stage import StageContext, Step, inp
from stages.core.verdict import ClaimRecord

TIMED_STEPS = ("data", "features", "train", "evaluate")
BASELINE = "taxonomy"
CARD = PaperCard(
    paper=PAPER,
    title=("BioCAP: Exploiting Synthetic Captions Beyond Labels in Biological Foundation Models "
           "(ICLR 2026; arXiv 2510.20095)"),
    claim=("Adding faithful, instance-specific descriptive captions to the taxonomic labels when training a "
           "biology CLIP (separate visual projectors for label text and caption text) improves zero-shot species "
           "classification, robustly to spurious context, and text-to-image retrieval over label-only training."),
    paper_result=("BioCAP vs BioCLIP: zero-shot species classification 46.4 vs 37.6 (mean over 10 benchmarks) and "
                  "text-image retrieval 52.6 vs 31.3 (abstract and main results table)."),
)
# verdict metric -> (arm, results metric, arm it is compared with or None)
VERDICT_METRICS = {
    "seen_taxa_accuracy_taxonomy": ("taxonomy", "zero_shot_seen", None),
    "shifted_zero_shot_gain_dual": ("caption_dual", "zero_shot_test_shift", BASELINE),
    "retrieval_r5_gain_dual": ("caption_dual", "test_recall_at_5", BASELINE),
    "shifted_zero_shot_gain_hallucinated": ("hallucinated", "zero_shot_test_shift", BASELINE),
}


@dataclass(frozen=True)
class Paths(ReportPaths):
    results: Path = inp("metrics per arm and seed")
    evaluation: Path = inp("set sizes and chance levels")
    train_log: Path = inp("training losses")


def per_seed_values(results: pd.DataFrame, arm: str, metric: str) -> list[float]:
    """One arm's values of one metric, in seed order."""
    part = results[(results.arm == arm) & (results.metric == metric)].sort_values("seed_index")
    return part.value.tolist()


def verdict_metrics(results: pd.DataFrame) -> dict[str, list[float]]:
    """Per-seed verdict metrics: the control's accuracy and each arm's gain over the taxonomy-only arm."""
    out = {}
    for name, (arm, metric, baseline) in VERDICT_METRICS.items():
        values = np.array(per_seed_values(results, arm, metric))
        if baseline is not None:
            values = values - np.array(per_seed_values(results, baseline, metric))
        out[name] = values.tolist()
    return out


def gated_verdict(claim: ClaimRecord, control: str) -> ClaimRecord:
    """The verdict from the claim checks only; every claim is unclear (inconclusive) unless the control holds."""
    status = {o.name: o.status for o in claim.checks}
    checks = [o if o.name == control or status[control] == "holds" else o.model_copy(update={"status": "unclear"})
              for o in claim.checks]
    claims = {o.status for o in checks if o.name != control}
    if status[control] != "holds" or not claims:
        verdict = "inconclusive"
    elif claims == {"holds"}:
        verdict = "reproduced"
    elif claims == {"fails"}:
        verdict = "not_reproduced"
    else:
        verdict = "partly" if "holds" in claims else "inconclusive"
    rule = (f"{claim.verdict_rule}; '{control}' is the positive control, not a claim: the verdict comes from the "
            f"other checks, which are all unclear (inconclusive) if it does not hold")
    return claim.model_copy(update={"verdict": verdict, "checks": checks, "verdict_rule": rule})


def seeds_needed(claim: ClaimRecord, rule_thresholds: dict[str, float]) -> list[dict[str, Any]]:
    """Per check: mean, sample std over seeds, and the seeds a 95% interval of the mean needs to exclude the
    threshold, ceil((1.96 · std / |mean − threshold|)²) (normal approximation)."""
    rows = []
    for o in claim.checks:
        v = np.array([x for x in o.values if x is not None], dtype=float)
        if len(v) < 2:
            continue
        mean, sd = float(v.mean()), float(v.std(ddof=1))
        gap = abs(mean - rule_thresholds[o.name])
        need = "any" if sd == 0 else ("∞" if gap == 0 else str(max(2, int(np.ceil((1.96 * sd / gap) ** 2)))))
        rows.append({"check": o.name, "mean": f"{mean:.4f}", "std": f"{sd:.4f}",
                     "threshold": f"{rule_thresholds[o.name]:g}", "seeds for a 95% interval": need})
    return rows


def results_rows(results: pd.DataFrame, arms: list[str], metrics: list[str]) -> list[dict[str, Any]]:
    """Mean ± std over seeds, one row per arm, one column per metric."""
    return [{"arm": a, **{m: mean_std(per_seed_values(results, a, m), 3) for m in metrics}} for a in arms]


def plot_bars(results: pd.DataFrame, arms: list[str], metrics: list[str], labels: list[str], title: str,
              chance: float | None, path: Path) -> None:
    """Grouped bars (mean over seeds) with each seed as a dot."""
    with figure(path, figsize=(1.9 * len(arms) + 2, 4)) as (_, ax):
        width = 0.8 / len(metrics)
        for j, (m, lab) in enumerate(zip(metrics, labels, strict=True)):
            x = np.arange(len(arms)) + (j - (len(metrics) - 1) / 2) * width
            vals = [per_seed_values(results, a, m) for a in arms]
            ax.bar(x, [np.mean(v) for v in vals], width, label=lab, alpha=0.8)
            for xi, v in zip(x, vals, strict=True):
                ax.scatter(np.full(len(v), xi), v, color="black", s=8, zorder=3)
        if chance is not None:
            ax.axhline(chance, color="grey", ls=":", lw=1, label="chance")
        ax.set_xticks(np.arange(len(arms)), [a.replace("_", "\n") for a in arms], fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)


def plot_training(log: pd.DataFrame, arms: list[str], path: Path) -> None:
    """Label-text and caption losses per arm over steps; seeds as bands."""
    with figure(path, 1, 2, figsize=(11, 3.8)) as (_, axes):
        for ax, col, title in zip(axes, ("taxonomy_loss", "caption_loss"), ("label-text loss", "caption loss"),
                                  strict=True):
            for a in arms:
                g = log[log.arm == a]
                if col == "caption_loss" and not (g[col] > 0).any():
                    continue
                runs = np.stack([r.sort_values("step")[col].to_numpy() for _, r in g.groupby("seed_index")])
                band(ax, np.sort(g.step.unique()), runs, a, color=f"C{arms.index(a)}")  # one colour per arm
            ax.set_xlabel("step")
            ax.set_title(title, fontsize=10)
            ax.legend(fontsize=7)


def load_note(step_timings: dict[str, dict[str, Any]]) -> str:
    """How busy the machine was when each timed step ended, and its CPU seconds beside its wall time."""
    if not all("cpu_time_s" in t for t in step_timings.values()):
        return "measured before the runner recorded CPU seconds and load; see the timings for the wall times."
    loads = [t["load_average_1min"] for t in step_timings.values()]
    cpu, wall = (sum(t[k] for t in step_timings.values()) for k in ("cpu_time_s", "wall_time_s"))
    return (f"the steps ended at 1-minute load averages {min(loads):.1f} to {max(loads):.1f}, with {cpu:.0f} CPU "
            f"seconds in {wall:.0f} s of wall time.")


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed results and write the report."""
    ev = read_json(paths.evaluation)
    arms, n_seeds = ev["arms"], ev["n_seeds"]
    results, log = read_parquet(paths.results), read_parquet(paths.train_log)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), arms))
    validate_table(log, f"{PAPER}.train_log", train_log_suite(len(log), arms))
    step_timings = {step: read_json(paths.timings / f"{step}.json") for step in TIMED_STEPS}
    timings = {step: float(t["wall_time_s"]) for step, t in step_timings.items()}
    per_seed = verdict_metrics(results)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.positive_control)
    ks = ev["recall_ks"]
    zs_metrics = ["zero_shot_test_id", "zero_shot_test_shift", "zero_shot_seen"]
    rt_metrics = [f"test_recall_at_{k}" for k in ks]
    val_metrics = ["zero_shot_val_id", "zero_shot_val_shift"] + [f"val_recall_at_{k}" for k in ks]
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_bars(results, arms, zs_metrics[:2], ["held-out taxa, in distribution", "held-out taxa, shifted background"],
              "zero-shot accuracy", ev["zero_shot"]["test_id"]["chance"], paths.plots / "zero_shot.png")
    plot_bars(results, arms, rt_metrics, [f"R@{k}" for k in ks], "text-to-image retrieval (held-out caption format)",
              None, paths.plots / "retrieval.png")
    plot_training(log, arms, paths.plots / "training_loss.png")
    gap = {a: mean_std((np.array(per_seed_values(results, a, "zero_shot_test_id"))
                        - np.array(per_seed_values(results, a, "zero_shot_test_shift"))).tolist(), 3) for a in arms}
    metrics = {"per_seed": per_seed,
               "results": {a: {m: per_seed_values(results, a, m) for m in sorted(results.metric.unique())}
                           for a in arms},
               "verdict": claim.verdict}
    mean = {a: {m: float(np.mean(per_seed_values(results, a, m))) for m in zs_metrics + rt_metrics} for a in arms}
    thresholds = {c.metric: c.threshold for c in cfg.verdict.checks}
    reading = {"dual_gain": float(np.mean(per_seed["shifted_zero_shot_gain_dual"])),
               "dual_threshold": thresholds["shifted_zero_shot_gain_dual"],
               "taxonomy_gap": mean[BASELINE]["zero_shot_test_id"] - mean[BASELINE]["zero_shot_test_shift"],
               "best_zero_shot_arm": max(arms, key=lambda a: mean[a]["zero_shot_test_shift"]),
               "best_retrieval_arm": max(arms, key=lambda a: mean[a]["test_recall_at_5"] if "test_recall_at_5"
                                         in mean[a] else 0.0),
               "mean": mean}
    write_report(paths, claim, metrics, timings, ev=ev, arms=arms, n_seeds=n_seeds, reading=reading,
                 zs_rows=results_rows(results, arms, zs_metrics), rt_rows=results_rows(results, arms, rt_metrics),
                 val_rows=results_rows(results, arms, val_metrics),
                 gap_rows=[{"arm": a, "in-distribution minus shifted": g} for a, g in gap.items()],
                 n_steps=int(log.step.max()), control=cfg.positive_control,
                 power_rows=seeds_needed(claim, {c.name: c.threshold for c in cfg.verdict.checks}),
                 load_note=load_note(step_timings))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
