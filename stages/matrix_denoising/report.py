"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.matrix_denoising.config import PAPER, ReportInputs, limit_threads, load_report
from stages.matrix_denoising.expectations import INSTANCES_COLUMNS, THEORY_COLUMNS, TRAJECTORIES_COLUMNS
from stages.matrix_denoising.theory import bbp_overlaps

TIMED_STEPS = ("data", "train", "flow_studies", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title="Gradient Descent Dynamics of Rank-One Matrix Denoising (ICLR 2026, OpenReview S5oAnaIbgb)",
    claim=("In the large-dimension limit, the overlaps of gradient-descent estimates with the true singular "
           "vectors follow closed-form trajectories (random matrix theory), converge to the BBP overlaps above "
           "λ_c = c^{1/4} and to 0 below, and stall when the initial overlaps have a specific SNR-dependent ratio."),
    paper_result=("Qualitative (no headline numbers in the abstract): closed-form trajectories agree with "
                  "simulations; long-time limit aligns with the BBP transition; estimation is infeasible at a "
                  "specific ratio of the initial overlaps that depends on the SNR and the dimensions."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    instances: Path = inp("instance specs")
    trajectories: Path = inp("RGD trajectories")
    theory: Path = inp("theory curves")
    evaluation: Path = inp("metrics from evaluate")


def plot_trajectories(traj: pd.DataFrame, theory: pd.DataFrame, instances: pd.DataFrame,
                      lams: list[float], init: str, path: Path) -> None:
    """q_u(t), q_v(t): simulation (seeds as bands) beside the closed-form theory."""
    with figure(path, 1, 2, figsize=(11, 4.2), sharey=True) as (_, axes):
        for lam in lams:
            ids = instances[(np.isclose(instances.lam, lam)) & (instances.init == init)].instance.unique()
            th = theory[np.isclose(theory.lam, lam) & (theory.init == init)].sort_values("t")
            for ax, col in zip(axes, ("q_u", "q_v"), strict=True):
                runs = np.stack([traj[(traj.instance == i) & (traj.init == init)].sort_values("t")[col].to_numpy()
                                 for i in ids])
                t = np.sort(traj.t.unique())
                band(ax, t, runs, f"RGD λ={lam:g}")
                ax.plot(th.t, th[col], "k--", lw=1)
        for ax, name in zip(axes, ("u", "v"), strict=True):
            ax.set_xlabel("t = kη")
            ax.set_title(f"overlap ⟨{name}*, {name}_t⟩ (dashed: theory)")
        axes[0].set_ylabel("overlap")
        axes[1].legend(fontsize=8)


def plot_limits(evaluation: dict[str, Any], path: Path) -> None:
    """Final overlaps vs λ: RGD at the horizon, top singular vectors, and the BBP curve."""
    c, lam_c = evaluation["c"], evaluation["lambda_c"]
    runs = pd.DataFrame(evaluation["runs"])
    runs = runs[~runs.init.isin(["stall", "stall_mirror"])]
    per_lam = pd.DataFrame(evaluation["per_lambda"])
    grid = np.linspace(min(per_lam.lam.min(), 0.3), per_lam.lam.max() * 1.05, 400)
    bbp = np.array([bbp_overlaps(lam, c) for lam in grid])
    with figure(path, 1, 2, figsize=(11, 4.2), sharey=True) as (_, axes):
        for ax, k, name in ((axes[0], 0, "u"), (axes[1], 1, "v")):
            agg = runs.assign(a=abs(runs[f"final_q_{name}"])).groupby("lam").a.agg(["mean", "std"]).reset_index()
            ax.plot(grid, bbp[:, k], "k-", label="BBP limit (theory)")
            ax.errorbar(agg.lam, agg["mean"], yerr=agg["std"], fmt="o", label="RGD at horizon |q|")
            ax.plot(per_lam.lam, per_lam[f"svd_q_{name}"], "s", mfc="none", label="top singular vector")
            ax.axvline(lam_c, color="grey", ls=":", label="λ_c = c^{1/4}")
            w = evaluation["transition_window"]
            ax.axvspan(lam_c - w, lam_c + w, color="grey", alpha=0.12, lw=0)
            ax.set_xlabel("SNR λ")
            ax.set_title(f"final overlap with {name}*")
        axes[0].set_ylabel("|overlap|")
        axes[0].legend(fontsize=8)


def plot_stall(traj: pd.DataFrame, theory: pd.DataFrame, instances: pd.DataFrame, path: Path) -> bool:
    """The stall pair at the smallest λ that has one: on the stall set vs its mirror (same |α|)."""
    stall = instances[instances.init == "stall"]
    if stall.empty:
        return False
    lam = float(stall.lam.min())
    with figure(path, figsize=(6.4, 4.2)) as (_, ax):
        for init in ("stall", "stall_mirror"):
            ids = instances[np.isclose(instances.lam, lam) & (instances.init == init)].instance.unique()
            runs = np.stack([traj[(traj.instance == i) & (traj.init == init)].sort_values("t").q_u.to_numpy()
                             for i in ids])
            band(ax, np.sort(traj.t.unique()), runs, f"RGD {init}")
            th = theory[np.isclose(theory.lam, lam) & (theory.init == init)].sort_values("t")
            ax.plot(th.t, th.q_u, "k--", lw=1)
        ax.axhline(bbp_overlaps(lam, float(instances.p.iloc[0] / instances.n.iloc[0]))[0], color="grey", ls=":")
        ax.set_xlabel("t")
        ax.set_ylabel("⟨u*, u_t⟩")
        ax.set_title(f"stall set vs mirror, λ={lam:g} (dashed: theory; dotted: BBP)")
        ax.legend(fontsize=8)
    return True


def plot_scaling(fss: dict[str, Any], path: Path) -> None:
    """Finite-size scaling: mean |simulation − theory| at fixed times vs n, per seed, log–log."""
    gaps = pd.DataFrame(fss["gaps"])
    per = gaps.groupby(["seed_index", "n"]).gap.mean().reset_index()
    sizes = np.array(fss["sizes"], dtype=float)
    with figure(path, figsize=(6.4, 4.4)) as (_, ax):
        for s, g in per.groupby("seed_index"):
            ax.plot(g.n, g.gap, "o-", lw=1, alpha=0.7, label=f"seed {s}")
        mean = per.groupby("n").gap.mean()
        ax.plot(sizes, mean.iloc[0] * (sizes / sizes[0]) ** -0.5, "k--", lw=1, label="∝ n^(-1/2) (reference)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n (c = p/n fixed)")
        ax.set_ylabel("mean |q − q_theory| at fixed t")
        ax.set_title("finite-size approach to the closed-form trajectories")
        ax.legend(fontsize=7)


def plot_ratio_scan(scan_rows: list[dict[str, Any]], path: Path) -> None:
    """Settle time vs r = (α_u/α_v)/(predicted stall ratio), one band per λ over seeds."""
    rows = pd.DataFrame(scan_rows)
    with figure(path, figsize=(6.4, 4.4)) as (_, ax):
        for lam, g in rows.groupby("lam"):
            ratios = np.asarray(g.ratios.iloc[0])
            band(ax, ratios, np.stack([np.asarray(v) for v in g.settle_times]), f"λ={lam:g}")
        ax.axvline(1.0, color="grey", ls=":", label="predicted stall ratio")
        ax.set_xlabel("r = (α_u/α_v) / predicted stall ratio")
        ax.set_ylabel("settle time of |⟨u*, u_t⟩|")
        ax.set_title("initial-overlap ratio scan")
        ax.legend(fontsize=8)


def plot_transition(transition: dict[str, Any], path: Path) -> None:
    """Long-time squared overlap vs λ per seed, the fitted λ̂ and the predicted c^(1/4)."""
    curves = pd.DataFrame(transition["curves"])
    est = pd.DataFrame(transition["per_seed"])
    with figure(path, figsize=(6.4, 4.4)) as (_, ax):
        for s, g in curves.groupby("seed_index"):
            ax.plot(g.lam, g.sq, ".-", lw=0.8, alpha=0.7, label=f"seed {s}")
        ax.axvline(transition["lambda_c"], color="k", ls=":", label="c^(1/4) (prediction)")
        ax.axvline(float(est.lambda_hat.mean()), color="r", ls="--", lw=1, label="λ̂ (hinge fit, mean)")
        ax.set_xlabel("SNR λ")
        ax.set_ylabel("(q_u² + q_v²)/2 at long time")
        ax.set_title(f"transition located from data (p = {transition['p']}, n = {transition['n']})")
        ax.legend(fontsize=7)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed metrics and write the report."""
    limit_threads(cfg.report.max_threads, ctx.threads)
    instances = read_parquet(paths.instances, columns=INSTANCES_COLUMNS)
    traj = read_parquet(paths.trajectories, columns=TRAJECTORIES_COLUMNS)
    theory = read_parquet(paths.theory, columns=THEORY_COLUMNS)
    ev = read_json(paths.evaluation)
    timings = read_timings(paths.timings, TIMED_STEPS)
    # gradient descent runs ev["seeds"]; the flow studies run their own (more) seeds
    seeds = sorted(set(ev["seeds"]) | set(ev["fss"]["seeds"]))
    claim = decide_claim(CARD, cfg.verdict, ev["per_seed"], seeds=seeds, profile=ctx.profile, timings=timings)

    paths.plots.mkdir(parents=True, exist_ok=True)
    first_init = instances.init.iloc[0]
    plot_trajectories(traj, theory, instances, cfg.report.trajectory_lambdas, first_init,
                      paths.plots / "trajectories.png")
    plot_limits(ev, paths.plots / "limits_vs_lambda.png")
    has_stall = plot_stall(traj, theory, instances, paths.plots / "stall.png")
    plot_scaling(ev["fss"], paths.plots / "finite_size_scaling.png")
    plot_ratio_scan(ev["scan"]["rows"], paths.plots / "ratio_scan.png")
    plot_transition(ev["transition"], paths.plots / "transition.png")

    metrics = {"per_seed": ev["per_seed"], "mean": {k: float(np.nanmean(v)) for k, v in ev["per_seed"].items()},
               "verdict": claim.verdict, "c": ev["c"], "lambda_c": ev["lambda_c"],
               "fss_exponent_interval": ev["fss"]["exponent_interval"]}
    gaps = pd.DataFrame(ev["fss"]["gaps"])
    fss_table = (gaps.groupby(["n", "seed_index"]).gap.mean().reset_index().groupby("n").gap
                 .agg(["mean", "std"]).reset_index().rename(columns={"mean": "gap_mean", "std": "gap_std"}))
    fss_by_lambda = gaps.pivot_table(index="lam", columns="n", values="gap", aggfunc="mean").reset_index()
    fss_by_lambda.columns = [str(c) if c == "lam" else f"n={c}" for c in fss_by_lambda.columns]
    scan_rows = pd.DataFrame(ev["scan"]["rows"]).drop(columns=["settle_times", "ratios"])
    above = ev["per_seed"]["max_trajectory_gap_above"]
    first = instances.iloc[0]
    write_report(paths, claim, metrics, timings, ev=ev, p=int(first.p), n=int(first.n),
                 lambdas=sorted(pd.DataFrame(ev["per_lambda"]).lam.tolist()),
                 inits=sorted(instances.init.unique().tolist()),
                 per_lambda=ev["per_lambda"], stall=ev["stall"] if has_stall else None,
                 fss=ev["fss"], fss_starts=int(gaps.init.nunique()),
                 fss_table=fss_table.to_dict(orient="records"),
                 fss_by_lambda=fss_by_lambda.to_dict(orient="records"),
                 scan_rows=scan_rows.to_dict(orient="records"), transition=ev["transition"],
                 old_gap_above_failing=sum(1 for v in above if v > 0.05), old_gap_seeds=len(above))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
