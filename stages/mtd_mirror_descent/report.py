"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.mtd_mirror_descent.config import PAPER, ReportInputs, load_report
from stages.mtd_mirror_descent.expectations import TRAIN_LOG_COLUMNS

TIMED_STEPS = ("data", "train", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("Transformers Learn Latent Mixture Models In-Context via Mirror Descent "
           "(D'Angelo & Flammarion, ICLR 2026; OpenReview SHidElLSVt, arXiv 2604.10848)"),
    claim=("On sequences from a Mixture of Transition Distributions, a three-layer transformer can compute one step "
           "of entropic mirror descent on the in-context likelihood of the mixture weights (a first-order "
           "approximation of the Bayes predictor), and trained transformers converge to that construction; deeper "
           "models align with more mirror-descent steps."),
    paper_result=("Explicit 3-layer construction of one MD step (layer 1 attention = responsibilities, layer 2 = "
                  "averaging, layer 3 = softmax and prediction); trained models' attention maps match it and deeper "
                  "models' performance aligns with multi-step MD (qualitative; no headline numbers in the abstract)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    evaluation: Path = inp("metrics from evaluate")
    train_log: Path = inp("training losses")


def plot_kl(ev: dict[str, Any], path: Path) -> None:
    """KL(true ‖ prediction) vs context length: estimators as lines, trained models as seed bands."""
    lengths = ev["lengths"]
    with figure(path, figsize=(7.5, 4.5)) as (_, ax):
        for name, curve in ev["kl"].items():
            if name != "oracle":
                ax.plot(lengths, [curve[str(t)] for t in lengths], "--", marker=".", label=name)
        for name, runs in ev["model_kl"].items():
            band(ax, np.asarray(lengths), np.array([[r[str(t)] for t in lengths] for r in runs]), f"trained {name}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("context length T")
        ax.set_ylabel("KL(true next-token law ‖ prediction)")
        ax.set_title("in-context prediction error (oracle λ: KL = 0)")
        ax.legend(fontsize=7, ncol=2)


def plot_attention(ev: dict[str, Any], path: Path) -> bool:
    """Layer-1 attention of the best head of each attention-only model next to γ_k(g)."""
    examples = ev["attention_examples"]
    if not examples:
        return False
    gamma = np.asarray(ev["gamma_example"])
    m = gamma.shape[1]
    with figure(path, 1, len(examples) + 1, figsize=(4 * (len(examples) + 1), 3.8)) as (_, axes):
        for ax, (name, att) in zip(axes, examples.items(), strict=False):
            ax.imshow(np.asarray(att), cmap="viridis", vmin=0, vmax=1)
            ax.set_title(f"{name}: layer-1 attention (seed 0)")
            ax.set_xlabel("key position j")
            ax.set_ylabel("query position i")
        ideal = np.zeros((gamma.shape[0] + m, gamma.shape[0] + m))
        for k in range(gamma.shape[0]):
            for g in range(m):
                ideal[k + m, k + m - g - 1] = gamma[k, g]
        axes[-1].imshow(ideal, cmap="viridis", vmin=0, vmax=1)
        axes[-1].set_title("construction: γ_i(g) at j = i − g")
    return True


def plot_training(log: Any, path: Path, window: int = 50) -> None:
    """Training loss per step (moving average over ``window`` steps), seeds as bands."""
    with figure(path, figsize=(7, 4)) as (_, ax):
        for name, g in log.groupby("model", sort=False):
            runs = np.stack([r.sort_values("step").loss.to_numpy() for _, r in g.groupby("seed_index")])
            w = min(window, runs.shape[1])
            smooth = np.stack([np.convolve(r, np.ones(w) / w, mode="valid") for r in runs])
            band(ax, np.arange(w, runs.shape[1] + 1), smooth, name)
        ax.set_xlabel("step")
        ax.set_ylabel(f"next-token cross-entropy (nats, {window}-step mean)")
        ax.legend(fontsize=8)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed metrics and write the report."""
    ev = read_json(paths.evaluation)
    log = read_parquet(paths.train_log, columns=TRAIN_LOG_COLUMNS)
    timings = read_timings(paths.timings, TIMED_STEPS)
    headline = {k: mean_std(v, 4) for k, v in ev["per_seed"].items()}
    claim = decide_claim(CARD, cfg.verdict, ev["per_seed"], seeds=ev["seeds"], profile=ctx.profile,
                         timings=timings, measured=headline)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_kl(ev, paths.plots / "kl_vs_length.png")
    has_attention = plot_attention(ev, paths.plots / "attention_vs_gamma.png")
    plot_training(log, paths.plots / "training_loss.png")

    lengths = ev["lengths"]
    kl_rows = [{"method": n, **{f"T={t}": c[str(t)] for t in lengths}} for n, c in ev["kl"].items()]
    kl_rows += [{"method": f"trained {n}", **{f"T={t}": mean_std([r[str(t)] for r in runs], 4) for t in lengths}}
                for n, runs in ev["model_kl"].items()]
    close_rows = [{"model": n, **{e: mean_std([r[e] for r in runs], 4) for e in runs[0]},
                   "closest (seed 0..)": ", ".join(min(r, key=r.get) for r in runs)}
                  for n, runs in ev["closeness"].items()]
    shrunk_rows = [{"model": n, **{f"{e} (β)": f"{mean_std([r[e]['tv'] for r in runs], 4)} "
                                   f"(β {', '.join(format(r[e]['beta'], '.2f') for r in runs)})" for e in runs[0]},
                    "closest (seed 0..)": ", ".join(min(r, key=lambda e, r=r: r[e]["tv"]) for r in runs)}
                   for n, runs in ev["shrunk"].items()]
    att_rows = [{"model": n, "trained TV (head chosen on validation)": mean_std([a["trained_tv"] for a in runs], 3),
                 "content-blind positional head TV": mean_std([a["positional_tv"] for a in runs], 3),
                 "untrained TV": mean_std([a["untrained_tv"] for a in runs], 3)}
                for n, runs in ev["attention"].items() if runs]
    reported = {k: mean_std(v, 4) for k, v in ev["reported"].items()}
    per_seed_rows = [{"metric": k, **{f"seed {i}": format(x, ".4f") for i, x in enumerate(v)}}
                     for k, v in {**ev["per_seed"], **ev["reported"]}.items()]
    steps = log.groupby(["model", "seed_index"]).step.max()
    metrics = {"per_seed": ev["per_seed"], "reported": ev["reported"], "kl": ev["kl"], "model_kl": ev["model_kl"],
               "closeness": ev["closeness"], "shrunk": ev["shrunk"], "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, ev=ev, train_steps=int(steps.max()), kl_rows=kl_rows,
                 close_rows=close_rows, shrunk_rows=shrunk_rows, att_rows=att_rows, reported=reported,
                 per_seed_rows=per_seed_rows, has_attention=has_attention)
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
