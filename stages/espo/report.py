"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import load_safetensors, read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.core.verdict import CheckOutcome, ClaimRecord, Verdict, VerdictRule, check_status
from stages.espo.config import PAPER, ReportInputs, load_report
from stages.espo.expectations import RL_LOG_COLUMNS

TIMED_STEPS = ("data", "warmstart", "rl", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("ESPO: ELBO-based Sequence-level Policy Optimization for diffusion language models "
           "(ICLR 2026; title as given in the issue, no arXiv id recorded here)"),
    claim=("For masked diffusion language models, treating the whole completion as one action, with the ELBO as "
           "the sequence log-likelihood proxy (per-token normalised ratio, k2 KL), gives stable and much better RL "
           "than token-level objectives (d1's mean-field likelihoods or token-level ELBO ratios), which collapse "
           "or stall."),
    paper_result=("LLaDA-8B-Instruct: Countdown 18.7% (base) → 33.9% (d1) → 48.3% (wd1) → 81.0% (ESPO); Sudoku "
                  "15.7% → 22.2% → 23.1% → 86.0%. Token-level actions collapse; k3 stalls and k1 collapses "
                  "while k2 trains stably."),
)
MAIN = ("d1", "token_elbo", "espo")
ABLATIONS = ("espo_k1", "espo_k3", "espo_no_len_norm")
DIAGNOSTICS = {"clip_fraction": "clip fraction", "log_ratio_std": "log-ratio spread (std)",
               "log_ratio_max": "max abs log-ratio", "kl": "KL (k2, per token)"}
GATE_TEXT = ("Positive controls ({gates}): unless each holds on every seed the verdict is inconclusive and the "
             "claim checks are reported as unclear; once they hold, the other checks alone decide the verdict by "
             "the rule above")
LABELS = {"d1": "d1 (mean-field token ratios)", "token_elbo": "token-level ELBO ratios", "espo": "ESPO (k2)",
          "espo_k1": "ESPO, k1 KL", "espo_k3": "ESPO, k3 KL", "espo_no_len_norm": "ESPO without 1/L"}


@dataclass(frozen=True)
class Paths(ReportPaths):
    evaluation: Path = inp("metrics from evaluate")
    rl_log: Path = inp("RL reward curves")
    warmstart: Path = inp("warm-start manifest (validation curve, chosen step)")


