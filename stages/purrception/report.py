"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.purrception.config import PAPER, ReportInputs, load_report
from stages.purrception.expectations import fid_curve_suite, train_log_suite

TIMED_STEPS = ("data", "tokenizer", "classifier", "train", "evaluate")
CONTINUOUS = ("cfm_velocity", "cfm_endpoint")
CARD = PaperCard(
    paper=PAPER,
    title=("Purrception: Variational Flow Matching for Vector-Quantized Image Generation "
           "(Matişan et al., ICLR 2026; OpenReview SA8xDYrUYB, arXiv 2510.01478)"),
    claim=("Flow matching over vector-quantised latents that predicts a categorical posterior over codebook indices "
           "while moving in the continuous embedding space trains faster (fewer steps to a given FID) than both "
           "continuous and discrete flow matching, with a competitive final FID."),
    paper_result=("ImageNet-1k 256×256: Purrception converges faster than continuous FM and discrete FM baselines "
                  "trained in the same code and reaches an FID competitive with state-of-the-art models "
                  "(abstract; the abstract states no numbers, so none are restated here)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    evaluation: Path = inp("floors and settings from evaluate")
    fid_curves: Path = inp("FID / precision / recall per checkpoint")
    samples: Path = inp("sample grid")
    train_log: Path = inp("training losses")
    tokenizer_metrics: Path = inp("VQ-VAE reconstruction metrics")
    classifier_metrics: Path = inp("feature-net accuracy")


def steps_to_target(steps: list[int], fids: list[float], target: float, never: int) -> int:
    """The first checkpoint whose FID is ≤ target; ``never`` (beyond training) if none is."""
    return next((s for s, f in zip(steps, fids, strict=True) if f <= target), never)


def verdict_metrics(curves: pd.DataFrame, methods: list[str], n_seeds: int, factor: float) -> dict[str, Any]:
    """Per-seed target FID, steps to it per method, and the three verdict metrics."""
    tau1 = curves[curves.temperature == 1.0]
    steps = sorted(tau1.step.unique().tolist())
    never = steps[-1] + 1
    baselines = [m for m in methods if m != "purrception"]
    per_seed: dict[str, list[float]] = {"steps_saved_vs_continuous": [], "steps_saved_vs_discrete": [],
                                        "final_fid_ratio": []}
    targets, reach = [], {m: [] for m in methods}
    for s in range(n_seeds):
        fid = {m: tau1[(tau1.method == m) & (tau1.seed_index == s)].sort_values("step").fid.tolist() for m in methods}
        best_final = min(fid[b][-1] for b in baselines)
        target = factor * best_final
        targets.append(target)
        for m in methods:
            reach[m].append(steps_to_target(steps, fid[m], target, never))
        if any(m in methods for m in CONTINUOUS):
            per_seed["steps_saved_vs_continuous"].append(
                min(reach[m][-1] for m in CONTINUOUS if m in methods) - reach["purrception"][-1])
        if "discrete_fm" in methods:
            per_seed["steps_saved_vs_discrete"].append(reach["discrete_fm"][-1] - reach["purrception"][-1])
        per_seed["final_fid_ratio"].append(fid["purrception"][-1] / best_final)
    return {"per_seed": {k: v for k, v in per_seed.items() if v}, "targets": targets, "steps_to_target": reach,
            "never": never}


def pairwise_speed(curves: pd.DataFrame, method: str, rivals: list[str], n_seeds: int,
                   factor: float) -> list[dict[str, Any]]:
    """Descriptive only (not the verdict): steps of ``method`` and ``rivals`` to factor × the rivals' best final FID."""
    tau1 = curves[curves.temperature == 1.0]
    steps = sorted(tau1.step.unique().tolist())
    rows = []
    for s in range(n_seeds):
        fid = {m: tau1[(tau1.method == m) & (tau1.seed_index == s)].sort_values("step").fid.tolist()
               for m in [method, *rivals]}
        target = factor * min(fid[r][-1] for r in rivals)
        reach = {m: steps_to_target(steps, fid[m], target, steps[-1] + 1) for m in fid}
        rows.append({"seed": s, "target FID": f"{target:.2f}",
                     **{m: "never" if r > steps[-1] else str(r) for m, r in reach.items()}})
    return rows


def plot_curves(curves: pd.DataFrame, ev: dict[str, Any], targets: list[float], path: Path) -> None:
    """FID, precision and recall vs training steps at τ = 1; seeds as bands; floors as dotted lines."""
    tau1 = curves[curves.temperature == 1.0]
    with figure(path, 1, 3, figsize=(15, 4.3)) as (_, axes):
        for metric, ax in zip(("fid", "precision", "recall"), axes, strict=True):
            for m in ev["methods"]:
                g = tau1[tau1.method == m]
                runs = np.stack([r.sort_values("step")[metric].to_numpy() for _, r in g.groupby("seed_index")])
                band(ax, np.asarray(ev["checkpoints"]), runs, m)
            for name, style in (("real_train_images", ":"), ("vq_reconstructions", "-.")):
                ax.axhline(ev["floors"][name][metric], color="grey", ls=style, lw=1, label=name.replace("_", " "))
            if metric == "fid":
                ax.axhline(float(np.mean(targets)), color="black", ls="--", lw=0.8, label="speed target (mean)")
                ax.set_yscale("log")
            ax.set_xscale("log")
            ax.set_xlabel("training step")
            ax.set_ylabel({"fid": "Fréchet distance (feature net)"}.get(metric, metric))
        axes[0].legend(fontsize=7)


def plot_temperature(curves: pd.DataFrame, ev: dict[str, Any], path: Path) -> None:
    """Purrception's final checkpoint: FID, precision and recall vs sampling temperature τ."""
    final = ev["checkpoints"][-1]
    g = curves[(curves.method == "purrception") & (curves.step == final)]
    taus = sorted(g.temperature.unique())
    with figure(path, 1, 2, figsize=(10, 4)) as (_, (ax_fid, ax_pr)):
        for metric, ax in (("fid", ax_fid), ("precision", ax_pr), ("recall", ax_pr)):
            runs = np.stack([r.sort_values("temperature")[metric].to_numpy() for _, r in g.groupby("seed_index")])
            band(ax, np.asarray(taus), runs, metric)
        ax_fid.set_ylabel("Fréchet distance")
        ax_pr.set_ylabel("precision / recall")
        for ax in (ax_fid, ax_pr):
            ax.set_xlabel("temperature τ")
            ax.set_xscale("log")
            ax.legend(fontsize=8)
        ax_fid.set_title(f"Purrception at step {final}")


def plot_samples(samples: np.ndarray, rows: list[str], path: Path) -> None:
    """One row of images per source (real, reconstruction, each method at its final checkpoint, seed 0)."""
    n_rows, n_cols = samples.shape[:2]
    with figure(path, n_rows, 1, figsize=(n_cols * 0.8 + 0.5, n_rows * 1.1)) as (_, axes):
        for ax, row, label in zip(np.atleast_1d(axes), samples, rows, strict=True):
            ax.imshow(np.concatenate(list(row), axis=1), cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(label, loc="left", fontsize=8)


def plot_training(log: pd.DataFrame, path: Path, window: int = 50) -> None:
    """Training loss per method (own scale each), moving average, seeds as bands."""
    methods = list(dict.fromkeys(log.method))
    with figure(path, 1, len(methods), figsize=(4 * len(methods), 3.4)) as (_, axes):
        for ax, m in zip(np.atleast_1d(axes), methods, strict=True):
            runs = np.stack([r.sort_values("step").loss.to_numpy()
                             for _, r in log[log.method == m].groupby("seed_index")])
            w = min(window, runs.shape[1])
            smooth = np.stack([np.convolve(r, np.ones(w) / w, mode="valid") for r in runs])
            band(ax, np.arange(w, runs.shape[1] + 1), smooth, m)
            ax.set_title(m, fontsize=9)
            ax.set_xlabel("step")
        np.atleast_1d(axes)[0].set_ylabel(f"loss ({window}-step mean)")


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed curves and write the report."""
    ev = read_json(paths.evaluation)
    curves = read_parquet(paths.fid_curves)
    log = read_parquet(paths.train_log)
    validate_table(curves, f"{PAPER}.fid_curves", fid_curve_suite(len(curves)))
    validate_table(log, f"{PAPER}.train_log", train_log_suite(ev["methods"], len(log)))
    tok, clf = read_json(paths.tokenizer_metrics), read_json(paths.classifier_metrics)
    timings = read_timings(paths.timings, TIMED_STEPS)
    methods, n_seeds, final = ev["methods"], ev["n_seeds"], ev["checkpoints"][-1]
    factor = cfg.speed.target_fid_factor
    vm = verdict_metrics(curves, methods, n_seeds, factor)
    tau1 = curves[curves.temperature == 1.0]
    last = tau1[tau1.step == final]
    headline = {"final_fid_" + m: mean_std(last[last.method == m].fid.tolist(), 3) for m in methods}
    headline.update({k: mean_std(v, 3) for k, v in vm["per_seed"].items()})
    claim = decide_claim(CARD, cfg.verdict, vm["per_seed"], seeds=list(range(n_seeds)), profile=ctx.profile,
                         timings=timings, measured=headline)
    # the rule as stated in claim.json also says how the speed target is set
    claim = claim.model_copy(update={"verdict_rule": f"speed target per seed = {factor:g} × the best baseline's "
                                                     f"final FID; {claim.verdict_rule}"})

    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_curves(curves, ev, vm["targets"], paths.plots / "fid_vs_steps.png")
    plot_temperature(curves, ev, paths.plots / "temperature.png")
    plot_samples(np.load(paths.samples, allow_pickle=False), ev["grid_rows"], paths.plots / "samples.png")
    plot_training(log, paths.plots / "training_loss.png")

    final_rows = [{"method": m, **{k: mean_std(last[last.method == m].sort_values("seed_index")[k].tolist(), 3)
                                   for k in ("fid", "precision", "recall")},
                   "steps to target (per seed)": ", ".join(
                       "never" if r == vm["never"] else str(r) for r in vm["steps_to_target"][m])}
                  for m in methods]
    curve_rows = [{"method": m, **{f"step {s}": mean_std(tau1[(tau1.method == m) & (tau1.step == s)].fid.tolist(), 2)
                                   for s in ev["checkpoints"]}} for m in methods]
    purr = curves[(curves.method == "purrception") & (curves.step == final)]
    temp_rows = [{"τ": f"{t:g}", **{k: mean_std(purr[purr.temperature == t][k].tolist(), 3)
                                    for k in ("fid", "precision", "recall")}}
                 for t in sorted(purr.temperature.unique())]
    floor_rows = [{"reference set": n.replace("_", " "),
                   **{k: f"{v[k]:.3f}" for k in ("fid", "precision", "recall")}} for n, v in ev["floors"].items()]
    continuous = [m for m in CONTINUOUS if m in methods]
    pair_rows = pairwise_speed(curves, "purrception", continuous, n_seeds, factor) if continuous else []
    ranking = last.groupby("method").fid.mean().sort_values()
    metrics = {"per_seed": vm["per_seed"], "targets": vm["targets"], "steps_to_target": vm["steps_to_target"],
               "final": {m: {k: last[last.method == m].sort_values("seed_index")[k].tolist()
                             for k in ("fid", "precision", "recall")} for m in methods},
               "floors": ev["floors"], "tokenizer": tok["reconstruction"],
               "classifier_test_accuracy": clf["test_accuracy"], "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, ev=ev, tok=tok, clf=clf, rec=tok["reconstruction"],
                 model=ev["model"], methods=methods, n_seeds=n_seeds, final=final, factor=factor,
                 n_train_steps=int(log.groupby(["method", "seed_index"]).step.max().max()),
                 targets=vm["targets"], never=vm["never"], ranking=ranking.to_dict(), floor_rows=floor_rows,
                 final_rows=final_rows, curve_rows=curve_rows, pair_rows=pair_rows, temp_rows=temp_rows)
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
