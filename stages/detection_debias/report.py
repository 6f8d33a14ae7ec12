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
from stages.detection_debias.io import read_groups, read_layouts, read_objects
from stages.detection_debias.representation import percentile_rank

TIMED_STEPS = ("data", "generator", "baseline", "train")
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
    training: Path = inp("augmented arms' training losses; the generator's layout accuracy per seed")
    generator_log: Path = inp("the generator's training curve and validation L1")
    generator: Path = inp("the generator (sample images for a figure)")
    images: Path = inp("images (the real scenes beside the generated ones)")
    objects: Path = inp("objects of every scene (test-set object counts per group)")
    layouts: Path = inp("synthetic layouts per (seed, arm) (synthetic object counts)")


def layout_accuracy(accuracy: list[dict[str, Any]], split: str, n_seeds: int) -> dict[str, list[float]]:
    """Per seed: the baseline detector's mAP on images generated from a split's layouts, on the split's real
    (procedural) images, and their ratio (the generator's layout accuracy against its upper bound)."""
    by = {r["seed_index"]: r for r in accuracy if r["split"] == split}
    gen = [float(by[s]["generated"]) if s in by else float("nan") for s in range(n_seeds)]
    proc = [float(by[s]["procedural"]) if s in by else float("nan") for s in range(n_seeds)]
    ratio = [g / p if p > 0 else float("nan") for g, p in zip(gen, proc, strict=True)]
    return {"generated": gen, "procedural": proc, "ratio": ratio}