def smooth(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average (the first points average what is available)."""
    c = np.cumsum(np.insert(x, 0, 0.0))
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def plot_rewards(log: pd.DataFrame, task: str, variants: tuple[str, ...], path: Path, title: str) -> bool:
    """Training reward per iteration (moving average), seeds as min-max bands."""
    sub = log[(log.task == task) & log.variant.isin(variants)]
    if sub.empty:
        return False
    window = max(1, sub.iteration.max() // 10)
    with figure(path, figsize=(7, 4.2)) as (_, ax):
        for v in variants:
            g = sub[sub.variant == v]
            if g.empty:
                continue
            runs = np.stack([smooth(r.sort_values("iteration").reward.to_numpy(), window)
                             for _, r in g.groupby("seed_index")])
            band(ax, np.arange(1, runs.shape[1] + 1), runs, f"{LABELS[v]} (n={runs.shape[0]})")
        ax.set_xlabel("RL iteration")
        ax.set_ylabel(f"mean training reward ({window}-iteration mean)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    return True


def plot_test_success(runs: pd.DataFrame, warm: dict[str, Any], path: Path) -> None:
    """Held-out success per variant and task: seeds as dots, the warm start as a dashed line."""
    tasks = sorted(runs.task.unique())
    with figure(path, 1, len(tasks), figsize=(5.5 * len(tasks), 4), squeeze=False) as (_, axes):
        for ax, task in zip(axes[0], tasks, strict=True):
            sub = runs[runs.task == task]
            variants = [v for v in (*MAIN, *ABLATIONS) if v in set(sub.variant)]
            for i, v in enumerate(variants):
                vals = sub[sub.variant == v].test_success.to_numpy()
                ax.bar(i, vals.mean(), color="C0" if v in MAIN else "C7", alpha=0.6)
                ax.plot(np.full(len(vals), i), vals, "k.", ms=8)
            ax.axhline(warm[task]["test_success"], ls="--", color="C3", label="warm start")
            ax.set_xticks(range(len(variants)), [LABELS[v].split(" (")[0] for v in variants], rotation=25,
                          ha="right", fontsize=8)
            ax.set_ylabel("held-out success rate (greedy)")
            ax.set_title(task)
            ax.legend(fontsize=8)


def plot_warmstart(ws: dict[str, Any], path: Path) -> None:
    """Validation success of the supervised warm start against training steps; the chosen checkpoint marked."""
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        for task, info in ws["tasks"].items():
            curve = info["val_curve"]
            (line,) = ax.plot([c["step"] for c in curve], [c["val_success"] for c in curve], marker=".", label=task)
            ax.plot([info["chosen_step"]], [info["val_success"]], "o", ms=10, mfc="none", color=line.get_color())
        lo, hi = ws.get("target_success", (0.2, 0.5))
        ax.axhspan(lo, hi, color="C2", alpha=0.1, label="target band")
        ax.set_xlabel("SFT step")
        ax.set_ylabel("validation success (greedy)")
        ax.legend(fontsize=8)


def variant_rows(runs: pd.DataFrame, warm: dict[str, Any], task: str) -> list[dict[str, Any]]:
    """One row per variant: held-out success and reward (mean ± std over seeds), collapse and stall counts."""
    sub = runs[runs.task == task]
    rows = [{"method": "warm start (SFT)", "test success": f"{warm[task]['test_success']:.3f}",
             "test reward": f"{warm[task]['test_reward']:.3f}",
             "sampled success": f"{warm[task]['test_sampled_success']:.3f}",
             "sampled reward": f"{warm[task]['test_sampled_reward']:.3f}", "train reward start → end": "",
             "collapsed": "", "stalled": ""}]
    for v in (*MAIN, *ABLATIONS):
        g = sub[sub.variant == v]
        if g.empty:
            continue
        rows.append({"method": LABELS[v], "test success": mean_std(g.test_success.tolist()),
                     "test reward": mean_std(g.test_reward.tolist()),
                     "sampled success": mean_std(g.test_sampled_success.tolist()),
                     "sampled reward": mean_std(g.test_sampled_reward.tolist()),
                     "train reward start → end": f"{g.train_start_reward.mean():.3f} → {g.train_end_reward.mean():.3f}",
                     "collapsed": f"{int(g.collapsed.sum())}/{len(g)}", "stalled": f"{int(g.stalled.sum())}/{len(g)}"})
    return rows


def cpu_per_iteration(rl_timing: dict[str, Any], n_runs: int, iterations: int) -> float | None:
    """CPU seconds of the RL step per run and iteration (None for a timing without CPU seconds)."""
    cpu = rl_timing.get("cpu_time_s")
    return cpu / (n_runs * iterations) if cpu is not None and n_runs and iterations else None


def diagnostic_rows(log: pd.DataFrame, runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (task, variant): clip fraction, ratio spread and KL (means over iterations, mean ± std over seeds)."""
    rows = []
    for (task, variant), g in log.groupby(["task", "variant"], sort=True):
        per_run = g.groupby("run")[[*DIAGNOSTICS, "last_clip_fraction"]].mean()
        last = g[g.iteration == g.iteration.max()]
        rows.append({"task": task, "method": LABELS[variant], "runs": len(per_run),
                     **{label: mean_std(per_run[k].tolist()) for k, label in DIAGNOSTICS.items()},
                     "clip fraction, last inner update": mean_std(per_run.last_clip_fraction.tolist()),
                     "final log-lik. proxy − ref (per sequence)": float(last.logp_minus_ref.mean()),
                     "final train success": float(last.success.mean())})
    return rows


def plot_diagnostics(log: pd.DataFrame, task: str, path: Path) -> bool:
    """Clip fraction, ratio spread and KL per RL iteration for the three objectives (seeds as min-max bands)."""
    sub = log[(log.task == task) & log.variant.isin(MAIN)]
    if sub.empty:
        return False
    window = max(1, sub.iteration.max() // 20)
    with figure(path, 1, len(DIAGNOSTICS), figsize=(5 * len(DIAGNOSTICS), 4), squeeze=False) as (_, axes):
        for ax, (col, label) in zip(axes[0], DIAGNOSTICS.items(), strict=True):
            for v in MAIN:
                g = sub[sub.variant == v]
                if g.empty:
                    continue
                curves = np.stack([smooth(r.sort_values("iteration")[col].to_numpy(), window)
                                   for _, r in g.groupby("seed_index")])
                band(ax, np.arange(1, curves.shape[1] + 1), curves, f"{LABELS[v]} (n={curves.shape[0]})")
            ax.set_xlabel("RL iteration")
            ax.set_ylabel(f"{label} ({window}-iteration mean)")
            ax.set_title(f"{task}: {label}, μ inner updates", fontsize=9)
            ax.legend(fontsize=7)
    return True


def gated_decide(rule: VerdictRule, per_seed: dict[str, list[float]],
                 gates: list[str]) -> tuple[Verdict, list[CheckOutcome]]:
    """The verdict with positive controls: inconclusive (claims unclear) unless every gate check holds on every seed.

    Once the gates hold, the claim checks alone decide: all hold -> reproduced, all fail ->
    not_reproduced, some hold -> partly, otherwise (seeds disagree or too few) -> inconclusive.
    """
    outcomes = []
    for check in rule.checks:
        values = [float(v) if v is not None else float("nan") for v in per_seed[check.metric]]
        outcomes.append(CheckOutcome(name=check.name, description=check.describe(),
                                     status=check_status(check, values, rule.min_seeds),
                                     values=[v if np.isfinite(v) else None for v in values]))
    is_gate = [c.metric in gates for c in rule.checks]
    if not all(o.status == "holds" for o, g in zip(outcomes, is_gate, strict=True) if g):
        return "inconclusive", [o if g else o.model_copy(update={"status": "unclear"})
                                for o, g in zip(outcomes, is_gate, strict=True)]
    statuses = {o.status for o, g in zip(outcomes, is_gate, strict=True) if not g}
    if statuses == {"holds"}:
        return "reproduced", outcomes
    if statuses == {"fails"}:
        return "not_reproduced", outcomes
    return ("partly" if "holds" in statuses else "inconclusive"), outcomes


def seeds_needed(values: list[float], margin: float) -> int | None:
    """Seeds for a 95% interval of half-width ``margin`` on the mean, from the measured per-seed std."""
    if len(values) < 2 or margin <= 0:
        return None
    return max(2, int(np.ceil((1.96 * float(np.std(values, ddof=1)) / margin) ** 2)))


def summary(runs: pd.DataFrame, warm: dict[str, Any]) -> list[dict[str, Any]]:
    """What the numbers say, computed from them: held-out change over the warm start, drops and collapses."""
    rows = []
    for task in sorted(runs.task.unique()):
        sub = runs[runs.task == task]
        means = {v: float(sub[sub.variant == v].test_success.mean()) for v in (*MAIN, *ABLATIONS)
                 if v in set(sub.variant)}
        w = warm[task]["test_success"]
        drop = sub.assign(drop=sub.train_start_reward - sub.train_end_reward).sort_values("drop").iloc[-1]
        rows.append({"task": task, "warm": w, "change": {LABELS[v]: m - w for v, m in means.items()},
                     "drop": {"run": drop["run"], "start": drop.train_start_reward, "end": drop.train_end_reward,
                              "collapsed": sub[sub.collapsed].run.tolist()} if drop["drop"] > 0 else None})
    return rows


def d1_note(runs: pd.DataFrame, warm: dict[str, Any]) -> dict[str, Any] | None:
    """Sudoku: d1's per-seed change over the warm start, and whether it is the best objective on average."""
    sub = runs[(runs.task == "sudoku") & runs.variant.isin(MAIN)]
    if sub.empty or "d1" not in set(sub.variant):
        return None
    w = warm["sudoku"]["test_success"]
    means = sub.groupby("variant").test_success.mean()
    changes = (sub[sub.variant == "d1"].sort_values("seed_index").test_success - w).tolist()
    return {"changes": changes, "improves": bool(np.mean(changes) > 0), "best": LABELS[str(means.idxmax())],
            "d1_best": str(means.idxmax()) == "d1"}


def parameter_counts(folder: Path, tasks: list[str]) -> dict[str, int]:
    """Number of weights of each task's warm-start model (from its safetensors file)."""
    return {t: sum(v.numel() for v in load_safetensors(folder / f"{t}.safetensors").values()) for t in tasks}


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed metrics and write the report."""
    ev = read_json(paths.evaluation)
    log = read_parquet(paths.rl_log, columns=RL_LOG_COLUMNS)
    ws = read_json(Path(paths.warmstart) / "manifest.json")
    timings = read_timings(paths.timings, TIMED_STEPS)
    runs = pd.DataFrame(ev["runs"])
    checked = {c.metric for c in cfg.verdict.checks}
    headline = {k: mean_std(v, 3) for k, v in ev["per_seed"].items()}
    claim = decide_claim(CARD, cfg.verdict, {k: v for k, v in ev["per_seed"].items() if k in checked},
                         seeds=ev["seeds"], profile=ctx.profile, timings=timings, measured=headline)
    verdict, outcomes = gated_decide(cfg.verdict, ev["per_seed"], cfg.report.gates)
    gate_text = GATE_TEXT.format(gates=", ".join(cfg.report.gates))
    claim = ClaimRecord.model_validate({**claim.model_dump(), "verdict": verdict,
                                        "checks": [o.model_dump() for o in outcomes],
                                        "verdict_rule": f"{claim.verdict_rule}. {gate_text}"})
    power = [{"check": c.name, "per-seed std": float(np.std(ev["per_seed"][c.metric], ddof=1))
              if len(ev["per_seed"][c.metric]) > 1 else float("nan"),
              "seeds for a 95% interval of ± margin": seeds_needed(ev["per_seed"][c.metric], c.threshold)
              if c.metric not in cfg.report.gates else "(gate)"} for c in cfg.verdict.checks]
    paths.plots.mkdir(parents=True, exist_ok=True)
    plots = []
    for task in sorted(runs.task.unique()):
        for group, variants in (("main", MAIN), ("ablations", ("espo", *ABLATIONS))):
            if group == "ablations" and not set(ABLATIONS) & set(runs[runs.task == task].variant):
                continue
            name = f"reward_{task}_{group}.png"
            if plot_rewards(log, task, variants, paths.plots / name, f"{task}: training reward ({group})"):
                plots.append(name)
    for task in sorted(runs.task.unique()):
        if plot_diagnostics(log, task, paths.plots / f"diagnostics_{task}.png"):
            plots.append(f"diagnostics_{task}.png")
    plot_test_success(runs, ev["warmstart"], paths.plots / "test_success.png")
    plot_warmstart(ws, paths.plots / "warmstart_val.png")
    plots = ["test_success.png", *plots, "warmstart_val.png"]

    metrics = {"per_seed": ev["per_seed"], "warmstart": {t: {"test_success": w["test_success"],
                                                             "test_reward": w["test_reward"]}
                                                         for t, w in ev["warmstart"].items()},
               "runs": [{k: r[k] for k in ("run", "test_success", "test_reward", "collapsed", "stalled")}
                        for r in ev["runs"]], "verdict": claim.verdict}
    paper_seeds = sorted({e.n_seeds for e in cfg.paper_rl.grid})
    write_report(paths, claim, metrics, timings, ev=ev, ws=ws, data=cfg.data, rl=cfg.rl, paper_rl=cfg.paper_rl,
                 paper_seeds=paper_seeds, n_params=parameter_counts(Path(paths.warmstart), sorted(ws["tasks"])),
                 run_counts=[(t, v, n) for (t, v), n in runs.groupby(["task", "variant"]).size().items()],
                 results=[(t, variant_rows(runs, ev["warmstart"], t)) for t in sorted(runs.task.unique())],
                 summary=summary(runs, ev["warmstart"]), diagnostics=diagnostic_rows(log, runs),
                 power=power, gate_text=gate_text, d1_note=d1_note(runs, ev["warmstart"]),
                 iterations=int(log.iteration.max()), plots=plots,
                 rl_cpu_per_iteration=cpu_per_iteration(read_json(Path(paths.timings) / "rl.json"), len(runs),
                                                        int(log.iteration.max())))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
