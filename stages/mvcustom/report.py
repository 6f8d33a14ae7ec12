"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.mvcustom.config import PAPER, ReportInputs, load_report
from stages.mvcustom.expectations import results_suite, train_log_suite

TIMED_STEPS = ("data", "pretrain", "evaluate")
ARMS = ["plain", "dfr", "lcc", "dfr_lcc", "warp_only", "pose_blind", "ground_truth", "shuffled_truth"]
MEASURES = ("gt_mse", "reproj_error", "pose_accuracy", "pose_specificity", "identity")
TAIL = 10  # logged pre-training losses averaged for the report (one batch's loss is noisy)
CARD = PaperCard(
    paper=PAPER,
    title=("MVCustom: Multi-View Customized Diffusion via Geometric Latent Rendering and Completion (ICLR 2026; "
           "abstract in ../shared/seeds/iclr2026-abstracts.txt, issue 34)"),
    claim=("A pose-conditioned multi-view diffusion model customised on a few posed views of a subject generates it "
           "from new camera poses; depth-aware feature rendering and consistency-aware latent completion at "
           "inference make the generated views geometrically consistent without losing fidelity to the subject."),
    paper_result=("The most balanced performance across multi-view consistency and customisation fidelity among the "
                  "compared methods (abstract; no single headline number is given there)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    results: Path = inp("measures per split, subject, window and arm")
    evaluation: Path = inp("the chosen window, the validation grid, fine-tuning losses")
    samples: Path = inp("first sample of every arm for every test subject")
    train_log: Path = inp("pre-training loss per logged step")


def test_table(results: pd.DataFrame, window: float) -> pd.DataFrame:
    """Test rows of every arm at the chosen window (window-free arms at 0), indexed by (arm, subject)."""
    test = results[results.split == "test"]
    keep = test[((test.window == 0) & ~test.arm.isin(["dfr", "lcc", "dfr_lcc"])) | (test.window == window)]
    return keep.set_index(["arm", "subject"]).sort_index()


def per_arm(results: pd.DataFrame, window: float, measure: str, n_seeds: int) -> dict[str, list[float]]:
    """Per arm, one measure per seed (test subject)."""
    t = test_table(results, window)
    return {a: [float(t.loc[(a, s), measure]) for s in range(n_seeds)] for a in ARMS}


def verdict_metrics(results: pd.DataFrame, evaluation: dict[str, Any]) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: the gates, DFR + LCC against plain, pose accuracy and specificity, the pose-blind
    control against the floor."""
    n, w = evaluation["n_seeds"], evaluation["window"]
    m = {k: {a: np.array(v) for a, v in per_arm(results, w, k, n).items()} for k in MEASURES}
    return {"gt_mse_warp_minus_plain": (m["gt_mse"]["warp_only"] - m["gt_mse"]["plain"]).tolist(),
            "reproj_gt_over_shuffled": (m["reproj_error"]["ground_truth"] / m["reproj_error"]["shuffled_truth"])
            .tolist(),
            "reproj_gain_dfr_lcc_over_plain": (1 - m["reproj_error"]["dfr_lcc"] / m["reproj_error"]["plain"]).tolist(),
            "gt_mse_change_dfr_lcc_over_plain": (m["gt_mse"]["dfr_lcc"] / m["gt_mse"]["plain"] - 1).tolist(),
            "gt_mse_warp_minus_dfr_lcc": (m["gt_mse"]["warp_only"] - m["gt_mse"]["dfr_lcc"]).tolist(),
            "identity_dfr_lcc_minus_plain": (m["identity"]["dfr_lcc"] - m["identity"]["plain"]).tolist(),
            "pose_accuracy_plain": m["pose_accuracy"]["plain"].tolist(),
            "pose_specificity_plain": m["pose_specificity"]["plain"].tolist(),
            "pose_specificity_dfr_lcc": m["pose_specificity"]["dfr_lcc"].tolist(),
            "gt_mse_warp_minus_pose_blind": (m["gt_mse"]["warp_only"] - m["gt_mse"]["pose_blind"]).tolist(),
            "pose_accuracy_dfr_lcc": m["pose_accuracy"]["dfr_lcc"].tolist()}


def reading(results: pd.DataFrame, window: float, n_seeds: int) -> dict[str, Any]:
    """The facts the report's reading of the result is conditioned on, computed from the test measures (whether
    the gates hold is the claim's, added by :func:`run`)."""
    m = {k: {a: np.array(v) for a, v in per_arm(results, window, k, n_seeds).items()} for k in MEASURES}
    plain_beats_floor = m["gt_mse"]["plain"] < m["gt_mse"]["warp_only"]
    blind_beats_floor = m["gt_mse"]["pose_blind"] < m["gt_mse"]["warp_only"]
    both_beats_floor = m["gt_mse"]["dfr_lcc"] < m["gt_mse"]["warp_only"]
    better = {"consistency": bool((m["reproj_error"]["dfr_lcc"] < m["reproj_error"]["plain"]).all()),
              "ground-truth error": bool((m["gt_mse"]["dfr_lcc"] < m["gt_mse"]["plain"]).all()),
              "identity": bool((m["identity"]["dfr_lcc"] > m["identity"]["plain"]).all()),
              "pose accuracy": bool(m["pose_accuracy"]["dfr_lcc"].mean() > m["pose_accuracy"]["plain"].mean())}

    def seeds(flags: np.ndarray) -> str:
        if flags.all() or not flags.any():
            return "every seed" if flags.all() else "no seed"
        return f"{int(flags.sum())} of {n_seeds} seeds"

    return {"plain_beats_floor": seeds(plain_beats_floor), "blind_beats_floor": seeds(blind_beats_floor),
            "both_beats_floor": seeds(both_beats_floor),
            "both_consistency_vs_floor": ("below" if m["reproj_error"]["dfr_lcc"].mean()
                                          < m["reproj_error"]["warp_only"].mean() else "above"),
            "improved": [k for k, v in better.items() if v], "not_improved": [k for k, v in better.items() if not v],
            "lcc_adds_to_dfr": [f"{label} on {seeds(m[a]['dfr_lcc'] < m[a]['dfr'])}"
                                for label, a in (("the reprojection error", "reproj_error"),
                                                 ("the ground-truth error", "gt_mse"))]}


def cpu_seconds(folder: Path) -> dict[str, float | None]:
    """CPU seconds of each timed step (user + system of the step and its children, from the stage runner's
    timing files; None where a timing file predates that field), their total and the highest 1-minute load
    average at a step's end (None unless every step recorded it)."""
    timings = {step: read_json(folder / f"{step}.json") for step in TIMED_STEPS}
    cpu = {step: t.get("cpu_time_s") for step, t in timings.items()}
    known = [v for v in cpu.values() if v is not None]
    loads = [t["load_average_1min"] for t in timings.values() if "load_average_1min" in t]
    return {**cpu, "total": float(sum(known)) if len(known) == len(cpu) else None,
            "max_load": max(loads) if len(loads) == len(timings) else None}


def arm_rows(results: pd.DataFrame, window: float, n_seeds: int) -> list[dict[str, Any]]:
    """Mean ± std over seeds of every measure, one row per arm."""
    cols = {k: per_arm(results, window, k, n_seeds) for k in MEASURES}
    return [{"arm": a, **{k: mean_std(cols[k][a], 4) for k in MEASURES}} for a in ARMS]


def seed_rows(results: pd.DataFrame, window: float, n_seeds: int) -> list[dict[str, Any]]:
    """Per seed: ground-truth error and reprojection error of plain, DFR, LCC, both and the floor."""
    t = test_table(results, window)
    return [{"seed": s, **{f"{k} {a}": f"{t.loc[(a, s), k]:.4f}" for k in ("gt_mse", "reproj_error")
                           for a in ("plain", "dfr", "lcc", "dfr_lcc", "warp_only")}} for s in range(n_seeds)]


def validation_rows(results: pd.DataFrame, grid: list[float]) -> list[dict[str, Any]]:
    """Validation means per window of each guided arm, and of plain (window-free)."""
    val = results[results.split == "val"]
    rows = [{"window": "–", "arm": "plain", **{k: f"{val[val.arm == 'plain'][k].mean():.4f}" for k in MEASURES}}]
    for w in grid:
        for a in ("dfr", "lcc", "dfr_lcc"):
            part = val[(val.arm == a) & (val.window == w)]
            rows.append({"window": f"{w:g}", "arm": a, **{k: f"{part[k].mean():.4f}" for k in MEASURES}})
    return rows


def plot_samples(samples: dict[str, Any], n_seeds: int, path: Path) -> None:
    """For each test subject: references, then per arm the generated target views (first noise draw)."""
    arms = ["ground_truth", "warp_only", "plain", "dfr", "lcc", "dfr_lcc"]
    n_views = samples["test0/plain"].shape[0]
    n_refs = samples["test0/references"].shape[0]
    cols = n_refs + 1 + len(arms) * (n_views + 1)
    with figure(path, nrows=n_seeds, ncols=1, figsize=(cols * 0.55, n_seeds * 0.9 + 0.6)) as (fig, axes):
        axes = np.atleast_1d(axes)
        for s in range(n_seeds):
            tiles = [samples[f"test{s}/references"].numpy()]
            blank = np.ones((1, *tiles[0].shape[1:]), dtype=np.float32)
            for a in arms:
                tiles += [blank, samples[f"test{s}/{a}"].numpy()]
            row = np.concatenate(tiles)
            strip = np.concatenate([np.moveaxis(x, 0, -1) for x in row], axis=1)
            axes[s].imshow(strip.clip(0, 1), interpolation="nearest")
            axes[s].set_yticks([])
            axes[s].set_ylabel(f"seed {s}", rotation=0, labelpad=20, fontsize=7)
            size = row.shape[-1]
            centres = [n_refs * size / 2] + [(n_refs + 1 + i * (n_views + 1) + n_views / 2) * size
                                             for i in range(len(arms))]
            axes[s].set_xticks(centres, ["refs", *arms] if s == n_seeds - 1 else [""] * len(centres), fontsize=7)
        fig.suptitle("references | per arm: the target views (first noise draw)", fontsize=8)


def plot_tradeoff(results: pd.DataFrame, window: float, n_seeds: int, path: Path) -> None:
    """Reprojection error against ground-truth error per arm (each seed a dot, the mean a cross)."""
    gt, rp = per_arm(results, window, "gt_mse", n_seeds), per_arm(results, window, "reproj_error", n_seeds)
    with figure(path, figsize=(6, 4.5)) as (_, ax):
        for j, a in enumerate(["plain", "dfr", "lcc", "dfr_lcc", "warp_only"]):
            ax.scatter(gt[a], rp[a], color=f"C{j}", s=14, alpha=0.6)
            ax.scatter(np.mean(gt[a]), np.mean(rp[a]), color=f"C{j}", marker="X", s=80, label=a)
        ax.set_xlabel("error against the ground truth (MSE, lower is better)")
        ax.set_ylabel("reprojection error between views (lower is more consistent)")
        ax.legend(fontsize=8)


def plot_loss(log: pd.DataFrame, path: Path) -> None:
    """Pre-training denoising loss per logged step."""
    with figure(path, figsize=(6, 3.5)) as (_, ax):
        ax.plot(log.step, log.loss)
        ax.set_xlabel("step")
        ax.set_ylabel("denoising loss")
        ax.set_yscale("log")


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Decide the verdict by the pre-registered rule; write the report, metrics, claim and plots."""
    results = read_parquet(paths.results)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), ARMS))
    evaluation = read_json(paths.evaluation)
    samples = load_safetensors(paths.samples)
    log = read_parquet(paths.train_log)
    validate_table(log, f"{PAPER}.train_log", train_log_suite(len(log)))
    n_seeds, window = evaluation["n_seeds"], evaluation["window"]
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(results, evaluation)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_samples(samples, n_seeds, paths.plots / "samples.png")
    plot_tradeoff(results, window, n_seeds, paths.plots / "consistency_vs_fidelity.png")
    plot_loss(log, paths.plots / "pretrain_loss.png")
    means = {k: {a: float(np.mean(v)) for a, v in per_arm(results, window, k, n_seeds).items()} for k in MEASURES}
    metrics = {"per_seed": per_seed, "by_arm": {k: per_arm(results, window, k, n_seeds) for k in MEASURES},
               "window": window, "verdict": claim.verdict}
    read = reading(results, window, n_seeds)
    statuses = {c.name: c.status for c in claim.checks}
    read |= {"gate_status": {g: statuses[g] for g in cfg.gates}, "gate_holds": all(statuses[g] == "holds"
                                                                                    for g in cfg.gates)}
    write_report(paths, claim, metrics, timings, ev=evaluation, n_seeds=n_seeds, means=means, gates=cfg.gates,
                 arm_rows=arm_rows(results, window, n_seeds), seed_rows=seed_rows(results, window, n_seeds),
                 val_rows=validation_rows(results, evaluation["window_grid"]),
                 read=read, cpu=cpu_seconds(paths.timings),
                 visible=float(np.mean([v for k, v in evaluation["anchor_visible_fraction"].items()
                                        if k.startswith("test/")])),
                 final_loss=float(log.loss.iloc[-TAIL:].mean()), tail_steps=min(TAIL, len(log)),
                 pretrain_steps=int(log.step.iloc[-1]),
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
