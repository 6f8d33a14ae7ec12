"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.denots.config import PAPER, ReportInputs, load_report
from stages.denots.history import BUDGET, RULES

TIMED_STEPS = ("data", "train", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("DeNOTS: Stable Deep Neural ODEs for Time Series (Kuleshov et al., ICLR 2026; OpenReview SFoDJZ1sSk, "
           "arXiv 2408.08055)"),
    claim=("For an input-driven continuous-time model of irregular time series, scaling the integration horizon "
           "(t → D·t) deepens the model more usefully than tightening solver tolerances, a Negative Feedback "
           "vector field keeps long horizons stable where fields without it blow up, and the resulting DeNOTS "
           "beats Neural RDEs and state-space baselines."),
    paper_result=("Up to 20% better than existing approaches (incl. Neural RDEs and SSMs) on four public "
                  "benchmarks; synthetic pendulum ablation at D = 20: R² ≈ −6·10⁶ without feedback vs 0.83 with "
                  "it (abstract and the paper's ablation as summarised in our issue)."),
)
METRIC = {"pendulum": "test R² (length ℓ)", "vowels": "test accuracy"}
CHOSEN_COLUMNS = ("check", "seed", "method run", "method score", "method NFE", "compared run", "compared score",
                  "compared NFE")
FLOOR_NOTE = "diverged runs and scores below the floor are drawn at the floor"


@dataclass(frozen=True)
class Paths(ReportPaths):
    results: Path = inp("per-run results from evaluate")
    evaluation: Path = inp("per-seed verdict metrics")
    train_log: Path = inp("training losses")


def floor_of(dataset: str, ev: dict[str, Any]) -> float:
    """The data set's score floor (params of evaluate, copied into evaluation.json)."""
    return float(ev["score_floors"][dataset])


def floored_scores(frame: pd.DataFrame, floor: float) -> np.ndarray:
    """Test scores with diverged runs and anything below ``floor`` at the floor."""
    return np.where(frame.diverged | frame.test_score.isna(), floor, np.maximum(frame.test_score.fillna(floor), floor))


def plot_score_vs_horizon(results: pd.DataFrame, ev: dict[str, Any], path: Path) -> None:
    """Test score vs D per field (seeds as min-max bands); x marks a diverged seed."""
    datasets = list(dict.fromkeys(results.dataset))
    with figure(path, 1, len(datasets), figsize=(6 * len(datasets), 4.2), squeeze=False) as (_, axes):
        for ax, name in zip(axes[0], datasets, strict=True):
            part = results[(results.dataset == name) & (results.group == "horizon")]
            floor = floor_of(name, ev)
            for field, g in part.groupby("field", sort=False):
                horizons = sorted(g.horizon.unique())
                runs = np.stack([floored_scores(g[g.horizon == d].sort_values("seed_index"), floor) for d in horizons],
                                axis=1)
                band(ax, np.asarray(horizons), runs, field)
                bad = g[g.diverged]
                if len(bad):
                    ax.plot(bad.horizon, [floor] * len(bad), "kx", ms=8)
            ax.set_xscale("log")
            ticks = sorted(part.horizon.unique())
            ax.set_xticks(ticks, [f"{d:g}" for d in ticks])
            ax.minorticks_off()
            ax.set_xlabel("horizon scale D (log axis)")
            ax.set_ylabel(f"{METRIC[name]}; floor {floor:g}")
            ax.set_title(f"{name}: score vs D ({FLOOR_NOTE}; x = diverged)", fontsize=8)
            ax.legend(fontsize=7)


def plot_score_vs_nfe(results: pd.DataFrame, ev: dict[str, Any], path: Path) -> bool:
    """Pendulum, one field: scaling D vs tightening tolerances at D = 1, score against forward NFE."""
    field = ev.get("tolerance_field")
    if not field:
        return False
    p = results[(results.dataset == "pendulum") & (results.field == field) & (results.model == "denots")]
    floor = floor_of("pendulum", ev)
    with figure(path, figsize=(6.5, 4.3)) as (_, ax):
        scaled = p[p.group == "horizon"]
        tight = pd.concat([p[p.group == "tolerance"], scaled[scaled.horizon == 1.0]])
        for frame, label, key, marker in ((scaled, "scale D", "horizon", "o"),
                                          (tight, "tighten tolerance (D = 1)", "rtol", "s")):
            means = frame.groupby(key).agg(nfe=("test_nfe", "mean")).reset_index()
            means["score"] = [floored_scores(frame[frame[key] == k], floor).mean() for k in means[key]]
            means = means.sort_values("nfe")
            line = ax.plot(means.nfe, means.score, marker=marker, label=label)[0]
            ax.scatter(frame.test_nfe, floored_scores(frame, floor), color=line.get_color(), alpha=0.35, s=14)
            for _, row in means.iterrows():
                text = f"D={row[key]:g}" if key == "horizon" else f"rtol={row[key]:.0e}"
                ax.annotate(text, (row.nfe, row.score), fontsize=7, textcoords="offset points",
                            xytext=(4, 4) if key == "horizon" else (4, -11))
        ax.set_xlabel("forward NFE per test batch")
        ax.set_ylabel(f"{METRIC['pendulum']}")
        ax.set_title(f"pendulum, {field}: depth (D) vs precision (tolerance)", fontsize=9)
        ax.legend(fontsize=8)
    return True


