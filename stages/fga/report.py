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
from stages.fga.config import PAPER, ReportInputs, load_report
from stages.fga.expectations import results_suite
from stages.fga.history import FIRST_PILOT, FIRST_RULE, SECOND_PILOT
from stages.fga.sapt import text_passes

TIMED_STEPS = ("pretrain", "views", "adapt")
METHODS = ["zero_shot", "coop", "sapt", "tpt", "zero", "fga_coop", "fga"]
CARD = PaperCard(
    paper=PAPER,
    title=("FGA: Flatness-Guided Adaptation for test-time adaptation of vision-language models (ICLR 2026; "
           "abstract in ../shared/seeds/iclr2026-abstracts.txt, issue 31)"),
    claim=("Prompts tuned by sharpness-aware minimisation (SAPT) reach a flat minimum; at test time, keeping the "
           "augmented views with the lowest entropy plus loss sharpness under prompt perturbations and voting "
           "(no parameter update) beats test-time prompt tuning (TPT) and confidence-filtered voting (Zero) under "
           "distribution shift, at a fraction of TPT's cost."),
    paper_result=("Better than prevalent TTA methods on domain-generalisation and cross-data-set benchmarks; "
                  "+4.55 points over the state of the art on ImageNet-A with a ViT-B/16 image encoder (abstract)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    results: Path = inp("accuracy per seed, split, method and shift")
    adaptation: Path = inp("tuned knobs, validation grids, prompt sharpness, passes per test image")


def shifted_average(results: pd.DataFrame, method: str, n_seeds: int) -> list[float]:
    """Per seed, one method's test accuracy averaged over the shifted test sets (clean excluded)."""
    part = results[(results.split == "test") & (results.method == method) & (results.kind != "clean")]
    means = part.groupby("seed_index").accuracy.mean()
    return [float(means.get(s, np.nan)) for s in range(n_seeds)]


def clean_accuracy(results: pd.DataFrame, method: str, n_seeds: int) -> list[float]:
    """Per seed, one method's accuracy on the clean test images."""
    part = results[(results.split == "test") & (results.method == method) & (results.kind == "clean")]
    means = part.groupby("seed_index").accuracy.mean()
    return [float(means.get(s, np.nan)) for s in range(n_seeds)]


def verdict_metrics(results: pd.DataFrame, adaptation: dict[str, Any]) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: the gate, FGA's paired differences on the shifted average, the sharpness ratio."""
    n = adaptation["n_seeds"]
    avg = {m: np.array(shifted_average(results, m, n)) for m in ("fga", "fga_coop", "tpt", "zero", "sapt", "coop")}
    return {"clean_zero_shot_accuracy": clean_accuracy(results, "zero_shot", n),
            "views_vote_minus_single": (avg["zero"] - avg["coop"]).tolist(),
            "fga_minus_tpt": (avg["fga"] - avg["tpt"]).tolist(),
            "fga_minus_zero": (avg["fga"] - avg["zero"]).tolist(),
            "fga_coop_minus_zero": (avg["fga_coop"] - avg["zero"]).tolist(),
            "fga_minus_sapt": (avg["fga"] - avg["sapt"]).tolist(),
            "sharpness_ratio_sapt_over_coop": [s["sharpness_ratio"] for s in adaptation["seeds"]],
            "fga_text_passes_over_tpt": [s["text_passes_fga_over_tpt"] for s in adaptation["seeds"]]}


def accuracy_rows(results: pd.DataFrame, n_seeds: int, conditions: list[list[Any]]) -> list[dict[str, Any]]:
    """Mean ± std over seeds: one row per method, one column per test condition and the shifted average."""
    rows = []
    for m in METHODS:
        row: dict[str, Any] = {"method": m}
        for _, kind, sev in conditions:
            part = results[(results.split == "test") & (results.method == m) & (results.kind == kind)
                           & (results.severity == sev)].sort_values("seed_index")
            row[kind if kind == "clean" else f"{kind}-{sev}"] = mean_std(part.accuracy.tolist(), 3) if len(part) \
                else "–"
        row["shifted average"] = mean_std(shifted_average(results, m, n_seeds), 3)
        rows.append(row)
    return rows


def cost_rows(adaptation: dict[str, Any]) -> list[dict[str, Any]]:
    """Counted passes per shifted test image, mean over seeds, per method."""
    rows = []
    for m in METHODS:
        per = [s["passes_per_image"][m] for s in adaptation["seeds"] if m in s["passes_per_image"]]
        if per:
            rows.append({"method": m, **{f: f"{np.mean([p[f] for p in per]):.3f}"
                                         for f in ("image_forward", "text_forward", "text_backward")},
                         "text-side passes": f"{np.mean([text_passes(p) for p in per]):.3f}"})
    return rows


def knob_rows(adaptation: dict[str, Any]) -> list[dict[str, Any]]:
    """Per seed and method: the knobs chosen on the validation shifts and their validation accuracy."""
    return [{"seed": s["seed_index"], "method": m,
             "knobs": ", ".join(f"{k}={v:g}" for k, v in s["knobs"][m].items()),
             "validation accuracy": f"{s['validation_best'][m]:.3f}"}
            for s in adaptation["seeds"] for m in s["knobs"]]


def sharpness_row(seed: dict[str, Any]) -> dict[str, Any]:
    """One seed's measured prompt sharpness of CoOp and SAPT at FGA's chosen radius, and their ratio."""
    rho = f"{seed['sharpness_rho']:g}"
    ratio = seed["sharpness_ratio"]
    return {"seed": seed["seed_index"], "rho": rho, "CoOp": f"{seed['sharpness']['coop_rho=' + rho]:.4f}",
            "SAPT": f"{seed['sharpness']['sapt_rho=' + rho]:.4f}", "ratio": "n/a" if ratio is None else f"{ratio:.3f}"}


def plot_shifts(results: pd.DataFrame, conditions: list[list[Any]], path: Path) -> None:
    """Test accuracy per shift and method (mean over seeds, each seed a dot)."""
    shifted = [c for c in conditions if c[1] != "clean"]
    with figure(path, figsize=(12, 4)) as (_, ax):
        width = 0.8 / len(METHODS)
        for j, m in enumerate(METHODS):
            x = np.arange(len(shifted)) + (j - (len(METHODS) - 1) / 2) * width
            for xi, (_, kind, sev) in zip(x, shifted, strict=True):
                v = results[(results.split == "test") & (results.method == m) & (results.kind == kind)
                            & (results.severity == sev)].accuracy.to_numpy()
                ax.bar(xi, v.mean(), width, color=f"C{j}", alpha=0.8, label=m if xi == x[0] else None)
                ax.scatter(np.full(len(v), xi), v, color="black", s=5, zorder=3)
        ax.set_xticks(np.arange(len(shifted)), [f"{k}-{s}" for _, k, s in shifted])
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7, ncol=4)


def decomposition(results: pd.DataFrame, n_seeds: int) -> dict[str, list[float]]:
    """Per seed, on the shifted average: what the views, FGA's selection and SAPT's prompt each add."""
    avg = {m: shifted_average(results, m, n_seeds) for m in ("coop", "zero", "fga_coop", "fga")}
    pairs = {"views (zero − coop)": ("zero", "coop"), "selection (fga_coop − zero)": ("fga_coop", "zero"),
             "prompt (fga − fga_coop)": ("fga", "fga_coop")}
    return {name: [a - b for a, b in zip(avg[x], avg[y], strict=True)] for name, (x, y) in pairs.items()}


def pilot_rows(pilot: dict[str, Any]) -> list[dict[str, Any]]:
    """Per view policy of the second pilot: validation accuracy per method at its knobs and the two new differences."""
    def seeds(v: list[float], spec: str = ".3f") -> str:
        return " / ".join(f"{x:{spec}}" for x in v)

    return [{"view policy": name, **{m: seeds(p["validation_best"][m]) for m in ("coop", "zero", "tpt", "fga_coop",
                                                                                   "fga")},
             "zero − coop": seeds(p["views_vote_minus_single"], "+.3f"),
             "fga_coop − zero": seeds(p["fga_coop_minus_zero"], "+.3f")}
            for name, p in pilot["policies"].items()]


def rule_text(cfg: ReportInputs) -> str:
    """The registered checks as 'name op threshold' (gates marked)."""
    return "; ".join(f"{c.name} {c.op} {c.threshold:g}" + (" [gate]" if c.name in cfg.gates else "")
                     for c in cfg.verdict.checks) + "."


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed results and write the report."""
    adaptation = read_json(paths.adaptation)
    results = read_parquet(paths.results)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), METHODS))
    n_seeds = adaptation["n_seeds"]
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(results, adaptation)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    conditions = sorted(adaptation["test_conditions"], key=lambda c: c[1] != "clean")  # clean first
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_shifts(results, conditions, paths.plots / "accuracy_by_shift.png")
    avg = {m: float(np.mean(shifted_average(results, m, n_seeds))) for m in METHODS}
    clean = {m: float(np.mean(clean_accuracy(results, m, n_seeds))) for m in ("zero_shot", "coop", "sapt")}
    lam = [s["knobs"]["fga"]["lambda"] for s in adaptation["seeds"]]
    lam_coop = [s["knobs"]["fga_coop"]["lambda"] for s in adaptation["seeds"]]
    parts = decomposition(results, n_seeds)
    grids = {m: len(g) for m, g in adaptation["seeds"][0]["validation_grids"].items()}
    kinds = {split: sorted({c[1] for c in adaptation[f"{split}_conditions"] if c[1] != "clean"})
             for split in ("test", "val")}
    sharp = [sharpness_row(s) for s in adaptation["seeds"]]
    costs = {r["method"]: r for r in cost_rows(adaptation)}
    metrics = {"per_seed": per_seed, "shifted_average": {m: shifted_average(results, m, n_seeds) for m in METHODS},
               "clean": {m: clean_accuracy(results, m, n_seeds) for m in ("zero_shot", "coop", "sapt")},
               "passes_per_image": {m: {k: float(v) for k, v in r.items() if k != "method"} for m, r in costs.items()},
               "validation_best": {m: [s["validation_best"][m] for s in adaptation["seeds"]]
                                   for m in adaptation["seeds"][0]["validation_best"]},
               "decomposition": parts,
               "verdict": claim.verdict}
    ratios = [r for r in per_seed["sharpness_ratio_sapt_over_coop"] if r is not None]
    write_report(paths, claim, metrics, timings, ad=adaptation, n_seeds=n_seeds, avg=avg, clean=clean,
                 ratio_min=min(ratios, default=None), ratio_max=max(ratios, default=None),
                 lambdas=lam, lambdas_coop=lam_coop, grids=grids, kinds=kinds,
                 parts=[{"difference": k, "per seed": ", ".join(f"{v:+.3f}" for v in vals),
                         "mean": f"{float(np.mean(vals)):+.3f}"} for k, vals in parts.items()],
                 selection_mean=float(np.mean(parts["selection (fga_coop − zero)"])),
                 views_mean=float(np.mean(parts["views (zero − coop)"])),
                 n_perturb=adaptation["n_perturbations"], pilot1=FIRST_PILOT, rule1=FIRST_RULE,
                 val_best=metrics["validation_best"], pilot2={**SECOND_PILOT, "margins": rule_text(cfg)},
                 pilot2_rows=pilot_rows(SECOND_PILOT), per_seed=per_seed, views_cfg=adaptation["views"],
                 acc_rows=accuracy_rows(results, n_seeds, conditions), cost_rows=list(costs.values()),
                 knob_rows=knob_rows(adaptation), sharp_rows=sharp, gates=cfg.gates,
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