def verdict_metrics(ap: pd.DataFrame, groups: pd.DataFrame, fam: dict[str, list[int]],
                    n_seeds: int, accuracy: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per-seed verdict metrics on the test split: gates (baseline competence, the planted gap) and claims (RS's
    diagnosis of the low-diversity groups; the generator's layout accuracy against the procedural renderer; RS-guided
    minus inverse-frequency layouts on the low-diversity groups,
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
        "generated_layout_map_ratio": layout_accuracy(accuracy, "test", n_seeds)["ratio"],
        "baseline_gap_unplanted_minus_underrep": (fm["none", "unplanted"] - fm["none", "under_represented"]).tolist(),
        "rs_lowdiv_rank_drop": (rank["frequency"] - rank["rs"]).tolist(),
        "rs_minus_invfreq_lowdiv": (fm["rs", "low_diversity"] - fm["inverse_frequency", "low_diversity"]).tolist(),
        "rs_minus_invfreq_underrep": (fm["rs", "under_represented"]
                                      - fm["inverse_frequency", "under_represented"]).tolist(),
        "rs_minus_invfreq_overall": (overall["rs"] - overall["inverse_frequency"]).tolist(),
        "rs_minus_none_underrep": (fm["rs", "under_represented"] - fm["none", "under_represented"]).tolist(),
    }


def t_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of per-seed values (n - 1 degrees of freedom)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return float(v.mean()) - half, float(v.mean()) + half


def power_with_t(rows: list[dict[str, Any]], per_seed: dict[str, list[float]],
                 metric_of: dict[str, str]) -> list[dict[str, Any]]:
    """The power table with each check's t-based 95% interval of its mean beside the normal-approximation count."""
    out = []
    for r in rows:
        lo, hi = t_interval(per_seed[metric_of[r["check"]]])
        out.append({**r, "t 95% interval of the mean": f"[{lo:.4f}, {hi:.4f}]"})
    return out


def rule_history(old: Any, per_seed: dict[str, list[float]], rank_rs: list[float], n_seeds: int,
                 profile: str, timings: dict[str, float]) -> tuple[str, list[dict[str, str]]]:
    """An earlier rule (the provisional one, or the one of the earlier default run) applied to this run: its
    verdict and each check's status."""
    measured = {**per_seed, "rs_lowdiv_rank": rank_rs}
    raw = decide_claim(CARD, old.verdict, measured, seeds=list(range(n_seeds)), profile=profile, timings=timings)
    claim = gated_verdict(raw, old.gates)
    return claim.verdict, [{"check": o.name, "rule": c.describe().split(": ", 1)[1], "status": o.status,
                            "status without the gates": r.status,
                            "per-seed values": ", ".join("n/a" if v is None else f"{v:.3f}" for v in o.values)}
                           for o, r, c in zip(claim.checks, raw.checks, old.verdict.checks, strict=True)]


def per_seed_text(values: list[float], spec: str = "+.3f") -> str:
    """Per-seed values as one string, seeds separated by slashes."""
    return "/".join(format(v, spec) for v in values)


def confounds(ap: pd.DataFrame, groups: pd.DataFrame, objects: pd.DataFrame, layouts: pd.DataFrame,
              fam: dict[str, list[int]], sizes: list[int], n_seeds: int) -> dict[str, Any]:
    """Numbers behind the confounds: RS - inverse-frequency per family and the low-diversity groups' share of the
    under-represented difference, synthetic object counts per arm, test objects per group, uniform sampling."""
    def diff(members: list[int]) -> list[float]:
        return (np.array(family_map(ap, members, "rs", "test", n_seeds))
                - np.array(family_map(ap, members, "inverse_frequency", "test", n_seeds))).tolist()

    n_groups = len(sizes)
    under, low = fam["under_represented"], fam["low_diversity"]
    rest = [g for g in under if g not in low]
    share = (np.array(diff(low)) * len(low) / len(under)).tolist()
    synth = layouts.groupby(["arm", "seed_index"]).size()
    low_synth = layouts[layouts.group.isin(low)].groupby(["arm", "seed_index"]).size()
    test = objects[objects.split == "test"].groupby("group").size().reindex(range(n_groups), fill_value=0)
    others = [g for g in range(n_groups) if g not in fam["large"]]
    arms = sorted(layouts.arm.unique())
    diffs = {f: diff(fam[f]) for f in ("low_diversity", "rare_class", "rare_position", "large", "under_represented")}
    under_mean = float(np.mean(diffs["under_represented"]))
    return {
        "not_improved": [f for f in ("rare_class", "rare_position", "large") if not all(v > 0 for v in diffs[f])],
        "low_share_fraction": float(np.mean(share)) / under_mean if under_mean else float("nan"),
        "d_vis_by_size": {name: float(groups[groups.group.isin([g for g in range(n_groups) if sizes[g] == k])]
                                      .d_vis_norm.mean()) for k, name in enumerate(("small", "medium", "large"))},
        "diff": {f: per_seed_text(diff(fam[f])) for f in ("low_diversity", "rare_class", "rare_position", "large",
                                           "under_represented")},
        "n_low": len(low), "n_under": len(under), "n_rest": len(rest),
        "low_share": per_seed_text(share), "rest_diff": per_seed_text(diff(rest)),
        "synth_objects": {a: [int(synth.get((a, s), 0)) for s in range(n_seeds)] for a in arms},
        "synth_lowdiv": {a: [int(low_synth.get((a, s), 0)) for s in range(n_seeds)] for a in arms},
        "test_large": [int(test[fam["large"]].min()), int(test[fam["large"]].max())],
        "test_others": [int(test[others].min()), int(test[others].max())],
        "p_uniform_low": len(low) / n_groups,
        "p_invfreq_max_group": per_seed_text([float(groups[groups.seed_index == s].p_inverse_frequency.min())
                                              for s in range(n_seeds)], ".4f"),
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


def plot_samples(objects: pd.DataFrame, images_path: Path, generator_path: Path, width: int, image_size: int,
                 path: Path, n: int = 8) -> None:
    """The first validation scenes (top row), the generator's images of the same layouts and colours (middle) and
    their blueprints (bottom)."""
    import torch

    from stages.core.io import load_safetensors
    from stages.detection_debias.blueprint_generator import BlueprintGenerator, conditions, generate
    from stages.detection_debias.io import layouts_of, read_images
    from stages.detection_debias.scenes import blueprint

    images = read_images(images_path, int(objects.image.max()) + 1, image_size)
    ids = np.sort(objects[objects.split == "val"].image.unique())[:n]
    layouts = [layouts_of(objects)[int(i)] for i in ids]
    model = BlueprintGenerator(width)
    model.load_state_dict(load_safetensors(generator_path))
    gen = generate(model, conditions(layouts, images[ids]))
    bp = torch.from_numpy((np.stack([blueprint(lay, image_size) for lay in layouts]) * 255).astype(np.uint8))
    rows = [torch.cat(list(x), 2) for x in (images[ids], gen, bp)]
    with figure(path, figsize=(1.2 * len(ids), 3.8)) as (_, ax):
        ax.imshow(torch.cat(rows, 1).permute(1, 2, 0).numpy(), interpolation="nearest")
        ax.set_yticks([image_size * (k + 0.5) for k in range(3)], ["real", "generated", "blueprint"])
        ax.set_xticks([])


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict and write the report."""
    bins = cfg.data.bins()
    ap = read_parquet(paths.ap, ["seed_index", "arm", "split", "group", "ap"])
    validate_table(ap, f"{PAPER}.ap", ap_suite(len(ap), bins.n_groups))
    groups = read_groups(paths.groups, bins.n_groups)
    log, training_log = read_json(paths.baseline_log), read_json(paths.training)
    training, accuracy = training_log["arms"], training_log["layout_accuracy"]
    generator_log = read_json(paths.generator_log)
    n_seeds = int(ap.seed_index.max()) + 1
    objects, layouts = read_objects(paths.objects, bins), read_layouts(paths.layouts, bins, n_seeds)
    d = cfg.data
    fam = families(bins, d.rare_class, d.rare_position_class, d.low_diversity_class, d.low_diversity_size)
    names = {g: bins.name(g) for g in range(bins.n_groups)}
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(ap, groups, fam, n_seeds, accuracy)
    acc = {split: layout_accuracy(accuracy, split, n_seeds) for split in ("val", "test")}
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.gates)
    rank = {k: [percentile_rank(groups[groups.seed_index == s].sort_values("group")[k].to_numpy(), fam["low_diversity"])
                for s in range(n_seeds)] for k in ("rs", "frequency")}
    p_low = {k: [float(groups[(groups.seed_index == s) & groups.group.isin(fam["low_diversity"])][k].sum())
                 for s in range(n_seeds)] for k in ("p_inverse_frequency", "p_rs")}
    old_verdict, old_rows = rule_history(cfg.provisional_rule, per_seed, rank["rs"], n_seeds, ctx.profile, timings)
    earlier_verdict, earlier_rows = rule_history(cfg.earlier_rule, per_seed, rank["rs"], n_seeds, ctx.profile,
                                                 timings)
    conf = confounds(ap, groups, objects, layouts, fam, [bins.parts(g)[1] for g in range(bins.n_groups)], n_seeds)
    g_mean = groups.groupby("group").mean(numeric_only=True)
    medium = [g for g in range(bins.n_groups) if g in fam["low_diversity"] or bins.parts(g)[1] == bins.parts(
        fam["low_diversity"][0])[1]] if fam["low_diversity"] else []
    other_medium = [g for g in medium if g not in fam["low_diversity"]]
    div = {k: {"low": float(g_mean.loc[fam["low_diversity"], k].mean()) if fam["low_diversity"] else float("nan"),
               "other": float(g_mean.loc[other_medium, k].mean()) if other_medium else float("nan")}
           for k in ("d_vis_norm", "d_ctx_norm")}
    gen_gap = {f: per_seed_text((np.array(family_map(ap, fam[f], "rs_procedural", "test", n_seeds))
                                 - np.array(family_map(ap, fam[f], "rs", "test", n_seeds))).tolist())
               for f in ("under_represented", "low_diversity")}
    gen_gap["overall"] = per_seed_text((np.array(overall_map(ap, "rs_procedural", "test", n_seeds))
                                        - np.array(overall_map(ap, "rs", "test", n_seeds))).tolist())
    gate_margin = {c.name: float(np.mean(per_seed[c.metric])) - c.threshold for c in cfg.verdict.checks}
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_families(ap, fam, n_seeds, paths.plots / "family_map.png")
    plot_scores(groups, fam, paths.plots / "rs_vs_frequency.png")
    plot_losses(log, training, paths.plots / "losses.png")
    plot_samples(objects, paths.images, paths.generator, cfg.generator.width, bins.image_size,
                 paths.plots / "generated_samples.png")
    fam_test = {arm: {f: family_map(ap, fam[f], arm, "test", n_seeds) for f in FAMILY_ORDER} for arm in ARMS}
    metrics = {"per_seed": per_seed, "verdict": claim.verdict,
               "test_map": {arm: overall_map(ap, arm, "test", n_seeds) for arm in ARMS},
               "val_map": {arm: overall_map(ap, arm, "val", n_seeds) for arm in ARMS},
               "test_family_map": fam_test, "lowdiv_rank": rank, "p_lowdiv": p_low,
               "layout_accuracy": acc, "generator_val_l1": generator_log["val_l1"],
               "generator_val_l1_untrained": generator_log["val_l1_untrained"]}
    write_report(paths, claim, metrics, timings, n_seeds=n_seeds, cfg=cfg, bins=bins,
                 fam={f: [names[g] for g in fam[f]] for f in fam}, n_groups=bins.n_groups,
                 test_rows=results_table(ap, fam, "test", n_seeds), val_rows=results_table(ap, fam, "val", n_seeds),
                 group_rows=group_table(ap, groups, names, fam), rank=rank, p_low=p_low,
                 per_seed=per_seed, gates=cfg.gates, fam_test=fam_test,
                 power_rows=power_with_t(seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}),
                                         per_seed, {c.name: c.metric for c in cfg.verdict.checks}),
                 old_verdict=old_verdict, old_rows=old_rows, old=cfg.provisional_rule, pilot=cfg.pilot, conf=conf,
                 earlier_verdict=earlier_verdict, earlier_rows=earlier_rows, earlier=cfg.earlier_rule,
                 gpilot=cfg.generator_pilot, acc=acc, generator_log=generator_log,
                 gen_gap=gen_gap,
                 metrics_test_map_rs_procedural=overall_map(ap, "rs_procedural", "test", n_seeds),
                 div=div, gate_margin=gate_margin, checks={c.name: c for c in cfg.verdict.checks})
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