def plot_training(log: pd.DataFrame, results: pd.DataFrame, path: Path) -> None:
    """Training loss of every pendulum field at the longest horizon (log scale; seeds as bands)."""
    part = results[(results.dataset == "pendulum") & (results.group == "horizon")]
    d_long = part.horizon.max()
    with figure(path, figsize=(7, 4.2)) as (_, ax):
        for field, g in part[part.horizon == d_long].groupby("field", sort=False):
            curves = [log[log.run_id == rid].sort_values("step").loss.to_numpy() for rid in g.run_id]
            n = min((len(c) for c in curves), default=0)
            if n:
                band(ax, np.arange(1, n + 1), np.stack([c[:n] for c in curves]), f"{field} (D={d_long:g})")
        ax.set_yscale("log")
        ax.set_xlabel("training step")
        ax.set_ylabel("training loss (MSE of standardised ℓ)")
        ax.legend(fontsize=7)


def config_rows(results: pd.DataFrame, dataset: str, group: str) -> list[dict[str, Any]]:
    """One row per (model/field, D, tolerance): test score mean ± std over non-diverged seeds, NFE, divergences."""
    rows = []
    part = results[(results.dataset == dataset) & (results.group == group)]
    for (model, field, d, rtol), g in part.groupby(["model", "field", "horizon", "rtol"], sort=False):
        ok = g[~g.diverged]
        rows.append({"model": field or model, "D": f"{d:g}", "rtol": f"{rtol:.0e}", "params": int(g.n_params.iloc[0]),
                     METRIC[dataset]: mean_std(ok.test_score.tolist(), 3),
                     "val score": mean_std(ok.val_score.tolist(), 3),
                     "test NFE": f"{ok.test_nfe.mean():.0f}" if len(ok) else "n/a",
                     "diverged": f"{int(g.diverged.sum())}/{len(g)}"})
    return rows


def parameter_rows(results: pd.DataFrame) -> list[dict[str, Any]]:
    """Parameter count of every model on each data set (encoder and readout included)."""
    rows: dict[str, dict[str, Any]] = {}
    for (dataset, model, field), g in results.groupby(["dataset", "model", "field"], sort=False):
        rows.setdefault(field or model, {"model": field or model})[dataset] = int(g.n_params.iloc[0])
    return list(rows.values())


def horizon_rows(results: pd.DataFrame, log: pd.DataFrame, ev: dict[str, Any]) -> list[dict[str, Any]]:
    """Per data set and field: floored mean score at D = 1 and at the longest D, their change, divergences,
    and the largest training loss at the longest D (how far the field blew up before training reined it in)."""
    rows = []
    for name, part in results[results.group == "horizon"].groupby("dataset", sort=False):
        floor, d_long = floor_of(name, ev), part.horizon.max()
        for field, g in part.groupby("field", sort=False):
            s1 = floored_scores(g[g.horizon == 1.0], floor).mean()
            sl = floored_scores(g[g.horizon == d_long], floor).mean()
            peak = log[log.run_id.isin(g[g.horizon == d_long].run_id)].loss.max()
            rows.append({"data set": name, "field": field, "score D=1": f"{s1:.3f}", "score D=max": f"{sl:.3f}",
                         "change": f"{sl - s1:+.3f}", "D max": f"{d_long:g}",
                         "diverged (all D)": f"{int(g.diverged.sum())}/{len(g)}",
                         "peak train loss at D max": f"{peak:.3g}" if np.isfinite(peak) else "n/a"})
    return rows


