"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.gx import validate_table
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.purrception.config import PAPER, ReportInputs, load_report
from stages.purrception.expectations import fid_curve_suite, train_log_suite
from stages.purrception.history import CURRENT_RULE, CURRENT_RULE_COMMIT, RULES, SIZING

TIMED_STEPS = ("data", "tokenizer", "classifier", "train", "evaluate")
BASELINES = ("cfm_velocity", "cfm_endpoint", "discrete_fm")
SAMPLERS = ("stochastic", "deterministic")
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
LOSS_WINDOW, LOSS_SPAN = 100, 500  # the Scale table: mean loss over the last window, its change over the span


@dataclass(frozen=True)
class Paths(ReportPaths):
    evaluation: Path = inp("floors, the known-bad generator and settings from evaluate")
    fid_curves: Path = inp("FID / precision / recall per checkpoint")
    samples: Path = inp("sample grid")
    train_log: Path = inp("training losses")
    tokenizer_metrics: Path = inp("VQ-VAE reconstruction metrics")
    classifier_metrics: Path = inp("feature-net accuracy")


def steps_to_target(steps: list[int], fids: list[float], target: float, never: int) -> int:
    """The first checkpoint whose FID is ≤ target; ``never`` (one interval beyond training) if none is."""
    return next((s for s, f in zip(steps, fids, strict=True) if f <= target), never)


def speedup(baseline_steps: int, method_steps: int) -> float:
    """Steps the baseline needs to its target over the steps the method needs to the same target (> 1: faster)."""
    return baseline_steps / method_steps


def arm_curve(curves: pd.DataFrame, method: str, seed: int, sampler: str | None = None) -> list[float]:
    """FID at τ = 1 over the checkpoints of one method (and sampler), one seed, in step order."""
    part = curves[(curves.temperature == 1.0) & (curves.method == method) & (curves.seed_index == seed)]
    if sampler is not None:
        part = part[part.sampler == sampler]
    return part.sort_values("step").fid.tolist()


# How each speed-target kind reads in the verdict rule and the report's prose
TARGET_WORDS = {
    "baseline_best": "that baseline's best FID over its checkpoints (a level the baseline reaches)",
    "pair_worse_best": ("the worse of the two best FIDs over the checkpoints, the baseline's and Purrception's "
                        "(a level both runs of the pair reach)"),
}


def speed_target(baseline_fids: list[float], method_fids: list[float], factor: float, kind: str) -> float:
    """The FID level a speed comparison counts steps to (``kind`` of ``purrception.report.speed_target``).

    ``baseline_best``: factor × the baseline's best FID (a level the baseline reaches; the method may never, and
    a baseline that flattens early reaches it at its first checkpoints, capping the speedup).
    ``pair_worse_best``: factor × the worse of the two best FIDs, a level both runs of the pair reach, so both
    step counts are measured and the speedup can fall on either side of 1.
    """
    if kind == "baseline_best":
        return factor * min(baseline_fids)
    if kind == "pair_worse_best":
        return factor * max(min(baseline_fids), min(method_fids))
    raise ValueError(f"unknown speed target {kind!r}")


def verdict_metrics(curves: pd.DataFrame, methods: list[str], n_seeds: int, factor: float, sampler: str,
                    known_bad_fid: list[float], target_kind: str = "baseline_best") -> dict[str, Any]:
    """Per-seed verdict metrics for one Purrception sampler, with each comparison's target and the steps to it."""
    steps = sorted(curves[curves.temperature == 1.0].step.unique().tolist())
    never = steps[-1] + (steps[-1] - steps[-2] if len(steps) > 1 else steps[-1])
    baselines = [b for b in BASELINES if b in methods]
    per_seed: dict[str, list[float]] = {"best_baseline_fid_over_marginal": [], "final_fid_ratio": [],
                                        **{f"speedup_vs_{b}": [] for b in baselines}}
    targets: dict[str, list[float]] = {b: [] for b in baselines}
    reach: dict[str, dict[str, list[int]]] = {b: {"baseline": [], "purrception": []} for b in baselines}
    for s in range(n_seeds):
        purr = arm_curve(curves, "purrception", s, sampler)
        for b in baselines:
            fid_b = arm_curve(curves, b, s)
            target = speed_target(fid_b, purr, factor, target_kind)
            targets[b].append(target)
            reach[b]["baseline"].append(steps_to_target(steps, fid_b, target, never))
            reach[b]["purrception"].append(steps_to_target(steps, purr, target, never))
            per_seed[f"speedup_vs_{b}"].append(speedup(reach[b]["baseline"][-1], reach[b]["purrception"][-1]))
        best_final = min(arm_curve(curves, b, s)[-1] for b in baselines)
        per_seed["final_fid_ratio"].append(purr[-1] / best_final)
        per_seed["best_baseline_fid_over_marginal"].append(best_final / known_bad_fid[s])
    return {"per_seed": per_seed, "targets": targets, "reach": reach, "never": never}


