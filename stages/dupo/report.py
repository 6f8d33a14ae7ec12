"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.core.verdict import CheckOutcome, ClaimRecord, Verdict, VerdictRule, check_status
from stages.dupo.config import PAPER, ReportInputs, load_report
from stages.dupo.io import read_rl_log

TIMED_STEPS = ("data", "sft", "rl", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("DuPO: Enabling Reliable LLM Self-Verification via Dual Preference Optimization "
           "(ICLR 2026; arXiv 2508.14460)"),
    claim=("A dual task that reconstructs a hidden part of the input from the primal output gives a label-free "
           "reward: GRPO on it improves the primal model nearly as much as RL with oracle labels, the same "
           "signal reranks sampled answers better than majority vote, and filtering dual questions to "
           "answerable, unique ones matters."),
    paper_result=("+2.1 COMET on average over 756 translation directions; +6.2 points on average on three math "
                  "benchmarks; +9.3 points as an inference-time reranker; label-free DuPO approaches or beats RL "
                  "with oracle labels."),
)
LABELS = {"oracle": "GRPO, oracle reward (RLVR)", "dupo": "GRPO, DuPO reward",
          "dupo_nofilter": "GRPO, DuPO without filter", "random": "GRPO, random reward (negative control)"}
GATE_TEXT = ("Gates ({gates}): unless each holds on every seed the verdict is inconclusive and the claim checks are "
             "reported as unclear; once they hold, the other checks alone decide the verdict by the rule above")
DERIVED = "dupo_gain_minus_fraction_of_oracle_gain"
RERANK_N = 8  # the N of the reranking check (dual_minus_majority_at_8)


@dataclass(frozen=True)
class Paths(ReportPaths):
    evaluation: Path = inp("metrics from evaluate")
    rl_log: Path = inp("RL reward curves")
    sft: Path = inp("the SFT model's manifest.json (validation curve, chosen step, size; not its weights)")


def gain_beyond_fraction(dupo_minus_sft: list[float], oracle_minus_sft: list[float], fraction: float) -> list[float]:
    """Per seed: DuPO's gain over SFT minus ``fraction`` × the oracle reward's gain (≥ 0: the fraction is reached)."""
    return [d - fraction * o for d, o in zip(dupo_minus_sft, oracle_minus_sft, strict=True)]


def gated_decide(rule: VerdictRule, per_seed: dict[str, list[float]], gates: list[str]) -> tuple[Verdict,
                                                                                                 list[CheckOutcome]]:
    """The rule's verdict with gates: a gate not holding on every seed makes it inconclusive, claims unclear."""
    outcomes = []
    for check in rule.checks:
        if check.metric not in per_seed:
            raise KeyError(f"verdict check '{check.name}' needs metric '{check.metric}', measured {sorted(per_seed)}")
        values = [np.nan if v is None else float(v) for v in per_seed[check.metric]]
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


def seeds_needed(values: list[float], threshold: float) -> int | None:
    """Seeds for a 95% interval on the mean to exclude ``threshold``: n = ⌈(1.96 s / |mean − threshold|)²⌉."""
    distance = abs(float(np.mean(values)) - threshold) if values else 0.0
    if len(values) < 2 or distance < 1e-12:
        return None
    return max(2, int(np.ceil((1.96 * float(np.std(values, ddof=1)) / distance) ** 2)))


def rerank_minus_greedy(rerank: dict[str, Any], n: int) -> list[float]:
    """Per seed: dual-rerank accuracy at N = ``n`` minus greedy SFT decoding on the same problems."""
    k = list(rerank["ns"]).index(n)
    return [r["dual"][k] - rerank["sft_greedy"] for r in rerank["per_seed"]]