def metrics_summary(results: pd.DataFrame) -> dict[str, Any]:
    """Mean test score and NFE per configuration (diverged seeds excluded, counted separately)."""
    out: dict[str, Any] = {}
    for key, g in results.groupby(["dataset", "model", "field", "horizon", "rtol"], sort=True):
        ok = g[~g.diverged]
        name = "/".join([key[0], key[2] or key[1], f"D{key[3]:g}", f"rtol{key[4]:.0e}"])
        out[name] = {"test_score_mean": float(ok.test_score.mean()) if len(ok) else None,
                     "test_nfe_mean": float(ok.test_nfe.mean()) if len(ok) else None,
                     "diverged": int(g.diverged.sum()), "seeds": len(g)}
    return out


def lr_rows(all_runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Per model/field and lr: how often that lr was chosen on validation, and the mean best step (early stopping)."""
    rows = []
    part = all_runs[all_runs.group != "perturbed"]
    for (dataset, name, lr), g in part.groupby(["dataset", "name", "lr"], sort=False):
        rows.append({"data set": dataset, "model": name, "lr": f"{lr:g}",
                     "chosen (configs)": f"{int(g.lr_chosen.sum())}/{len(g)}",
                     "mean best step": f"{g.best_step.mean():.0f}", "mean steps run": f"{g.train_steps.mean():.0f}",
                     "stopped early": f"{int((g.train_steps < g.step_cap).sum())}/{len(g)}"})
    return rows


def budget_counts(results: pd.DataFrame, lrs: list[float]) -> dict[str, Any]:
    """Chosen-lr pendulum runs (perturbed reruns excluded): how many chose an lr at an edge of the grid, ran to
    the step cap (early stopping did not end them) or had their best validation step at the cap; the same for
    the baselines alone."""
    pend = results[results.dataset == "pendulum"]
    lo, hi = min(lrs), max(lrs)

    def counts(frame: pd.DataFrame) -> dict[str, int]:
        return {"n": len(frame), "lr_low": int((frame.lr == lo).sum()), "lr_high": int((frame.lr == hi).sum()),
                "lr_edge": int(frame.lr.isin([lo, hi]).sum()),
                "at_cap": int((frame.train_steps >= frame.step_cap).sum()),
                "best_at_cap": int((frame.best_step >= frame.step_cap).sum())}

    edge = pend[pend.lr.isin([lo, hi])]
    edge_configs = sorted({f"{n} at D = {d:g}{' (tight tolerance)' if g == 'tolerance' else ''}: lr {lr:g}"
                           for n, d, g, lr in zip(edge.name, edge.horizon, edge.group, edge.lr, strict=True)})
    return {"all": counts(pend), "baselines": counts(pend[pend.group == "baseline"]), "lr_low": lo, "lr_high": hi,
            "edge_configs": edge_configs,
            "grid": len(lrs), "step_cap": int(pend.step_cap.max()) if len(pend) else 0}


def field_state_rows(results: pd.DataFrame, floor: float) -> list[dict[str, Any]]:
    """Per pendulum field and D: floored test R² (mean ± std), the RMS of the final state h(D·T) and of the
    field's speed there (mean over seeds whose run did not diverge), and the divergences."""
    rows = []
    part = results[(results.dataset == "pendulum") & (results.group == "horizon")]
    for (field, d), g in part.groupby(["field", "horizon"], sort=False):
        ok = g[~g.diverged]
        rows.append({"field": field, "D": f"{d:g}",
                     "test R² (floored)": mean_std(floored_scores(g, floor).tolist(), 3),
                     "state RMS": f"{ok.state_rms.mean():.3g}" if len(ok) else "n/a",
                     "speed RMS at the end": f"{ok.end_speed_rms.mean():.3g}" if len(ok) else "n/a",
                     "diverged": f"{int(g.diverged.sum())}/{len(g)}"})
    return rows


def field_findings(results: pd.DataFrame, floor: float, settled: float = 0.05) -> list[str]:
    """Sentences on how the fields differ, each computed from the measured runs (longest D vs D = 1): the two NF
    fields against each other (difference vs twice the larger seed std), whether each field's state has settled
    at the end of the horizon (speed below ``settled`` × state RMS), and divergences."""
    part = results[(results.dataset == "pendulum") & (results.group == "horizon")]
    if part.empty:
        return []
    d_long = part.horizon.max()
    long = part[part.horizon == d_long]

    def stats(field: str, frame: pd.DataFrame) -> tuple[float, float, pd.DataFrame]:
        g = frame[frame.field == field]
        v = floored_scores(g, floor)
        return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, g

    out = []
    fields = list(dict.fromkeys(part.field))
    if {"anti_feedback", "strict_feedback"} <= set(fields):
        (ma, sa, _), (ms, ss, _) = stats("anti_feedback", long), stats("strict_feedback", long)
        gap, noise = ma - ms, 2 * max(sa, ss)
        same = abs(gap) <= noise
        out.append(f"At D = {d_long:g} the anti and strict NF fields reach R² {ma:.3f} and {ms:.3f} (difference "
                   f"{gap:+.3f}, twice the larger seed std {noise:.3f}): "
                   + ("within the seed spread, so the two NF fields behave the same here." if same else
                      f"the {'anti' if gap > 0 else 'strict'} field is better beyond the seed spread."))
    for field in fields:
        m1, _, _ = stats(field, part[part.horizon == 1.0])
        ml, _, gl = stats(field, long)
        ok = gl[~gl.diverged]
        n_div = int(part[part.field == field].diverged.sum())
        text = f"{field}: R² {m1:.3f} at D = 1, {ml:.3f} at D = {d_long:g}"
        if len(ok):
            ratio = float((ok.end_speed_rms / ok.state_rms).mean())
            text += (f"; at D = {d_long:g} its state RMS is {ok.state_rms.mean():.3g} and its speed at the end "
                     f"{ok.end_speed_rms.mean():.3g} ({ratio:.1%} of the state): "
                     + ("settled by the end of the horizon" if ratio < settled else "still moving at the end"))
        text += f"; {n_div} of {int((part.field == field).sum())} runs diverged over all D."
        out.append(text)
    return out


def per_field_rows(ev: dict[str, Any]) -> list[dict[str, Any]]:
    """Per pendulum field: R²(D_max) − R²(D = 1) on each seed (the per-field verdict metric)."""
    rows = []
    for key, values in ev["per_seed"].items():
        if key.startswith("long_vs_d1__"):
            rows.append({"field": key.removeprefix("long_vs_d1__"),
                         **{f"seed {s}": f"{v:+.3f}" for s, v in zip(ev["seeds"], values, strict=True)},
                         "mean ± std": mean_std(values, 3)})
    return rows


def stability_summary(ev: dict[str, Any], results: pd.DataFrame) -> dict[str, Any]:
    """The largest one-ulp change of a chosen-lr test score, beside the seed std of the same configurations."""
    rows = ev.get("stability", [])
    if not rows:
        return {"rows": [], "max": None, "seed_std": None}
    chosen = results[results.lr_chosen & (results.group != "perturbed")]
    stds = []
    unseeded = chosen.config_id.str.rsplit("__s", n=1).str[0]
    for row in rows:
        g = chosen[unseeded == row["config"].rsplit("__s", 1)[0]]
        stds.append(float(g.test_score.std(ddof=1)) if len(g) > 1 else float("nan"))
    table = [{**{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()},
              "seed std (same config)": f"{sd:.3f}"} for row, sd in zip(rows, stds, strict=True)]
    diffs = [r["abs difference"] for r in rows if np.isfinite(r["abs difference"])]
    return {"rows": table, "max": max(diffs) if diffs else None,
            "seed_std": float(np.nanmax(stds)) if np.isfinite(stds).any() else None}


def margin_rows(claim: Any, thresholds: dict[str, float], spread: float | None, counts: dict[str, bool] | None = None
                ) -> list[dict[str, Any]]:
    """Per check: the smallest distance of a per-seed value to its threshold vs twice the one-ulp spread
    (a check value is a difference of two scores, each of which can move by the spread). A check on a count of
    divergences (``counts``: name → whether any one-ulp rerun changed a run's divergence) is read from the flags."""
    rows = []
    counts = counts or {}
    for o in claim.checks:
        vals = [v for v in o.values if v is not None]
        if not vals:
            continue
        if o.name in counts:
            flip = ("yes: a one-ulp rerun changed a divergence" if counts[o.name]
                    else "no: no one-ulp rerun changed a divergence")
            rows.append({"check": o.name, "smallest |value − threshold|": "a count of divergences",
                         "2 × largest one-ulp change": "n/a", "could flip under numeric noise": flip})
            continue
        margin = min(abs(v - thresholds[o.name]) for v in vals)
        rows.append({"check": o.name, "smallest |value − threshold|": f"{margin:.3f}",
                     "2 × largest one-ulp change": f"{2 * spread:.3f}" if spread is not None else "n/a",
                     "could flip under numeric noise": ("n/a" if spread is None else
                                                        ("yes" if margin <= 2 * spread else "no"))})
    return rows


def replicate_values(claim: Any, cfg: ReportInputs, ev: dict[str, Any]) -> dict[str, list[float | None]] | None:
    """Per check: the per-seed values with the one-ulp replicate's values in place of its seeds' (None without one)."""
    rep = ev.get("replicate")
    if not rep:
        return None
    position = {s: i for i, s in enumerate(ev["seeds"])}
    out = {}
    for check, o in zip(cfg.verdict.checks, claim.checks, strict=True):
        values = list(o.values)
        for s, v in zip(rep["seeds"], rep["per_seed"][check.metric], strict=True):
            values[position[s]] = v
        out[check.name] = values
    return out


def replicate_summary(claim: Any, cfg: ReportInputs, ev: dict[str, Any], timings: dict[str, float],
                      profile: str) -> dict[str, Any] | None:
    """The verdict again with the replicate's values, and per check its status and the change on the replaced seeds."""
    values = replicate_values(claim, cfg, ev)
    if values is None:
        return None
    rep = ev["replicate"]
    measured = {c.metric: values[c.name] for c in cfg.verdict.checks}
    again = gated_verdict(decide_claim(CARD, cfg.verdict, measured, seeds=ev["seeds"], profile=profile,
                                       timings=timings), cfg.gates)
    position = [ev["seeds"].index(s) for s in rep["seeds"]]
    rows, changes = [], {}
    for o, a in zip(claim.checks, again.checks, strict=True):
        before = [o.values[i] for i in position]
        after = [values[o.name][i] for i in position]
        moved = [abs(x - y) for x, y in zip(before, after, strict=True) if x is not None and y is not None]
        changes[o.name] = max(moved) if moved else None
        rows.append({"check": o.name, **{f"seed {s}": f"{x:+.3f}" if x is not None else "n/a"
                                        for s, x in zip(rep["seeds"], before, strict=True)},
                     **{f"seed {s}, +1 ulp": f"{y:+.3f}" if y is not None else "n/a"
                        for s, y in zip(rep["seeds"], after, strict=True)},
                     "status": o.status, "status, +1 ulp": a.status})
    flipped = [o.name for o, a in zip(claim.checks, again.checks, strict=True) if o.status != a.status]
    return {"rows": rows, "verdict": again.verdict, "same": again.verdict == claim.verdict, "changes": changes,
            "flipped": flipped, "values": values,
            "seeds": rep["seeds"], "complete": bool(rep["complete"]), "rerun": rep["rerun"], "needed": rep["needed"]}


def decisive_value(check: Any, values: list[float | None]) -> float | None:
    """What decides a check: the one-sided bound of the mean on the passing side (a mean check), else the seed
    value nearest the failing side (a check on every seed). None without a finite value."""
    vals = [v for v in values if v is not None and np.isfinite(v)]
    if not vals or (check.over == "mean" and len(vals) < 2):
        return None
    if check.over == "mean":
        _, low, high = check.mean_bounds(vals)
        return low if check.op == ">=" else high
    return min(vals) if check.op == ">=" else max(vals)


def replicate_margin_rows(claim: Any, cfg: ReportInputs, values: dict[str, list[float | None]]
                          ) -> list[dict[str, Any]]:
    """Per check: the value that decides it (the mean's bound, or the worst seed) in this run and with the one-ulp
    replicate in place of its seeds, against the threshold: the bound moves with the replaced seed's value and with
    the spread it adds, so the comparison is made on the bound itself, not on the seed's change over n."""
    rows = []
    for check, o in zip(cfg.verdict.checks, claim.checks, strict=True):
        before, after = decisive_value(check, o.values), decisive_value(check, values[o.name])
        rows.append({"check": o.name, "read on": "one-sided bound of the mean" if check.over == "mean" else
                     "worst seed", "threshold": f"{check.op} {check.threshold:g}",
                     "this run": "n/a" if before is None else f"{before:+.3f}",
                     "seed 0 at +1 ulp": "n/a" if after is None else f"{after:+.3f}",
                     "passes, this run / +1 ulp": f"{'yes' if check.passes(before) else 'no'} / "
                                                  f"{'yes' if check.passes(after) else 'no'}"})
    return rows


def divergence_flips(cfg: ReportInputs, ev: dict[str, Any]) -> dict[str, bool]:
    """Per check on a count of divergences: whether any one-ulp rerun diverged where its original did not, or back."""
    flipped = any(len(set(r["diverged"].split("/"))) > 1 for r in ev.get("stability", []))
    return {c.name: flipped for c in cfg.verdict.checks if c.metric.startswith("diverged__")}


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the gated verdict from the per-seed metrics and write the report."""
    all_runs = read_parquet(paths.results, columns=["run_id", "config_id", "dataset", "model", "field", "horizon",
                                                    "rtol", "seed_index", "group", "lr", "lr_chosen", "n_params",
                                                    "train_steps", "step_cap", "best_step", "val_score",
                                                    "test_score", "test_nfe", "state_rms", "end_speed_rms",
                                                    "diverged", "reason"])
    all_runs["name"] = all_runs.field.where(all_runs.model == "denots", all_runs.model)
    results = all_runs[all_runs.lr_chosen & (all_runs.group != "perturbed")]
    ev = read_json(paths.evaluation)
    log = read_parquet(paths.train_log, columns=["run_id", "step", "loss"])
    timings = read_timings(paths.timings, TIMED_STEPS)
    headline = {k: mean_std(v, 4) for k, v in ev["per_seed"].items()}
    measured = {c.metric: ev["per_seed"][c.metric] for c in cfg.verdict.checks}
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, measured, seeds=ev["seeds"], profile=ctx.profile,
                                       timings=timings, measured=headline), cfg.gates)
    thresholds = {c.name: c.threshold for c in cfg.verdict.checks}
    stability = stability_summary(ev, all_runs)
    replicate = replicate_summary(claim, cfg, ev, timings, ctx.profile)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_score_vs_horizon(results, ev, paths.plots / "score_vs_horizon.png")
    has_nfe = plot_score_vs_nfe(results, ev, paths.plots / "score_vs_nfe.png")
    plot_training(log, results, paths.plots / "training_loss_long_horizon.png")

    n_runs, n_div = len(all_runs), int(all_runs.diverged.sum())
    reasons = all_runs[all_runs.diverged].groupby("reason").size().to_dict()
    late = all_runs[~all_runs.diverged & (all_runs.reason != "")].groupby("reason").size().to_dict()
    chosen = [{"check": k, **c} for k, rows in ev["chosen"].items() for c in rows]
    metrics = {"per_seed": ev["per_seed"], "configs": metrics_summary(results), "verdict": claim.verdict,
               "diverged_runs": n_div, "runs": n_runs, "stability": ev.get("stability", []),
               "max_one_ulp_change": stability["max"],
               "verdict_one_ulp_replicate": replicate["verdict"] if replicate else None}
    odes = results[results.model == "denots"]
    cap = int(results[results.dataset == "pendulum"].step_cap.max())
    write_report(paths, claim, metrics, timings, ev=ev, n_runs=n_runs, n_div=n_div, reasons=reasons,
                 n_fields=odes.field.nunique(), max_train_steps=cap,
                 parameters=parameter_rows(results),
                 fields={name: config_rows(results, name, "horizon") for name in ("pendulum", "vowels")},
                 horizons=horizon_rows(results, log, ev), tolerance=config_rows(results, "pendulum", "tolerance"),
                 baselines={name: config_rows(results, name, "baseline") for name in ("pendulum", "vowels")},
                 chosen=chosen, chosen_columns=CHOSEN_COLUMNS, has_nfe=has_nfe, late=late,
                 history=RULES, budget_history=BUDGET, budget=budget_counts(results, ev["lrs"]),
                 field_states=field_state_rows(results, floor_of("pendulum", ev)),
                 findings=field_findings(results, floor_of("pendulum", ev)),
                 d_long=max(results[results.dataset == "pendulum"].horizon),
                 lrs=lr_rows(all_runs), per_field=per_field_rows(ev), stability=stability,
                 margins=(replicate_margin_rows(claim, cfg, replicate["values"]) if replicate else
                          margin_rows(claim, thresholds, stability["max"], divergence_flips(cfg, ev))),
                 replicate=replicate, gates=cfg.gates,
                 fixed_lr=bool(ev.get("fixed_lr")), processes=int(ev["processes"]),
                 power_rows=seeds_to_decide(claim, thresholds),
                 vowels_ceiling={k: mean_std(ev["per_seed"][k], 3) for k in ("best_baseline_vowels",
                                                                            "denots_minus_baseline_vowels")})
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