def speed_rows(vm: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """Per baseline and seed, for each Purrception sampler: the target, both runs' steps to it, the speedup."""
    first = next(iter(vm.values()))
    rows = []
    for b, targets in first["targets"].items():
        for s in range(len(targets)):
            row = {"baseline": b, "seed": str(s)}
            for smp, v in vm.items():
                row[f"target ({smp})"] = f"{v['targets'][b][s]:.2f}"
                row[f"baseline steps ({smp})"] = fmt_steps(v["reach"][b]["baseline"][s], v["never"])
                row[f"purrception steps ({smp})"] = fmt_steps(v["reach"][b]["purrception"][s], v["never"])
                row[f"speedup ({smp})"] = f"{v['per_seed'][f'speedup_vs_{b}'][s]:.2f}"
            rows.append(row)
    return rows


def fmt_steps(steps: int, never: int) -> str:
    """A step count, or 'never' for one interval beyond training."""
    return "never" if steps >= never else str(steps)


def arm_label(method: str, sampler: str) -> str:
    """How an arm is named in tables and plots: Purrception with its sampler, the others by their method."""
    return f"{method} ({sampler})" if method == "purrception" else method


def pick_columns(checkpoints: list[int], n: int = 8) -> list[int]:
    """About n checkpoints spread over training (the last always included) for the curve table."""
    idx = sorted(set(np.linspace(0, len(checkpoints) - 1, min(n, len(checkpoints))).round().astype(int).tolist()))
    return [checkpoints[i] for i in idx]


def loss_rows(log: pd.DataFrame, window: int = 100, span: int = 500) -> list[dict[str, str]]:
    """Per method: mean training loss over the last ``window`` steps and its change from ``span`` steps earlier."""
    rows = []
    last_step = int(log.step.max())
    for m, g in log.groupby("method", sort=False):
        end = g[g.step > last_step - window].loss.mean()
        earlier = g[(g.step > last_step - span - window) & (g.step <= last_step - span)].loss
        rows.append({"method": m, f"loss, last {window} steps": f"{end:.3f}",
                     f"change over the last {span} steps": f"{end - earlier.mean():+.3f}" if len(earlier) else "n/a"})
    return rows


def plot_curves(curves: pd.DataFrame, ev: dict[str, Any], path: Path) -> None:
    """FID, precision and recall vs training steps at τ = 1; seeds as bands; floors and the known-bad as lines."""
    tau1 = curves[curves.temperature == 1.0]
    known_bad = {k: float(np.mean([kb[k] for kb in ev["known_bad"]])) for k in ("fid", "precision", "recall")}
    with figure(path, 1, 3, figsize=(16, 4.5)) as (_, axes):
        for metric, ax in zip(("fid", "precision", "recall"), axes, strict=True):
            for m, smp in ev["arms"]:
                g = tau1[(tau1.method == m) & (tau1.sampler == smp)]
                runs = np.stack([r.sort_values("step")[metric].to_numpy() for _, r in g.groupby("seed_index")])
                band(ax, np.asarray(ev["checkpoints"]), runs, arm_label(m, smp))
            for name, style in (("real_train_images", ":"), ("vq_reconstructions", "-.")):
                ax.axhline(ev["floors"][name][metric], color="grey", ls=style, lw=1, label=name.replace("_", " "))
            ax.axhline(known_bad[metric], color="black", ls="--", lw=0.8, label="per-position marginals (known bad)")
            if metric == "fid":
                ax.set_yscale("log")
            ax.set_xlabel("training step")
            ax.set_ylabel({"fid": "Fréchet distance (feature net)"}.get(metric, metric))
        axes[0].legend(fontsize=7)


def plot_temperature(curves: pd.DataFrame, ev: dict[str, Any], path: Path) -> None:
    """Purrception's final checkpoint, both samplers: FID and precision/recall vs sampling temperature τ."""
    final = ev["checkpoints"][-1]
    with figure(path, 1, 2, figsize=(11, 4)) as (_, (ax_fid, ax_pr)):
        for smp in SAMPLERS:
            g = curves[(curves.method == "purrception") & (curves.step == final) & (curves.sampler == smp)]
            if g.empty:
                continue
            taus = np.asarray(sorted(g.temperature.unique()))
            for metric, ax in (("fid", ax_fid), ("precision", ax_pr), ("recall", ax_pr)):
                runs = np.stack([r.sort_values("temperature")[metric].to_numpy() for _, r in g.groupby("seed_index")])
                band(ax, taus, runs, f"{metric} ({smp})" if ax is ax_pr else smp)
        ax_fid.set_ylabel("Fréchet distance")
        ax_pr.set_ylabel("precision / recall")
        for ax in (ax_fid, ax_pr):
            ax.set_xlabel("temperature τ")
            ax.set_xscale("log")
            ax.legend(fontsize=7)
        ax_fid.set_title(f"Purrception at step {final}")


def plot_samples(samples: np.ndarray, rows: list[str], path: Path) -> None:
    """One row of images per source (real, reconstruction, each arm at its final checkpoint, seed 0)."""
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
    """Compute the gated verdict from the per-seed curves of the pre-registered sampler and write the report."""
    ev = read_json(paths.evaluation)
    curves = read_parquet(paths.fid_curves)
    log = read_parquet(paths.train_log)
    validate_table(curves, f"{PAPER}.fid_curves", fid_curve_suite(len(curves)))
    validate_table(log, f"{PAPER}.train_log", train_log_suite(ev["methods"], len(log)))
    tok, clf = read_json(paths.tokenizer_metrics), read_json(paths.classifier_metrics)
    timings = read_timings(paths.timings, TIMED_STEPS)
    methods, n_seeds, final = ev["methods"], ev["n_seeds"], ev["checkpoints"][-1]
    rc = cfg.report
    known_bad_fid = [kb["fid"] for kb in ev["known_bad"]]
    vm = {smp: verdict_metrics(curves, methods, n_seeds, rc.target_fid_factor, smp, known_bad_fid, rc.speed_target)
          for smp in (rc.verdict_sampler, *[x for x in SAMPLERS if x != rc.verdict_sampler])}
    per_seed = vm[rc.verdict_sampler]["per_seed"]
    tau1 = curves[curves.temperature == 1.0]
    last = tau1[tau1.step == final]
    arms = [tuple(a) for a in ev["arms"]]
    headline = {f"final_fid_{arm_label(m, smp)}": mean_std(
        last[(last.method == m) & (last.sampler == smp)].fid.tolist(), 3) for m, smp in arms}
    headline.update({k: mean_std(v, 3) for k, v in per_seed.items()})
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                         timings=timings, measured=headline)
    claim = gated_verdict(claim, rc.gates)
    claim = claim.model_copy(update={"verdict_rule": (
        f"Purrception's {rc.verdict_sampler} sampler; speed target per seed and baseline = "
        f"{rc.target_fid_factor:g} × {TARGET_WORDS[rc.speed_target]}, speedup = baseline's steps to it / "
        f"Purrception's, steps counted at checkpoints {', '.join(map(str, ev['checkpoints']))}; {claim.verdict_rule}")})
    thresholds = {c.name: c.threshold for c in cfg.verdict.checks}

    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_curves(curves, ev, paths.plots / "fid_vs_steps.png")
    plot_temperature(curves, ev, paths.plots / "temperature.png")
    plot_samples(np.load(paths.samples, allow_pickle=False), ev["grid_rows"], paths.plots / "samples.png")
    plot_training(log, paths.plots / "training_loss.png")

    def at(frame: pd.DataFrame, m: str, smp: str, key: str) -> list[float]:
        return frame[(frame.method == m) & (frame.sampler == smp)].sort_values("seed_index")[key].tolist()

    final_rows = [{"method (sampler)": arm_label(m, smp), "parameters": f"{ev['model']['n_params'][m]:,}",
                   **{k: mean_std(at(last, m, smp, k), 3) for k in ("fid", "precision", "recall")}}
                  for m, smp in arms]
    shown = pick_columns(ev["checkpoints"])
    curve_rows = [{"method (sampler)": arm_label(m, smp),
                   **{f"step {s}": mean_std(at(tau1[tau1.step == s], m, smp, "fid"), 1) for s in shown}}
                  for m, smp in arms]
    purr = curves[(curves.method == "purrception") & (curves.step == final)]
    temp_rows = [{"τ": f"{t:g}", **{f"{k} ({smp})": mean_std(at(purr[purr.temperature == t], "purrception", smp, k), 3)
                                    for smp in SAMPLERS for k in ("fid", "recall")}}
                 for t in sorted(purr.temperature.unique())]
    floor_rows = [{"reference set": n.replace("_", " "), **{k: f"{v[k]:.3f}" for k in ("fid", "precision", "recall")}}
                  for n, v in ev["floors"].items()]
    floor_rows.append({"reference set": "per-position code marginals (known bad), mean over seeds",
                       **{k: f"{np.mean([kb[k] for kb in ev['known_bad']]):.3f}" for k in ("fid", "precision",
                                                                                            "recall")}})
    sampler_rows = [{"metric": k, **{smp: ", ".join(f"{x:.3f}" for x in v["per_seed"][k]) for smp, v in vm.items()}}
                    for k in per_seed]
    ranking = last.assign(arm=[arm_label(m, smp) for m, smp in zip(last.method, last.sampler, strict=True)]
                          ).groupby("arm").fid.mean().sort_values()
    metrics = {"per_seed": per_seed,
               "by_sampler": {smp: v["per_seed"] for smp, v in vm.items()},
               "targets": vm[rc.verdict_sampler]["targets"], "reach": {smp: v["reach"] for smp, v in vm.items()},
               "final": {arm_label(m, smp): {k: at(last, m, smp, k) for k in ("fid", "precision", "recall")}
                         for m, smp in arms},
               "floors": ev["floors"], "known_bad": ev["known_bad"], "tokenizer": tok["reconstruction"],
               "classifier_test_accuracy": clf["test_accuracy"], "verdict": claim.verdict}
    gate_check = next(c for c in cfg.verdict.checks if c.name in rc.gates)
    gate_outcome = next(o for o in claim.checks if o.name == gate_check.name)
    write_report(paths, claim, metrics, timings, ev=ev, tok=tok, clf=clf, rec=tok["reconstruction"],
                 model=ev["model"], methods=methods, n_seeds=n_seeds, final=final, rc=rc,
                 n_train_steps=int(log.groupby(["method", "seed_index"]).step.max().max()),
                 never=vm[rc.verdict_sampler]["never"], ranking=ranking.to_dict(), floor_rows=floor_rows,
                 final_rows=final_rows, curve_rows=curve_rows, speed_rows=speed_rows(vm),
                 temp_rows=temp_rows, sampler_rows=sampler_rows,
                 other_sampler=next(iter(set(vm) - {rc.verdict_sampler})),
                 power_rows=seeds_to_decide(claim, thresholds), rules=RULES, sizing=SIZING,
                 current_rule=CURRENT_RULE.format(commit=CURRENT_RULE_COMMIT),
                 target_words=TARGET_WORDS[rc.speed_target], min_seeds=cfg.verdict.min_seeds,
                 loss_rows=loss_rows(log, LOSS_WINDOW, LOSS_SPAN), loss_window=LOSS_WINDOW, loss_span=LOSS_SPAN,
                 gate_values=[f"{v:.3f}" for v in per_seed[gate_check.metric]], gate_threshold=gate_check.threshold,
                 gate_holds=gate_outcome.status == "holds")
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
