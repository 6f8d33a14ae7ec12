"""Step ``report``: mAP per arm and group family, the RS diagnosis, the verdict, report.md and plots."""

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
from stages.detection_debias.config import ARMS, PAPER, ReportInputs, load_report
from stages.detection_debias.expectations import ap_suite
from stages.detection_debias.families import families, family_map, overall_map
from stages.detection_debias.io import read_groups
from stages.detection_debias.representation import percentile_rank

TIMED_STEPS = ("data", "baseline", "train")
FAMILY_ORDER = ("under_represented", "rare_class", "large", "low_diversity", "rare_position", "small", "unplanted")
CARD = PaperCard(
    paper=PAPER,
    title=("Generation-based debiasing for object detection: the representation score and blueprint-guided "
           "synthesis (ICLR 2026; abstract in ../shared/seeds/iclr2026-abstracts.txt, issue 33)"),
    claim=("Instance frequency is an incomplete proxy for what a detector lacks: layouts sampled by a representation "
           "score (frequency x visual and context diversity of a group's ROI features) improve the under-represented "
           "groups, including a frequent but low-diversity one, more than inverse-frequency layouts at the same "
           "synthetic budget, without losing overall mAP."),
    paper_result=("+4.4 / +3.6 mAP on large / rare instances over the baseline detector; generated images' layout "
                  "accuracy 15.9 mAP above prior layout-to-image models (abstract)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    ap: Path = inp("COCO AP per (seed, arm, split, group)")
    groups: Path = inp("per-group RS and sampler probabilities")
    baseline_log: Path = inp("baseline training losses")
    training: Path = inp("augmented arms' training losses")


def verdict_metrics(ap: pd.DataFrame, groups: pd.DataFrame, fam: dict[str, list[int]],
                    n_seeds: int) -> dict[str, list[float]]:
    """Per-seed verdict metrics on the test split: gates (baseline competence, the planted gap) and claims (RS's
    diagnosis of the low-diversity groups; RS-guided minus inverse-frequency layouts on the low-diversity groups,
    all under-represented groups and overall; RS-guided over no augmentation on the under-represented groups).
    The diagnosis is the drop of the low-diversity groups' percentile rank among all groups from the frequency term
    to RS (0 for a score that ignores diversity)."""
    fm = {(arm, f): np.array(family_map(ap, fam[f], arm, "test", n_seeds))
          for arm in ARMS for f in ("under_represented", "low_diversity", "unplanted")}
    overall = {arm: np.array(overall_map(ap, arm, "test", n_seeds)) for arm in ARMS}
    rank = {k: np.array([percentile_rank(groups[groups.seed_index == s].sort_values("group")[k].to_numpy(),
                                         fam["low_diversity"]) for s in range(n_seeds)]) for k in ("rs", "frequency")}
    return {
        "baseline_map": overall["none"].tolist(),
        "baseline_gap_unplanted_minus_underrep": (fm["none", "unplanted"] - fm["none", "under_represented"]).tolist(),
        "rs_lowdiv_rank_drop": (rank["frequency"] - rank["rs"]).tolist(),
        "rs_minus_invfreq_lowdiv": (fm["rs", "low_diversity"] - fm["inverse_frequency", "low_diversity"]).tolist(),
        "rs_minus_invfreq_underrep": (fm["rs", "under_represented"]
                                      - fm["inverse_frequency", "under_represented"]).tolist(),
        "rs_minus_invfreq_overall": (overall["rs"] - overall["inverse_frequency"]).tolist(),
        "rs_minus_none_underrep": (fm["rs", "under_represented"] - fm["none", "under_represented"]).tolist(),
    }


def results_table(ap: pd.DataFrame, fam: dict[str, list[int]], split: str, n_seeds: int) -> list[dict[str, str]]:
    """Per arm: overall mAP and each family's mean group AP (mean ± std over seeds)."""
    rows = []
    for arm in ARMS:
        row = {"arm": arm, "overall": mean_std(overall_map(ap, arm, split, n_seeds))}
        row.update({f: mean_std(family_map(ap, fam[f], arm, split, n_seeds)) for f in FAMILY_ORDER})
        rows.append(row)
    return rows


def group_table(ap: pd.DataFrame, groups: pd.DataFrame, names: dict[int, str],
                fam: dict[str, list[int]]) -> list[dict[str, Any]]:
    """Per group (means over seeds): training count, F, normalised diversities, RS, both samplers' probabilities,
    test AP per arm, and its planted families."""
    g = groups.groupby("group").mean(numeric_only=True)
    t = ap[(ap.split == "test") & (ap.group >= 0)].groupby(["group", "arm"]).ap.mean().unstack()
    rows = []
    for gid in sorted(names):
        rows.append({"group": names[gid], "plants": ", ".join(f for f in ("rare_class", "large", "low_diversity",
                                                                          "rare_position") if gid in fam[f]) or "–",
                     "train count": round(g.loc[gid, "count"]), "F": f"{g.loc[gid, 'frequency']:.3f}",
                     "D_vis": f"{g.loc[gid, 'd_vis_norm']:.2f}", "D_ctx": f"{g.loc[gid, 'd_ctx_norm']:.2f}",
                     "RS": f"{g.loc[gid, 'rs']:.3f}", "p inv-freq": f"{g.loc[gid, 'p_inverse_frequency']:.3f}",
                     "p RS": f"{g.loc[gid, 'p_rs']:.3f}",
                     **{f"AP {arm}": f"{t.loc[gid, arm]:.3f}" if gid in t.index else "n/a" for arm in ARMS}})
    return rows


def plot_families(ap: pd.DataFrame, fam: dict[str, list[int]], n_seeds: int, path: Path) -> None:
    """Test mAP per family and arm, each seed a dot."""
    shown = ("under_represented", "rare_class", "large", "low_diversity", "rare_position", "unplanted")
    with figure(path, figsize=(9, 4)) as (_, ax):
        width = 0.8 / len(ARMS)
        for j, arm in enumerate(ARMS):
            vals = [family_map(ap, fam[f], arm, "test", n_seeds) for f in shown]
            x = np.arange(len(shown)) + (j - (len(ARMS) - 1) / 2) * width
            ax.bar(x, [np.nanmean(v) for v in vals], width, label=arm, color=f"C{j}", alpha=0.7)
            for xi, v in zip(x, vals, strict=True):
                ax.scatter([xi] * len(v), v, color="k", s=6, zorder=3)
        ax.set_xticks(np.arange(len(shown)), [f.replace("_", "\n") for f in shown], fontsize=8)
        ax.set_ylabel("test mAP (mean AP over the family's groups)")
        ax.legend(fontsize=8)


def plot_scores(groups: pd.DataFrame, fam: dict[str, list[int]], path: Path) -> None:
    """Per group: frequency term vs RS (seed means); the low-diversity and rare groups marked."""
    g = groups.groupby("group").mean(numeric_only=True)
    with figure(path, figsize=(5.5, 4.2)) as (_, ax):
        ax.scatter(g.frequency, g.rs, color="0.6", label="other groups")
        for f, colour in (("rare_class", "C1"), ("large", "C2"), ("low_diversity", "C3"), ("rare_position", "C4")):
            ax.scatter(g.frequency[fam[f]], g.rs[fam[f]], color=colour, label=f, s=18)
        lim = float(max(g.frequency.max(), g.rs.max())) * 1.05
        ax.plot([0, lim], [0, lim], "k:", lw=0.8)
        ax.set_xlabel("frequency term F")
        ax.set_ylabel("representation score RS")
        ax.legend(fontsize=7)


def plot_losses(log: list[dict[str, Any]], training: list[dict[str, Any]], path: Path) -> None:
    """Training loss curves per arm, seeds as bands."""
    with figure(path, figsize=(6, 3.6)) as (_, ax):
        curves = {"none": [r["loss"] for r in log]}
        for r in training:
            curves.setdefault(r["arm"], []).append(r["loss"])
        for j, arm in enumerate(ARMS):
            runs = np.array(curves.get(arm, []))
            if runs.size:
                band(ax, np.arange(runs.shape[1]), runs, arm, f"C{j}")
        ax.set_xlabel("logged interval")
        ax.set_ylabel("training loss")
        ax.set_yscale("log")
        ax.legend(fontsize=8)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict and write the report."""
    bins = cfg.data.bins()
    ap = read_parquet(paths.ap, ["seed_index", "arm", "split", "group", "ap"])
    validate_table(ap, f"{PAPER}.ap", ap_suite(len(ap), bins.n_groups))
    groups = read_groups(paths.groups, bins.n_groups)
    log, training = read_json(paths.baseline_log), read_json(paths.training)
    n_seeds = int(ap.seed_index.max()) + 1
    d = cfg.data
    fam = families(bins, d.rare_class, d.rare_position_class, d.low_diversity_class, d.low_diversity_size)
    names = {g: bins.name(g) for g in range(bins.n_groups)}
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(ap, groups, fam, n_seeds)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    rank = {k: [percentile_rank(groups[groups.seed_index == s].sort_values("group")[k].to_numpy(), fam["low_diversity"])
                for s in range(n_seeds)] for k in ("rs", "frequency")}
    p_low = {k: [float(groups[(groups.seed_index == s) & groups.group.isin(fam["low_diversity"])][k].sum())
                 for s in range(n_seeds)] for k in ("p_inverse_frequency", "p_rs")}
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_families(ap, fam, n_seeds, paths.plots / "family_map.png")
    plot_scores(groups, fam, paths.plots / "rs_vs_frequency.png")
    plot_losses(log, training, paths.plots / "losses.png")
    fam_test = {arm: {f: family_map(ap, fam[f], arm, "test", n_seeds) for f in FAMILY_ORDER} for arm in ARMS}
    metrics = {"per_seed": per_seed, "verdict": claim.verdict,
               "test_map": {arm: overall_map(ap, arm, "test", n_seeds) for arm in ARMS},
               "val_map": {arm: overall_map(ap, arm, "val", n_seeds) for arm in ARMS},
               "test_family_map": fam_test, "lowdiv_rank": rank, "p_lowdiv": p_low}
    write_report(paths, claim, metrics, timings, n_seeds=n_seeds, cfg=cfg, bins=bins,
                 fam={f: [names[g] for g in fam[f]] for f in fam}, n_groups=bins.n_groups,
                 test_rows=results_table(ap, fam, "test", n_seeds), val_rows=results_table(ap, fam, "val", n_seeds),
                 group_rows=group_table(ap, groups, names, fam), rank=rank, p_low=p_low,
                 per_seed=per_seed, gates=cfg.gates, fam_test=fam_test,
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
