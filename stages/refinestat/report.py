"""Step ``report``: run rates, reliability, predictive density against the expert, the verdict, report.md."""

from __future__ import annotations

import math
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
from stages.refinestat.config import METHODS, PAPER
from stages.refinestat.expectations import programs_suite, versions_suite
from stages.refinestat.pipeline import PATHS
from stages.refinestat.reliability import CHECKS
from stages.refinestat.report_config import ReportStepInputs, load_report_step
from stages.refinestat.tasks import TASKS

TIMED_STEPS = ("data", "synthesize")
CARD = PaperCard(
    paper=PAPER,
    title=("RefineStat: efficient exploration for probabilistic program synthesis with semantic constraints and "
           "diagnostic-aware refinement (ICLR 2026; abstract in ../shared/seeds/iclr2026-abstracts.txt, issue 25)"),
    claim=("With a small language model, constraining each generated statement to be semantically valid and "
           "refining programs whose MCMC diagnostics fail yields far more valid, runnable probabilistic programs "
           "than unconstrained or syntax-only decoding, and programs whose predictive density is close to expert "
           "programs on most data sets."),
    paper_result=("Run rate 0.50 for RefineStat against 0.11 (unconstrained) and 0.21 (syntax-only) at T = 0.3 with "
                  "small LMs; ELPD close to expert programs on most data sets (e.g. Eight Schools), with a clear loss "
                  "on some (Dugongs)."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    programs: Path = inp("returned program per (seed, task, arm, attempt) with its diagnostics")
    versions: Path = inp("every sandbox run")
    trace: Path = inp("the masking and rejection trace")


def returned_program(part: pd.DataFrame) -> pd.Series | None:
    """The program a method returns for a task: its most reliable runnable attempt (ties: the earliest).

    Selection never reads the predictive score, so the score compared with the expert is not biased by it."""
    ok = part[part.runnable].sort_values("attempt")
    if ok.empty:
        return None
    return ok.iloc[int(np.argmax(ok.score.to_numpy()))]


def binom_pmf(k: int, n: int, p: float) -> float:
    """P(K = k) for K ~ Binomial(n, p)."""
    return math.comb(n, k) * p ** k * (1 - p) ** (n - k)


def seed_clears_probability(rates: dict[str, float], n: int, margin: float) -> float:
    """P(one seed clears both run-rate margins) with n independent attempts per method at the given run rates.

    RefineStat's count R must exceed each baseline's count by at least ceil(margin * n) runnable attempts."""
    need = math.ceil(margin * n - 1e-9)
    base = [rates["unconstrained"], rates["syntax"]]
    return sum(binom_pmf(r, n, rates["refinestat"])
               * math.prod(sum(binom_pmf(b, n, q) for b in range(0, r - need + 1)) for q in base)
               for r in range(n + 1))


def _value(x: Any) -> float:
    return math.nan if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _gap(p: pd.DataFrame, task: str, arm: str, expert: pd.Series) -> float:
    """The predictive score of an arm's (first) program minus the expert's on one task, nan if either is missing."""
    rows = p[(p.task == task) & (p.arm == arm)]
    return math.nan if rows.empty else _value(rows.iloc[0].predictive) - _value(expert.predictive)


def verdict_metrics(programs: pd.DataFrame, n_seeds: int, tolerance: float, null_margin: float = 0.1
                    ) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: gates (experts reliable, expert vs mis-specified separation, the scripted positive
    control writes the valid program, tasks where some method runs) and claims (run-rate margins, RefineStat's
    predictive density within tolerance of the expert, and not below the null model's by more than ``null_margin``,
    each over the conclusive tasks); the null model's share within tolerance beside them."""
    out: dict[str, list[float | None]] = {k: [] for k in (
        "run_rate_unconstrained", "run_rate_syntax", "run_rate_refinestat", "run_rate_refinestat_minus_unconstrained",
        "run_rate_refinestat_minus_syntax", "expert_reliability_min", "reliability_separation_min",
        "scripted_control_accepts", "conclusive_tasks", "heldout_within_tolerance_fraction",
        "heldout_not_below_null_fraction", "null_within_tolerance_fraction")}
    for s in range(n_seeds):
        p = programs[programs.seed_index == s]
        rates = {m: float(p[p.arm == m].runnable.mean()) if (p.arm == m).any() else math.nan for m in METHODS}
        for m in METHODS:
            out[f"run_rate_{m}"].append(rates[m])
        out["run_rate_refinestat_minus_unconstrained"].append(rates["refinestat"] - rates["unconstrained"])
        out["run_rate_refinestat_minus_syntax"].append(rates["refinestat"] - rates["syntax"])
        tasks = sorted(set(p.task))
        expert = {t: p[(p.task == t) & (p.arm == "expert")].iloc[0] for t in tasks}
        control = {t: p[(p.task == t) & (p.arm == "misspecified")].iloc[0] for t in tasks}
        out["expert_reliability_min"].append(float(min(expert[t].score for t in tasks)))
        out["reliability_separation_min"].append(float(min(expert[t].score - control[t].score for t in tasks)))
        scripted = [p[(p.task == t) & (p.arm == "scripted_refinestat")] for t in tasks]
        out["scripted_control_accepts"].append(float(np.mean([
            bool(not g.empty and g.iloc[0].runnable and g.iloc[0].program == "\n".join(TASKS[t].expert))
            for t, g in zip(tasks, scripted, strict=True)])))
        conclusive = [t for t in tasks if p[(p.task == t) & p.arm.isin(METHODS)].runnable.any()]
        out["conclusive_tasks"].append(len(conclusive) / len(tasks))
        within, above_null = [], []
        for t in conclusive:
            chosen = returned_program(p[(p.task == t) & (p.arm == "refinestat")])
            gap = math.nan if chosen is None else _value(chosen.predictive) - _value(expert[t].predictive)
            within.append(bool(np.isfinite(gap) and gap >= -tolerance))
            null_gap = _gap(p, t, "null", expert[t])  # null - expert
            above_null.append(bool(np.isfinite(gap) and np.isfinite(null_gap) and gap >= null_gap - null_margin))
        out["heldout_within_tolerance_fraction"].append(float(np.mean(within)) if within else math.nan)
        out["heldout_not_below_null_fraction"].append(float(np.mean(above_null)) if above_null else math.nan)
        nulls = [_gap(p, t, "null", expert[t]) for t in tasks]
        out["null_within_tolerance_fraction"].append(
            float(np.mean([np.isfinite(g) and g >= -tolerance for g in nulls])) if (p.arm == "null").any()
            else math.nan)
    return out


def null_rows(programs: pd.DataFrame, n_seeds: int, tolerance: float) -> list[dict[str, Any]]:
    """Per task and seed: the expert's and the null model's predictive score per point, and the null's gap."""
    rows = []
    for task in sorted(set(programs.task)):
        for s in range(n_seeds):
            p = programs[(programs.task == task) & (programs.seed_index == s)]
            if p.empty or not (p.arm == "null").any():
                continue
            e, n = p[p.arm == "expert"].iloc[0], p[p.arm == "null"].iloc[0]
            gap = _value(n.predictive) - _value(e.predictive)
            rows.append({"task": task, "seed": s, "expert": f"{_value(e.predictive):.3f}",
                         "null model": f"{_value(n.predictive):.3f} ({int(n.score)}/7)", "null - expert": f"{gap:+.3f}",
                         f"within {tolerance:g}": "yes" if np.isfinite(gap) and gap >= -tolerance else "no"})
    return rows


def scripted_rows(programs: pd.DataFrame, trace: pd.DataFrame) -> list[dict[str, Any]]:
    """The scripted positive control per task and arm (first seed): the program's first statement, whether it is
    the valid (expert) program, tokens, masked draws, the sandbox outcome."""
    rows = []
    p = programs[(programs.seed_index == 0) & programs.arm.str.startswith("scripted_")]
    for _, r in p.sort_values(["task", "arm"]).iterrows():
        first = str(r.program).split("\n")[0] if r.program else "(none)"
        rows.append({"task": r.task, "method": r.arm.removeprefix("scripted_"),
                     "first statement": f"`{first}`", "valid program": "yes" if r.program == "\n".join(
                         TASKS[r.task].expert) else "no", "tokens": int(r.tokens), "masked draws": int(r.masked),
                     "sandbox": str(r.outcome) + (f" ({str(r.error).split(':')[0]})" if not r.runnable and r.error
                                                  else "")})
    return rows


def trace_rows(programs: pd.DataFrame, trace: pd.DataFrame) -> list[dict[str, Any]]:
    """Per method (LM attempts): masked draws, dead ends and resampled statements per attempt, and the masked
    draws by the kind of constraint that removed them."""
    rows = []
    for m in METHODS:
        att = programs[programs.arm == m]
        t = trace[trace.arm == m]
        if att.empty:
            continue
        masked = t[t.event == "masked"]
        kinds = masked.reason.str.split(":").str[0].value_counts()
        rows.append({"method": m, "attempts": len(att), "masked draws / attempt": f"{att.masked.mean():.1f}",
                     "dead ends / attempt": f"{(t.event == 'dead_end').sum() / len(att):.1f}",
                     "resampled statements / attempt": f"{(t.event == 'resampled').sum() / len(att):.1f}",
                     "logged masked draws by kind": ", ".join(f"{k} {v}" for k, v in kinds.items()) or "–"})
    return rows


def trace_examples(trace: pd.DataFrame, n: int) -> list[dict[str, Any]]:
    """The first masked draws of RefineStat's LM attempts of different kinds (one per constraint kind)."""
    masked = trace[(trace.arm == "refinestat") & (trace.event == "masked")]
    rows = []
    for kind, g in masked.groupby(masked.reason.str.split(":").str[0]):
        r = g.iloc[0]
        head = r.prefix if len(r.prefix) <= 60 else "…" + r.prefix[-60:]
        rows.append({"kind": kind, "line so far": f"`{head}`", "masked token": f"`{r.token!s}`",
                     "probability": f"{r.prob:.3f}", "reason": r.reason})
    return rows[:n]


def method_rows(programs: pd.DataFrame, n_seeds: int, min_passing: int) -> list[dict[str, Any]]:
    """Per method and task: run rate, first-draft run rate, reliable share, tokens, resamples (mean ± std, seeds)."""
    rows = []
    for task in sorted(set(programs.task)):
        for m in METHODS:
            part = programs[(programs.task == task) & (programs.arm == m)]
            if part.empty:
                continue
            by = part.groupby("seed_index")

            def per_seed(fn: Any, by: Any = by) -> list[float]:
                return [float(fn(g)) for _, g in by]

            reliable = mean_std(per_seed(lambda g: (g.score >= min_passing).mean()), 2)
            rows.append({"task": task, "method": m, "run rate": mean_std(per_seed(lambda g: g.runnable.mean()), 2),
                         "first draft runs": mean_std(per_seed(lambda g: g.first_runnable.mean()), 2),
                         f"reliable (>= {min_passing}/7)": reliable,
                         "tokens / attempt": mean_std(per_seed(lambda g: g.tokens.mean()), 0),
                         "masked draws / attempt": mean_std(per_seed(lambda g: g.masked.mean()), 1),
                         "resampled lines / attempt": mean_std(per_seed(lambda g: g.resampled.mean()), 1),
                         "sandbox runs / attempt": mean_std(per_seed(lambda g: g.n_versions.mean()), 1)})
    return rows


def predictive_rows(programs: pd.DataFrame, n_seeds: int) -> list[dict[str, Any]]:
    """Per task and seed: the predictive score per point of each method's returned program and of the expert."""
    rows = []
    for task in sorted(set(programs.task)):
        for s in range(n_seeds):
            p = programs[(programs.task == task) & (programs.seed_index == s)]
            if p.empty:
                continue
            row: dict[str, Any] = {"task": task, "seed": s,
                                   "score": "held-out lpd / point" if TASKS[task].exchangeable else "ELPD-LOO / point"}
            for arm in ("expert", "misspecified", "null", *METHODS):
                if not (p.arm == arm).any():
                    continue
                chosen = (p[p.arm == arm].iloc[0] if arm in ("expert", "misspecified", "null")
                          else returned_program(p[p.arm == arm]))
                missing = chosen is None or chosen.predictive is None or not np.isfinite(chosen.predictive)
                ran = chosen is not None and bool(chosen.runnable)
                row[arm] = (f"{chosen.predictive:.3f} ({int(chosen.score)}/7)" if not missing
                            else f"– ({int(chosen.score)}/7)" if ran else "–")
            rows.append(row)
    return rows


def error_kinds(part: pd.DataFrame) -> dict[str, int]:
    """How the returned programs that did not run failed: the exception class of each, counted."""
    kinds = part.error.str.extract(r"^(\w+Error)")[0].fillna("other")
    return {str(k): int(v) for k, v in kinds.value_counts().sort_index().items()}


def plot_run_rates(programs: pd.DataFrame, path: Path) -> None:
    """Run rate per method and task, seeds as points."""
    tasks = sorted(set(programs.task))
    with figure(path, figsize=(6.4, 3.8)) as (_, ax):
        width = 0.8 / len(METHODS)
        for j, m in enumerate(METHODS):
            for i, t in enumerate(tasks):
                r = programs[(programs.task == t) & (programs.arm == m)].groupby("seed_index").runnable.mean()
                x = i + (j - (len(METHODS) - 1) / 2) * width
                ax.bar(x, r.mean() if len(r) else 0, width, color=f"C{j}", label=m if i == 0 else None, alpha=0.7)
                ax.scatter([x] * len(r), r, color="k", s=8)
        ax.set_xticks(range(len(tasks)), tasks)
        ax.set_ylabel("run rate (runnable attempts)")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8)


def plot_reliability(versions: pd.DataFrame, path: Path) -> None:
    """Distribution of the reliability score of every sandbox run, per arm (-1: did not run)."""
    arms = [a for a in ("expert", "misspecified", "null", *METHODS) if (versions.arm == a).any()]
    with figure(path, figsize=(6.4, 3.8)) as (_, ax):
        bins = np.arange(-1.5, 8.5, 1.0)
        width = 0.8 / len(arms)
        for j, a in enumerate(arms):
            counts, _ = np.histogram(versions[versions.arm == a].score, bins=bins)
            share = counts / max(1, counts.sum())
            ax.bar(bins[:-1] + 0.5 + (j - (len(arms) - 1) / 2) * width, share, width, label=a, color=f"C{j}")
        ax.set_xlabel("reliability score (checks passed of 7; -1 = did not run)")
        ax.set_ylabel("share of sandbox runs")
        ax.legend(fontsize=8)


def run(cfg: ReportStepInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict and write the report."""
    programs = read_parquet(paths.programs, columns=["seed_index", "task", "arm", "attempt", "runnable", "score",
                                                     "outcome", "program", "predictive", "tokens", "first_runnable",
                                                     "resampled", "masked", "n_versions", "error"])
    validate_table(programs, f"{PAPER}.programs", programs_suite(len(programs)))
    versions = read_parquet(paths.versions, columns=["seed_index", "task", "arm", "attempt", "version", "score"])
    validate_table(versions, f"{PAPER}.versions", versions_suite(len(versions)))
    trace = read_parquet(paths.trace, columns=["seed_index", "task", "arm", "attempt", "event", "prefix", "token",
                                               "prob", "reason"])
    n_seeds = int(programs.seed_index.max()) + 1
    timings = read_timings(paths.timings, TIMED_STEPS)
    tol = cfg.report.heldout_tolerance
    per_seed = verdict_metrics(programs, n_seeds, tol, cfg.report.null_margin)
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(n_seeds)), profile=ctx.profile,
                                       timings=timings), cfg.report.gates)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_run_rates(programs, paths.plots / "run_rates.png")
    plot_reliability(versions, paths.plots / "reliability.png")
    ok = programs[programs.arm.isin(METHODS)]
    examples = {m: next(iter(ok[(ok.arm == m) & ok.runnable].sort_values(["seed_index", "task", "attempt"])
                             [["program", "task", "seed_index"]].itertuples(index=False)), None) for m in METHODS}
    drafts = {m: {"tokens": float(ok[ok.arm == m].tokens.mean()), "resampled": float(ok[ok.arm == m].resampled.mean()),
                  "masked": float(ok[ok.arm == m].masked.mean()),
                  "complete": float((ok[ok.arm == m].n_versions > 0).mean()),
                  "runs": float(ok[ok.arm == m].n_versions.mean()),
                  "run_rate": float(ok[ok.arm == m].runnable.mean()),
                  "first": float(ok[ok.arm == m].first_runnable.mean())} for m in METHODS if (ok.arm == m).any()}
    metrics = {"per_seed": per_seed, "verdict": claim.verdict,
               "run_rate": {m: d["run_rate"] for m, d in drafts.items()},
               "tokens_per_attempt": {m: d["tokens"] for m, d in drafts.items()}}
    rep = cfg.context
    tasks = sorted(set(programs.task))
    n_attempts = int(ok.groupby(["seed_index", "task", "arm"]).size().max())
    n_per_seed = len(tasks) * n_attempts
    margins = {c.metric: c.threshold for c in cfg.verdict.checks}
    margin = max(margins.get("run_rate_refinestat_minus_unconstrained", 0.0),
                 margins.get("run_rate_refinestat_minus_syntax", 0.0))
    p_seed = seed_clears_probability(rep.paper_run_rates, n_per_seed, margin)
    p_seed_pilot = seed_clears_probability(rep.pilot.run_rates, n_per_seed, margin)
    scored_arms = programs[programs.arm.isin(["expert", "misspecified", "null", *METHODS])]
    unscored = scored_arms[scored_arms.runnable & ~np.isfinite(scored_arms.predictive.astype(float))]
    unscored_rows = [{"task": t, "arm": a, "reliability of each such program (seed: score)":
                      ", ".join(f"{int(s_)}: {int(x)}/7" for s_, x in zip(g.seed_index, g.score, strict=True)),
                      "held-out rebuild error (first)": str(g.error.iloc[0])[:120]}
                     for (t, a), g in unscored.groupby(["task", "arm"])]
    n_two = 2 * len(tasks)  # the earlier runs' size: 2 attempts per method, task and seed
    p_all_two = seed_clears_probability(rep.paper_run_rates, n_two, margin) ** n_seeds
    margin_attempts = math.ceil(margin * n_per_seed - 1e-9)
    margin_attempts_two = math.ceil(margin * n_two - 1e-9)
    errors = error_kinds(ok[~ok.runnable & (ok.n_versions > 0)])
    wall_min = sum(timings.values()) / 60
    synth_timing = read_json(Path(paths.timings) / "synthesize.json")  # load and CPU: absent in older timings
    synth_s = timings["synthesize"]  # the runner's wall time: decoding, sandbox runs and controls together
    write_report(paths, claim, metrics, timings, n_seeds=n_seeds, tol=tol, min_passing=cfg.min_passing,
                 per_seed=per_seed, method_rows=method_rows(programs, n_seeds, cfg.min_passing),
                 predictive_rows=predictive_rows(programs, n_seeds), gates=cfg.report.gates,
                 tasks=tasks, examples=examples, n_attempts=n_attempts,
                 token_budget=cfg.token_budget, max_runs=cfg.max_runs, drafts=drafts,
                 any_runnable=bool(ok.runnable.any()), errors=errors,
                 n_checks=len(CHECKS), rel=cfg.reliability, gen=cfg.generate, sampler=cfg.sampler,
                 sandbox=cfg.sandbox, rep=rep, pilot=rep.pilot, history=rep.history, gemma=rep.gemma,
                 gp=rep.generator_pilot,
                 generator=Path(PATHS["lm"]).name, n_methods=len(METHODS), n_per_seed=n_per_seed, margin=margin,
                 p_seed=p_seed, p_all=p_seed ** n_seeds, p_seed_pilot=p_seed_pilot,
                 p_all_pilot=p_seed_pilot ** n_seeds, unscored_rows=unscored_rows, p_all_two=p_all_two,
                 margin_attempts=margin_attempts, margin_attempts_two=margin_attempts_two,
                 p_seed_double=seed_clears_probability(rep.paper_run_rates, 2 * n_per_seed, margin),
                 null_share_max=max([x for x in per_seed["null_within_tolerance_fraction"]
                                     if x is not None and np.isfinite(x)], default=0.0),
                 null_rows=null_rows(programs, n_seeds, tol), null_margin=cfg.report.null_margin,
                 scripted_rows=scripted_rows(programs, trace),
                 trace_rows=trace_rows(ok, trace[trace.arm.isin(METHODS)]), trace_examples=trace_examples(trace, 8),
                 trace_max=int(trace.groupby(["seed_index", "task", "arm", "attempt"]).size().max()) if len(trace)
                 else 0,
                 gate_failures={c.name: [i for i, v in enumerate(per_seed[c.metric])
                                         if v is None or not np.isfinite(v) or not c.passes(v)]
                                for c in cfg.verdict.checks if c.name in cfg.report.gates},
                 claims_per_seed={c.name: [bool(v is not None and np.isfinite(v) and c.passes(v))
                                           for v in per_seed[c.metric]]
                                  for c in cfg.verdict.checks if c.name not in cfg.report.gates},
                 wall_min=wall_min, synth_load=synth_timing.get("load_average_1min"),
                 synth_cpu_s=synth_timing.get("cpu_time_s"),
                 n_tokens_run=int(ok.tokens.sum()), n_sandbox_runs=int(ok.n_versions.sum()),
                 n_distinct=int(programs[programs.n_versions > 0].program.nunique()),
                 synth_s=synth_s, tokens_per_s=float(ok.tokens.sum()) / synth_s if synth_s > 0 else math.nan,
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report_step, Paths)


if __name__ == "__main__":
    main()