def smooth(x: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average (the first points average what is available)."""
    c = np.cumsum(np.insert(x, 0, 0.0))
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(0, idx - window)
    return (c[idx] - c[lo]) / (idx - lo)


def plot_curves(log: pd.DataFrame, column: str, ylabel: str, path: Path) -> None:
    """A per-step training quantity for every method (moving average), seeds as min-max bands."""
    window = max(1, int(log.step.max()) // 10)
    with figure(path, figsize=(7, 4.2)) as (_, ax):
        for method, g in log.groupby("method", sort=False):
            runs = np.stack([smooth(r.sort_values("step")[column].to_numpy(), window)
                             for _, r in g.groupby("seed_index")])
            band(ax, np.arange(1, runs.shape[1] + 1), runs, f"{LABELS[method]} (n={runs.shape[0]})")
        ax.set_xlabel("GRPO step")
        ax.set_ylabel(f"{ylabel} ({window}-step mean)")
        ax.legend(fontsize=8)


def plot_accuracy(runs: pd.DataFrame, sft: dict[str, float], path: Path) -> None:
    """Held-out accuracy per method: seeds as dots, the SFT start as a dashed line."""
    methods = list(dict.fromkeys(runs.method))
    with figure(path, figsize=(6.5, 4.2)) as (_, ax):
        for i, m in enumerate(methods):
            vals = runs[runs.method == m].primal_accuracy.to_numpy()
            ax.bar(i, vals.mean(), color="C0", alpha=0.6)
            ax.plot(np.full(len(vals), i), vals, "k.", ms=8)
        ax.axhline(sft["primal_accuracy"], ls="--", color="C3", label="SFT start")
        ax.set_xticks(range(len(methods)), [LABELS[m].replace("GRPO, ", "") for m in methods], fontsize=8)
        ax.set_ylabel("held-out exact-match accuracy (greedy)")
        ax.legend(fontsize=8)


def plot_rerank(rerank: dict[str, Any], path: Path) -> None:
    """Best-of-N accuracy against N: dual reranking, majority vote, random pick and the pass@N ceiling."""
    ns = np.asarray(rerank["ns"])
    names = {"dual": "dual-reconstruction rerank", "reachable": "filter alone (any number determined)",
             "majority": "majority vote", "random": "random pick",
             "pass": "pass@N (ceiling)"}
    with figure(path, figsize=(6.5, 4.2)) as (_, ax):
        for key, label in names.items():
            band(ax, ns, np.array([r[key] for r in rerank["per_seed"]]), label)
        ax.axhline(rerank["sft_greedy"], ls="--", color="k", lw=1, label="greedy decoding (one answer)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_xlabel("N sampled answers (SFT model)")
        ax.set_ylabel("held-out accuracy of the chosen answer")
        ax.legend(fontsize=8)


def plot_sft(manifest: dict[str, Any], band_: tuple[float, float], path: Path) -> None:
    """Validation accuracy of both tasks against SFT steps; the chosen checkpoint marked."""
    curve = manifest["val_curve"]
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        steps = [c["step"] for c in curve]
        ax.plot(steps, [c["val_primal"] for c in curve], marker=".", label="primal (validation)")
        ax.plot(steps, [c["val_dual"] for c in curve], marker=".", label="dual given the true answer (validation)")
        ax.axvline(manifest["chosen"]["step"], ls=":", color="k", label="chosen checkpoint")
        ax.axhspan(*band_, color="C2", alpha=0.1, label="primal target band")
        ax.set_xlabel("SFT step")
        ax.set_ylabel("accuracy (greedy)")
        ax.legend(fontsize=8)


def method_rows(runs: pd.DataFrame, sft: dict[str, float], log: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per model: held-out accuracy, dual accuracy, parse rate, length; training reward agreement."""
    rows = [{"model": "SFT (start)", "test accuracy": f"{sft['primal_accuracy']:.3f}",
             "dual accuracy": f"{sft['dual_accuracy']:.3f}", "parsed": f"{sft['parsed']:.3f}",
             "output chars": f"{sft['length']:.1f}", "training reward": "", "rollout accuracy": "",
             "DuPO reward = oracle (training)": ""}]
    for m in dict.fromkeys(runs.method):
        g, lg = runs[runs.method == m], log[log.method == m]
        rows.append({"model": LABELS[m], "test accuracy": mean_std(g.primal_accuracy.tolist()),
                     "dual accuracy": mean_std(g.dual_accuracy.tolist()), "parsed": mean_std(g.parsed.tolist()),
                     "output chars": mean_std(g.length.tolist(), 1),
                     "training reward": mean_std(lg.groupby("seed_index").reward.mean().tolist()),
                     "rollout accuracy": mean_std(lg.groupby("seed_index").oracle_accuracy.mean().tolist()),
                     "DuPO reward = oracle (training)":
                         mean_std(lg.groupby("seed_index").reward_agreement.mean().tolist())})
    return rows


def rerank_rows(rerank: dict[str, Any]) -> list[dict[str, Any]]:
    """Per N: mean ± std over seeds of each selection rule."""
    rows = []
    for k, n in enumerate(rerank["ns"]):
        rows.append({"N": n, **{label: mean_std([r[key][k] for r in rerank["per_seed"]])
                                for key, label in (("dual", "dual rerank"), ("reachable", "filter alone"),
                                                   ("majority", "majority vote"), ("random", "random pick"),
                                                   ("pass", "pass@N"))}})
    return rows


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed metrics and write the report."""
    ev = read_json(paths.evaluation)
    log = read_rl_log(paths.rl_log)
    manifest = read_json(paths.sft)
    timings = read_timings(paths.timings, TIMED_STEPS)
    runs = pd.DataFrame(ev["runs"])
    per_seed = dict(ev["per_seed"])
    if "dupo_minus_sft" in per_seed and "oracle_minus_sft" in per_seed:
        per_seed[DERIVED] = gain_beyond_fraction(per_seed["dupo_minus_sft"], per_seed["oracle_minus_sft"],
                                                 cfg.report.oracle_fraction)
    checked = {c.metric for c in cfg.verdict.checks}
    missing = checked - set(per_seed)
    if missing:
        raise KeyError(f"{PAPER}: the verdict needs metrics that were not measured: {sorted(missing)}")
    headline = {k: mean_std(v, 3) for k, v in per_seed.items()}
    claim = decide_claim(CARD, cfg.verdict, {k: v for k, v in per_seed.items() if k in checked},
                         seeds=ev["seeds"], profile=ctx.profile, timings=timings, measured=headline)
    verdict, outcomes = gated_decide(cfg.verdict, per_seed, cfg.report.gates)
    gate_text = GATE_TEXT.format(gates=", ".join(cfg.report.gates))
    claim = ClaimRecord.model_validate({**claim.model_dump(), "verdict": verdict,
                                        "checks": [o.model_dump() for o in outcomes],
                                        "verdict_rule": f"{claim.verdict_rule}. {gate_text}"})
    power = [{"check": c.name, "per-seed std": float(np.std(per_seed[c.metric], ddof=1))
              if len(per_seed[c.metric]) > 1 else float("nan"),
              "seeds for a 95% interval to exclude the threshold": seeds_needed(per_seed[c.metric], c.threshold)
              if c.metric not in cfg.report.gates else "(gate)"} for c in cfg.verdict.checks]
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_accuracy(runs, ev["sft"], paths.plots / "test_accuracy.png")
    plot_curves(log, "reward", "training reward (each method's own)", paths.plots / "reward_curves.png")
    plot_curves(log, "oracle_accuracy", "rollout accuracy against the label", paths.plots / "rollout_accuracy.png")
    plot_rerank(ev["rerank"], paths.plots / "rerank.png")
    plot_sft(manifest, tuple(cfg.sft.target_primal), paths.plots / "sft_validation.png")
    plots = ["test_accuracy.png", "reward_curves.png", "rollout_accuracy.png", "rerank.png", "sft_validation.png"]
    over_greedy = rerank_minus_greedy(ev["rerank"], RERANK_N)
    metrics = {"per_seed": per_seed, "dual_rerank_minus_greedy_at_8": over_greedy, "sft": ev["sft"],
               "filter": ev["filter"], "rl_pool": {"problems": ev["n_rl_pool"], "of": ev["n_rl_split"]},
               "runs": [{k: r[k] for k in ("run", "primal_accuracy", "dual_accuracy", "length")} for r in ev["runs"]],
               "rerank": ev["rerank"], "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, ev=ev, cfg=cfg, manifest=manifest, plots=plots, power=power,
                 gate_text=gate_text, methods=method_rows(runs, ev["sft"], log), reranks=rerank_rows(ev["rerank"]),
                 steps=int(log.step.max()), n_runs=len(runs), over_greedy=over_greedy, rerank_n=RERANK_N,
                 random_pick=float(np.mean([r["random"][0] for r in ev["rerank"]["per_seed"]])),
                 oracle_fraction=cfg.report.oracle_fraction, per_seed=per_seed,
                 fail_by_op=[{"hidden number's operation": op, "share failing the filter": v}
                             for op, v in ev["filter"]["fail_share_by_op"].items()])
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
