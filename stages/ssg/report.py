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
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.ssg.config import PAPER, ReportInputs, load_report
from stages.ssg.expectations import results_suite, train_log_suite
from stages.ssg.history import ISSUE_TARGET_PARAMETERS, PAPER_GRID, RULES, RUN_NOTE, SIZE_REASON, SIZING

TIMED_STEPS = ("data", "tokenizer", "train", "evaluate")
ARMS = ["none", "ssg_dse", "ssg_bilinear", "ssg_nearest", "temperature", "marginal", "reconstruction"]
SAMPLED = ["none", "ssg_dse", "ssg_bilinear", "ssg_nearest", "temperature"]
SSG_ARMS = ["ssg_dse", "ssg_bilinear", "ssg_nearest"]
CARD = PaperCard(
    paper=PAPER,
    title=("Scaled Spatial Guidance (SSG): training-free, inference-time guidance of visual autoregressive "
           "next-scale models through the semantic residual and Discrete Spatial Enhancement (ICLR 2026; abstract "
           "in ../shared/seeds/iclr2026-abstracts.txt, issue 29)"),
    claim=("Adding to each scale's logits their difference from a prior built from the previous scale, with the prior "
           "built by Discrete Spatial Enhancement (the coarse map's low DCT frequencies, the interpolated map's high "
           "ones), improves the fidelity of a VAR model's samples more than bilinear or nearest priors do, beyond what "
           "a sharper softmax gives, at almost no extra sampling cost."),
    paper_result=("FID of VAR-d30 2.02 → 1.68 and of VAR-d16 3.42 → 3.27 with SSG; linear or nearest-neighbour priors "
                  "give little or hurt; latency nearly unchanged (issue 29's summary of the paper)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    results: Path = inp("FD, precision, recall per seed, split, arm and knob")
    evaluation: Path = inp("chosen knobs, per-scale high-frequency shares, counted cost")
    samples: Path = inp("test samples of seed 0 per arm")
    train_log: Path = inp("training loss per seed")
    tokenizer_metrics: Path = inp("tokenizer reconstruction quality")
    var_manifest: Path = inp("the transformers' manifest: sizes, parameters, train and validation loss")


def test_fd(results: pd.DataFrame, arm: str, n_seeds: int) -> np.ndarray:
    """Per seed, one arm's test Fréchet distance."""
    part = results[(results.split == "test") & (results.arm == arm)].set_index("seed_index").fd
    return np.array([float(part.get(s, np.nan)) for s in range(n_seeds)])


def verdict_metrics(results: pd.DataFrame, evaluation: dict[str, Any]) -> dict[str, list[float]]:
    """Per-seed verdict metrics: the gate, DSE-SSG's relative FD gains, the extra FLOPs of DSE-SSG."""
    n = evaluation["n_seeds"]
    fd = {a: test_fd(results, a, n) for a in ("none", "ssg_dse", "ssg_bilinear", "ssg_nearest", "temperature",
                                              "marginal")}
    naive = np.minimum(fd["ssg_bilinear"], fd["ssg_nearest"])
    cost = [s["cost"] for s in evaluation["seeds"]]
    return {"fd_none_over_marginal": (fd["none"] / fd["marginal"]).tolist(),
            "dse_gain_over_none": ((fd["none"] - fd["ssg_dse"]) / fd["none"]).tolist(),
            "dse_gain_over_temperature": ((fd["temperature"] - fd["ssg_dse"]) / fd["temperature"]).tolist(),
            "dse_gain_over_best_naive": ((naive - fd["ssg_dse"]) / naive).tolist(),
            "extra_flops_fraction": [c["ssg_dse"]["flops_per_image"] / c["none"]["flops_per_image"] - 1
                                     for c in cost]}


def arm_rows(results: pd.DataFrame, evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """Test FD, precision, recall (mean ± std over seeds) and the knobs chosen on validation, per arm."""
    test = results[results.split == "test"]
    rows = []
    for arm in ARMS:
        part = test[test.arm == arm].sort_values("seed_index")
        knobs = ""
        if arm in SAMPLED and arm != "none":
            chosen = [s["chosen"][arm] for s in evaluation["seeds"]]
            knobs = ", ".join(f"T={c['temperature']:g}" if arm == "temperature" else f"β={c['beta']:g}"
                              for c in chosen)
        rows.append({"arm": arm, "test FD": mean_std(part.fd.tolist(), 2),
                     "precision": mean_std(part.precision.tolist(), 3), "recall": mean_std(part.recall.tolist(), 3),
                     "knob per seed (validation)": knobs})
    return rows


def validation_rows(results: pd.DataFrame) -> list[dict[str, Any]]:
    """The validation grid: FD per knob, one column per seed."""
    val = results[results.split == "val"]
    rows = []
    for (arm, beta, temp), part in val.groupby(["arm", "beta", "temperature"], sort=False):
        r = {"arm": arm, "β": f"{beta:g}", "T": f"{temp:g}"}
        r.update({f"seed {int(s)}": f"{fd:.2f}" for s, fd in zip(part.seed_index, part.fd, strict=True)})
        rows.append(r)
    return rows


def edge_choices(results: pd.DataFrame, evaluation: dict[str, Any]) -> list[str]:
    """Chosen knobs at the outer edge of their validation grid: an SSG β at the largest β tried, a T at the smallest."""
    val = results[results.split == "val"]
    edges = []
    for s in evaluation["seeds"]:
        for arm in SSG_ARMS:
            top = float(val[val.arm == arm].beta.max())
            if s["chosen"][arm]["beta"] == top:
                edges.append(f"{arm} seed {s['seed_index']} (β = {top:g}, the largest)")
        low = float(val[val.arm == "temperature"].temperature.min())
        if s["chosen"]["temperature"]["temperature"] == low:
            edges.append(f"temperature seed {s['seed_index']} (T = {low:g}, the smallest)")
    return edges


def hf_rows(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean over seeds of the per-scale high-frequency share, per arm, beside the real test images' tokens."""
    scales = evaluation["scales"]
    names = [f"scale {scales[k - 1]}→{scales[k]}" for k in range(1, len(scales))]
    rows = [{"arm": "real (tokenised test images)", **{n: f"{v:.3f}" for n, v in
                                                       zip(names, evaluation["real_high_frequency_share"],
                                                           strict=True)}}]
    for arm in [*SAMPLED, "marginal"]:
        per = np.array([s["high_frequency_share"][arm] for s in evaluation["seeds"]])
        rows.append({"arm": arm, **{n: f"{v:.3f}" for n, v in zip(names, per.mean(0), strict=True)}})
    return rows


def cost_rows(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    """Counted cost per generated image (seed 0; the counts do not depend on the seed)."""
    cost = evaluation["seeds"][0]["cost"]
    base = cost["none"]["flops_per_image"]
    return [{"arm": a, "transformer calls": c["transformer_calls"],
             "forward rows per image": f"{c['forward_rows_per_image']:g}",
             "MFLOP per image": f"{c['flops_per_image'] / 1e6:.3f}",
             "vs none": f"{c['flops_per_image'] / base - 1:+.4%}"} for a, c in cost.items()]


def plot_fd(results: pd.DataFrame, n_seeds: int, path: Path) -> None:
    """Test FD per sampled arm: bars at the mean, each seed a dot."""
    with figure(path, figsize=(7, 3.5)) as (_, ax):
        for i, arm in enumerate(SAMPLED):
            v = test_fd(results, arm, n_seeds)
            ax.bar(i, np.nanmean(v), color=f"C{i}", alpha=0.8)
            ax.scatter(np.full(len(v), i), v, color="black", s=10, zorder=3)
        ax.set_xticks(range(len(SAMPLED)), SAMPLED)
        ax.set_ylabel("test Fréchet distance (lower is better)")


def plot_validation(results: pd.DataFrame, path: Path) -> None:
    """Validation FD against β per prior (mean over seeds), the temperature baseline against 1/T − 1."""
    val = results[results.split == "val"]
    none = val[val.arm == "none"].fd.mean()
    with figure(path, figsize=(7, 3.5)) as (_, ax):
        for i, arm in enumerate(["ssg_dse", "ssg_bilinear", "ssg_nearest"]):
            part = val[val.arm == arm].groupby("beta").fd.mean()
            if len(part):
                ax.plot([0, *part.index], [none, *part.values], "o-", color=f"C{i + 1}", label=arm)
        temp = val[val.arm == "temperature"].groupby("temperature").fd.mean()
        x = [1 / t - 1 for t in temp.index]  # a constant prior at β is the temperature 1/(1+β)
        ax.plot(x, temp.values, "s--", color="C4", label="temperature (x = 1/T − 1)")
        ax.axhline(none, color="C0", lw=1, label="none")
        ax.set_xlabel("β (SSG) or 1/T − 1 (temperature)")
        ax.set_ylabel("validation FD")
        ax.legend(fontsize=7)


def plot_hf(evaluation: dict[str, Any], path: Path) -> None:
    """Per-scale high-frequency share of each arm's code maps beside the real images' tokens."""
    scales = evaluation["scales"]
    x = np.arange(1, len(scales))
    with figure(path, figsize=(7, 3.5)) as (_, ax):
        ax.plot(x, evaluation["real_high_frequency_share"], "k*-", label="real (tokenised)")
        for i, arm in enumerate(SAMPLED):
            per = np.array([s["high_frequency_share"][arm] for s in evaluation["seeds"]])
            ax.plot(x, per.mean(0), "o-", color=f"C{i}", label=arm)
        ax.set_xticks(x, [f"{scales[k - 1]}→{scales[k]}" for k in x])
        ax.set_xlabel("scale")
        ax.set_ylabel("share of DCT energy beyond the coarser scale")
        ax.legend(fontsize=7)


def plot_samples(samples: np.ndarray, names: list[str], path: Path) -> None:
    """One row per arm (real and the marginal known-bad first), seed 0, same labels in every row."""
    rows, cols = samples.shape[:2]
    with figure(path, nrows=rows, ncols=cols, figsize=(cols * 0.8, rows * 0.85)) as (_, axes):
        for r in range(rows):
            for c in range(cols):
                ax = axes[r, c]
                ax.imshow(samples[r, c], cmap="gray", vmin=0, vmax=255)
                ax.set_xticks([])
                ax.set_yticks([])
            axes[r, 0].set_ylabel(names[r], fontsize=6, rotation=0, ha="right")


def plot_loss(log: pd.DataFrame, path: Path) -> None:
    """Training loss per seed."""
    with figure(path, figsize=(6, 3)) as (_, ax):
        for s, part in log.groupby("seed_index"):
            ax.plot(part.step, part.loss, label=f"seed {s}")
        ax.set_xlabel("step")
        ax.set_ylabel("cross-entropy (nats / token)")
        ax.legend(fontsize=7)


def mean_recall(results: pd.DataFrame) -> dict[str, float]:
    """Mean test recall over seeds per sampled arm (the template compares each SSG prior's recall to none's)."""
    test = results[(results.split == "test") & results.arm.isin(SAMPLED)]
    return {a: float(test[test.arm == a].recall.mean()) for a in SAMPLED}


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed results and write the report."""
    evaluation = read_json(paths.evaluation)
    results = read_parquet(paths.results)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), ARMS))
    log = read_parquet(paths.train_log)
    validate_table(log, f"{PAPER}.train_log", train_log_suite(len(log)))
    tok = read_json(paths.tokenizer_metrics)
    samples = np.load(paths.samples, allow_pickle=False)
    n_seeds = evaluation["n_seeds"]
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(results, evaluation)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_fd(results, n_seeds, paths.plots / "fd_by_arm.png")
    plot_validation(results, paths.plots / "validation_grid.png")
    plot_hf(evaluation, paths.plots / "high_frequency_share.png")
    plot_samples(samples, evaluation["grid_rows"], paths.plots / "samples.png")
    plot_loss(log, paths.plots / "training_loss.png")
    fd = {a: test_fd(results, a, n_seeds).tolist() for a in ARMS if a != "reconstruction"}
    recon_fd = float(results[results.arm == "reconstruction"].fd.iloc[0])
    mean_fd = {a: float(np.mean(v)) for a, v in fd.items()}
    none = np.array(fd["none"])
    gains = {a: ((none - np.array(fd[a])) / none).tolist() for a in SAMPLED if a != "none"}
    recall = mean_recall(results)
    var = read_json(paths.var_manifest)
    naive_name = next(c.name for c in cfg.verdict.checks if c.metric == "dse_gain_over_best_naive")
    naive_check = next(c for c in claim.checks if c.name == naive_name)
    metrics = {"per_seed": per_seed, "test_fd": fd, "reconstruction_fd": recon_fd,
               "chosen": [s["chosen"] for s in evaluation["seeds"]], "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, ev=evaluation, tok=tok, n_seeds=n_seeds, fd=mean_fd,
                 recon_fd=recon_fd, arm_rows=arm_rows(results, evaluation), val_rows=validation_rows(results),
                 hf_rows=hf_rows(evaluation), edges=edge_choices(results, evaluation),
                 cost_rows=cost_rows(evaluation), gates=cfg.gates,
                 per_seed=per_seed, var=var, history=RULES, sizing=SIZING, target_parameters=ISSUE_TARGET_PARAMETERS,
                 paper_grid=PAPER_GRID, size_reason=SIZE_REASON, run_note=RUN_NOTE,
                 train_gflops=var["step_flops"] * var["max_steps"] * var["n_seeds"] / timings["train"] / 1e9,
                 epochs=var["max_steps"] * var["batch_size"] / var["n_train_sequences"],
                 naive_holds=naive_check.status == "holds",
                 naive_values=", ".join(f"{v:+.3f}" for v in per_seed["dse_gain_over_best_naive"]),
                 naive_mean=float(np.mean(per_seed["dse_gain_over_best_naive"])),
                 gain_rows=[{"arm": a, "relative FD gain over none, per seed": ", ".join(f"{g:+.3f}" for g in v),
                             "mean": f"{float(np.mean(v)):+.3f}"} for a, v in gains.items()],
                 gain_mean={a: float(np.mean(v)) for a, v in gains.items()},
                 recall=recall, recall_lower=[a for a in SSG_ARMS if recall[a] < recall["none"]],
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
