"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import load_safetensors, read_parquet
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.ndm.config import BASELINES, METHODS, PAPER, TASKS, ReportInputs, load_report
from stages.ndm.verdict import gated_decide

TIMED_STEPS = ("toy", "prompts", "activations", "fit", "patch")
CARD = PaperCard(
    paper=PAPER,
    title=("NDM: unsupervised discovery of interpretable subspaces by neighbour distance minimisation "
           "(ICLR 2026)"),
    claim=("Learning an orthogonal rotation of a model's representation space and a partition of the rotated "
           "dimensions into subspaces, by minimising each point's distance to its nearest neighbour within every "
           "subspace (and merging subspaces of high mutual information), finds the model's 'variables' without "
           "supervision: in toy models the subspaces match the ground truth, and on known circuits the effects "
           "of patching concentrate in few subspaces, far more than for identity, random or PCA bases."),
    paper_result=("Toy settings: subspaces match the ground truth. GPT-2 circuits (IOI, greater-than): average "
                  "Gini of the subspace patching effects 0.71 for NDM vs 0.21 identity, 0.205 random and 0.375 "
                  "PCA; scales to 2B models (context vs parametric knowledge routing)."),
)
GATE_TEXT = ("Positive controls: a claim check counts only when its gates hold on every seed ({gates}); "
             "otherwise it is unclear. The verdict is decided on the claim checks alone")


@dataclass(frozen=True)
class Paths(ReportPaths):
    toy_results: Path = inp("toy scores per seed and method")
    toy_curves: Path = inp("toy NDM losses")
    competence: Path = inp("competence table")
    subspaces: Path = inp("LM rotations and sizes")
    fit_curves: Path = inp("LM NDM losses")
    patch_effects: Path = inp("per-subspace patching effects")
    patch_prompts: Path = inp("per-prompt Gini")


def per_seed_metrics(toy: pd.DataFrame, summary: pd.DataFrame, competence: pd.DataFrame) -> dict[str, list[float]]:
    """The verdict's metrics, one value per seed (the LM gates do not depend on the seed and repeat)."""
    seeds = sorted(toy.seed.unique())
    ari = toy.pivot(index="seed", columns="method", values="ari")
    lm = summary.groupby(["seed", "method", "task"]).gini.mean().groupby(["seed", "method"]).mean().unstack()
    lm_seeds = sorted(summary.seed.unique()) or seeds
    kept = competence.groupby("task").kept.sum().reindex(list(TASKS), fill_value=0)
    first = summary[(summary.seed == lm_seeds[0]) & (summary.method == "ndm")] if len(summary) else summary
    fraction = float(((first.clean_ld - first.full_patch_ld) / first.clean_ld).mean()) if len(first) else math.nan
    return {
        "toy_ari_ndm": [float(ari.loc[s, "ndm"]) for s in seeds],
        "toy_ari_margin": [float(ari.loc[s, "ndm"] - ari.loc[s, list(BASELINES)].max()) for s in seeds],
        "toy_oracle_ari": [float(ari.loc[s, "oracle"]) for s in seeds],
        "lm_gini_ndm": [float(lm.loc[s, "ndm"]) if s in lm.index else math.nan for s in lm_seeds],
        "lm_gini_margin": [float(lm.loc[s, "ndm"] - lm.loc[s, list(BASELINES)].max()) if s in lm.index
                           else math.nan for s in lm_seeds],
        "lm_kept_min": [float(kept.min())] * len(lm_seeds),
        "lm_full_patch_fraction": [fraction] * len(lm_seeds),
    }


def seeds_for_interval(values: list[float], threshold: float) -> str:
    """Seeds a 95% normal interval needs to exclude the threshold: ⌈(1.96·sd / |mean − threshold|)²⌉."""
    v = np.array([x for x in values if x is not None and math.isfinite(x)])
    if len(v) < 2:
        return "n/a"
    gap = abs(v.mean() - threshold)
    return "∞" if gap == 0 else str(max(2, math.ceil((1.96 * v.std(ddof=1) / gap) ** 2)))


def plot_toy(toy: pd.DataFrame, curves: pd.DataFrame, path: Path) -> None:
    """ARI per method (seeds as points) and the NDM training loss of the kept restart, then fine-tuning, per seed."""
    with figure(path, 1, 2, figsize=(11, 4.2)) as (_, axes):
        methods = [*METHODS, "oracle"]
        for i, m in enumerate(methods):
            vals = toy[toy.method == m].ari.to_numpy()
            axes[0].bar(i, vals.mean(), color="C0" if m == "ndm" else "grey", alpha=0.6)
            axes[0].plot([i] * len(vals), vals, "ko", ms=4)
        axes[0].set_xticks(range(len(methods)), methods)
        axes[0].set_ylabel("ARI of feature → subspace vs true groups")
        axes[0].set_title("toy: subspaces vs ground truth")
        for seed, g in curves.groupby("seed"):
            g = g.sort_values("step")
            axes[1].plot(g.step, g.loss, lw=0.8, label=f"seed {seed}")
        axes[1].set_xlabel("step")
        axes[1].set_ylabel("Σ subspaces mean NN distance")
        axes[1].legend(fontsize=8)


def plot_lm(summary: pd.DataFrame, effects: pd.DataFrame, path: Path) -> None:
    """Gini per method and task (seeds as points); the mean |effect| of each subspace, sorted, per method."""
    with figure(path, 1, 2, figsize=(11, 4.2)) as (_, axes):
        g = summary.groupby(["seed", "method", "task"]).gini.mean().reset_index()
        width = 0.38
        for j, task in enumerate(TASKS):
            for i, m in enumerate(METHODS):
                vals = g[(g.method == m) & (g.task == task)].gini.to_numpy()
                if len(vals):
                    axes[0].bar(i + (j - 0.5) * width, vals.mean(), width, color=f"C{j}", alpha=0.6,
                                label=task if i == 0 else None)
                    axes[0].plot([i + (j - 0.5) * width] * len(vals), vals, "ko", ms=3)
        axes[0].set_xticks(range(len(METHODS)), METHODS)
        axes[0].set_ylabel("mean Gini of |patching effects|")
        axes[0].legend(fontsize=8)
        for i, m in enumerate(METHODS):
            prof = effects[effects.method == m].assign(a=lambda d: d.effect.abs())
            for j, (_, per_seed) in enumerate(prof.groupby("seed")):
                share = np.sort(per_seed.groupby("subspace").a.mean().to_numpy())[::-1]
                axes[1].plot(np.arange(1, len(share) + 1), share / share.sum(), color=f"C{i}", lw=1,
                             label=m if j == 0 else None)
        axes[1].set_xlabel("subspace rank (by mean |effect|)")
        axes[1].set_ylabel("share of total |effect|")
        axes[1].set_title("effect profile (mean over prompts)")
        axes[1].legend(fontsize=8)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the gated verdict and write the report."""
    toy = read_parquet(paths.toy_results, columns=["seed", "method", "ari", "energy_concentration",
                                                   "dimension_purity", "sizes"])
    curves = read_parquet(paths.toy_curves, columns=["seed", "step", "loss"])
    competence = read_parquet(paths.competence, columns=["task", "clean_ld", "kept"])
    summary = read_parquet(paths.patch_prompts, columns=["seed", "method", "task", "clean_ld", "full_patch_ld",
                                                         "gini"])
    effects = read_parquet(paths.patch_effects, columns=["seed", "method", "subspace", "effect"])
    fit_curves = read_parquet(paths.fit_curves, columns=["seed", "step", "loss"])
    sub = load_safetensors(paths.subspaces)
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = per_seed_metrics(toy, summary, competence)
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=sorted(int(s) for s in toy.seed.unique()),
                         profile=ctx.profile, timings=timings)
    verdict, outcomes = gated_decide(cfg.verdict, per_seed, cfg.report.gates)
    gates = "; ".join(f"{k} needs {', '.join(v)}" for k, v in cfg.report.gates.items())
    claim = claim.model_copy(update={"verdict": verdict, "checks": outcomes,
                                     "verdict_rule": f"{claim.verdict_rule}. {GATE_TEXT.format(gates=gates)}"})

    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_toy(toy, curves, paths.plots / "toy.png")
    plot_lm(summary, effects, paths.plots / "lm_gini.png")

    toy_table = [{"method": m, **{k: mean_std(toy[toy.method == m][k].tolist()) for k in
                                  ("ari", "energy_concentration", "dimension_purity")},
                  "subspace sizes (per seed)": "; ".join(toy[toy.method == m].sizes)} for m in [*METHODS, "oracle"]]
    g = summary.groupby(["seed", "method", "task"]).gini.mean().reset_index()
    lm_table = [{"method": m, **{task: mean_std(g[(g.method == m) & (g.task == task)].gini.tolist())
                                 for task in TASKS},
                 "both tasks": mean_std(g[g.method == m].groupby("seed").gini.mean().tolist())} for m in METHODS]
    lm_seeds = sorted(int(k.split("/")[1]) for k in sub if k.startswith("sizes/"))
    sizes = {s: sub[f"sizes/{s}"].tolist() for s in lm_seeds}
    fit_final = fit_curves.groupby("seed").loss.agg(["first", "last"]).reset_index().to_dict("records")
    power = [{"check": c.name, "seeds for a 95% interval to exclude the threshold":
              seeds_for_interval(per_seed[c.metric], c.threshold)} for c in cfg.verdict.checks]
    comp = competence.groupby("task").agg(patch_prompts=("kept", "size"), kept=("kept", "sum"),
                                          mean_clean_ld=("clean_ld", "mean")).reset_index().to_dict("records")
    metrics = {"per_seed": per_seed, "mean": {k: float(np.nanmean(v)) if len(v) else None
                                              for k, v in per_seed.items()},
               "verdict": claim.verdict, "lm_subspace_sizes": {str(k): v for k, v in sizes.items()}}
    write_report(paths, claim, metrics, timings, toy_cfg=cfg.toy, site=cfg.activations, fit_cfg=cfg.fit,
                 toy_table=toy_table, lm_table=lm_table, sizes=sizes, fit_final=fit_final, power=power,
                 competence=comp, n_kept=int(competence.kept.sum()))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
