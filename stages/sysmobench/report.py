"""Step ``report``: the leaderboard per system and metric, the verdict, report.md, plots, metrics.json, claim.json."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.sysmobench.config import PAPER, PreviousRule, ReportInputs, load_report
from stages.sysmobench.expectations import METRICS as METRIC_NAMES
from stages.sysmobench.generators import EXAMPLE_OF
from stages.sysmobench.io import read_scores
from stages.sysmobench.metrics import tool_runs
from stages.sysmobench.mutation import OPERATORS, TARGET_METRIC
from stages.sysmobench.specs import REFERENCE

TIMED_STEPS = ("traces", "generate", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("SysMoBench: Evaluating AI on Formally Modeling Complex Real-World Systems (ICLR 2026; abstract in "
           "../shared/seeds/iclr2026-abstracts.txt, issue 26)"),
    claim=("Automated metrics can score an AI-written TLA+ model of a real system artifact: syntax (SANY), runtime "
           "(TLC simulation covers the actions without errors), conformance (instrumented executions of the code "
           "replay in the spec) and invariants (TLC confirms the system's invariant templates); each catches the "
           "mistakes it is meant for. The verdict here covers only the metrics (each catches the mutants meant for "
           "it and not a spec with the reference's behaviour, and the ordering on mutants); the paper's model finding "
           "(high syntax, far lower conformance) is untested here: the only model is a 135M few-shot generator, "
           "reported outside the verdict (under Scope of the verdict)."),
    paper_result=("Eleven system artifacts (Etcd and Redis Raft, ZooKeeper leader election, Asterinas spinlock / "
                  "mutex / ring buffer, ...); e.g. on Etcd Raft a model scored syntax 100%, runtime 25%, conformance "
                  "7.69%, invariants 69.23%: current models write parseable TLA+ but rarely specs that conform to "
                  "the code."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    scores: Path = inp("the four metrics of every candidate, per seed and system")


LIMITS = ("timeout", "memory", "output", "cpu")  # a run stopped by a limit decides nothing
NEUTRAL_KINDS = ("renamed", "reordered")  # the reference's behaviour under another text: no metric may catch them
WIRING = ("rename_variable", "remove_action")  # operators whose target metric catches them by construction


def counted_mutants(scores: pd.DataFrame) -> pd.DataFrame:
    """The mutants that count: not equivalent to the reference."""
    return scores[(scores.kind == "mutant") & ~scores.equivalent]


def neutral_candidates(scores: pd.DataFrame) -> pd.DataFrame:
    """The candidates no metric should catch: the renamed and reordered references and the equivalent mutants."""
    return scores[scores.kind.isin(NEUTRAL_KINDS) | ((scores.kind == "mutant") & scores.equivalent)]


def run_ending(outcomes: str, metric: str) -> str | None:
    """How the tool run behind ``metric`` ended (``ok``, ``error``, ``violated`` or a limit); None if it never ran
    (SANY rejected the module)."""
    found = re.search(rf"\b{'sany' if metric == 'syntax' else metric}=(\w+)", outcomes)
    return found.group(1) if found else None


def caught_by(score: float, outcomes: str, metric: str) -> bool:
    """Whether ``metric`` catches a candidate: a score below 1 from a run that decided it. For invariants only a
    TLC-reported invariant violation is a catch; a run stopped by a limit is unclear and catches nothing."""
    ending = run_ending(outcomes, metric)
    if score >= 1.0 or ending is None or ending in LIMITS:
        return False
    return ending == "violated" if metric == "invariants" else True


def caught_mask(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Per row: whether ``metric`` catches it (:func:`caught_by`)."""
    return pd.Series([caught_by(v, o, metric) for v, o in zip(rows[metric], rows.outcomes, strict=True)],
                     index=rows.index, dtype=bool)


def caught_share(mutants: pd.DataFrame, operator: str) -> float:
    """Share of an operator's mutants that its target metric catches (:func:`caught_by`); NaN if none."""
    part = mutants[mutants.operator == operator]
    return float(caught_mask(part, TARGET_METRIC[operator]).mean()) if len(part) else float("nan")


def ordering_share(mutants: pd.DataFrame) -> float:
    """Share of the mutants SANY accepts and some metric scores below 1 with syntax >= runtime >= conformance
    (the paper's ordering); NaN if there are none. Mutants SANY rejects are left out: runtime and conformance
    are 0 for them whatever the metrics measure, so they would pass by construction."""
    parsed = mutants[mutants.whole_module_parses]
    caught = parsed[(parsed[list(METRIC_NAMES)] < 1.0).any(axis=1)]
    if caught.empty:
        return float("nan")
    ok = (caught.syntax >= caught.runtime) & (caught.runtime >= caught.conformance)
    return float(ok.mean())


def specificity(neutral: pd.DataFrame, metric: str) -> float:
    """Share of the candidates with the reference's behaviour that ``metric`` scores 1 (leaves uncaught); NaN if
    there are none."""
    return float((neutral[metric] >= 1.0).mean()) if len(neutral) else float("nan")


def verdict_metrics(scores: pd.DataFrame, operators: list[str]) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: the reference's lowest score, each operator's caught share, the ordering share,
    each metric's specificity and their minimum, the mutants' mean of each metric (non-finite values, from a
    seed without candidates of a kind, become None)."""
    out: dict[str, list[float | None]] = {}
    for s in sorted(scores.seed_index.unique()):
        part = scores[scores.seed_index == s]
        ref = part[part.kind == "reference"]
        muts = counted_mutants(part)
        neutral = neutral_candidates(part)
        spec = {f"specificity_{m}": specificity(neutral, m) for m in METRIC_NAMES}
        values: dict[str, float] = {"reference_min_score": float(ref[list(METRIC_NAMES)].to_numpy().min()),
                                    "ordering_share": ordering_share(muts),
                                    **{f"caught_{op}": caught_share(muts, op) for op in operators},
                                    **spec, "specificity_min_share": min(spec.values()),
                                    **{f"mutant_mean_{m}": float(muts[m].mean()) if len(muts) else float("nan")
                                       for m in METRIC_NAMES}}
        for key, v in values.items():
            out.setdefault(key, []).append(v if np.isfinite(v) else None)
    return out


def previous_rule_metrics(scores: pd.DataFrame, operators: list[str]) -> dict[str, list[float | None]]:
    """Per-seed metrics as the first rule defined them: any score below 1 is a catch (a time limit included) and
    the ordering counts mutants SANY rejects."""
    out: dict[str, list[float | None]] = {}
    for s in sorted(scores.seed_index.unique()):
        part = scores[scores.seed_index == s]
        muts = counted_mutants(part)
        caught = muts[(muts[list(METRIC_NAMES)] < 1.0).any(axis=1)]
        values = {"reference_min_score": float(part[part.kind == "reference"][list(METRIC_NAMES)].to_numpy().min()),
                  "ordering_share": float(((caught.syntax >= caught.runtime) & (caught.runtime >= caught.conformance))
                                          .mean()) if len(caught) else float("nan"),
                  **{f"caught_{op}": float((muts[muts.operator == op][TARGET_METRIC[op]] < 1.0).mean())
                     if (muts.operator == op).any() else float("nan") for op in operators}}
        for key, v in values.items():
            out.setdefault(key, []).append(v if np.isfinite(v) else None)
    return out


def rule_history(scores: pd.DataFrame, operators: list[str], previous: list[PreviousRule],
                 gates: list[str]) -> list[dict[str, Any]]:
    """Each earlier rule: its checks, its outcome on the run it decided, its outcome on this run (with its own
    metric definitions, :func:`previous_rule_metrics`), per-seed values of its checks here, and why it was
    replaced."""
    per_seed = previous_rule_metrics(scores, operators)
    seeds = sorted(int(s) for s in scores.seed_index.unique())
    rows = []
    for old in previous:
        missing = sorted({c.metric for c in old.rule.checks} - set(per_seed))
        if missing:  # a smaller profile runs fewer operators
            rows.append({"rule": old.rule.describe(), "outcome_then": old.outcome, "why": old.why_replaced,
                         "outcome_now": f"not computable here ({', '.join(missing)} not measured)", "checks": []})
            continue
        claim = decide_claim(CARD, old.rule, per_seed, seeds=seeds, profile="", timings={})
        claim = gated_verdict(claim, [g for g in gates if g in {c.name for c in old.rule.checks}])
        rows.append({"rule": old.rule.describe(), "outcome_then": old.outcome, "outcome_now": claim.verdict,
                     "why": old.why_replaced,
                     "checks": [{"check": c.description, "status": c.status,
                                 "per-seed values": ", ".join("n/a" if v is None else f"{v:.3f}" for v in c.values)}
                                for c in claim.checks]})
    return rows


def evaluation_budget(scores: pd.DataFrame, cpu_s: float, workers: int) -> dict[str, Any]:
    """Evaluate's tool budget: its SANY and TLC runs (:func:`tool_runs` of every candidate, plus one exploration of
    each system's reference) times the CPU-time limit of a run over the JVMs at once, an upper bound of the time
    its tool runs take (each stops at ``cpu_s`` CPU seconds; ``workers`` run at once)."""
    runs = scores.system.nunique() + sum(
        tool_runs(r.spec, REFERENCE[r.system].module, REFERENCE[r.system].in_next, bool(r.whole_module_parses),
                  r.kind == "mutant") for r in scores.itertuples())
    return {"runs": int(runs), "cpu_s": cpu_s, "workers": workers, "bound_s": runs * cpu_s / workers}


def leaderboard(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Per system and candidate class: mean ± std over seeds of each metric (equivalent mutants left out)."""
    rows = []
    kept = scores[~scores.equivalent]
    for system in sorted(kept.system.unique()):
        for name, part in candidate_classes(kept[kept.system == system]):
            per_seed = part.groupby("seed_index")[list(METRIC_NAMES)].mean()
            rows.append({"system": system, "candidate": name, "specs": len(part),
                         **{m: mean_std(per_seed[m].tolist(), 2) for m in METRIC_NAMES}})
    return rows


def candidate_classes(scores: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(name, rows) of the reference, its renamed and reordered forms, each operator's mutants and each
    generator's specs, those present."""
    groups = [(k, scores[scores.kind == k]) for k in ("reference", *NEUTRAL_KINDS)]
    groups += [(op, scores[(scores.kind == "mutant") & (scores.operator == op)]) for op in OPERATORS]
    gen = scores[scores.kind == "generated"]
    groups += [(f"generated: {g}", gen[gen.site == g]) for g in sorted(gen.site.unique())]
    return [(n, g) for n, g in groups if not g.empty]


def catch_matrix(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Per operator (and the candidates with the reference's behaviour): the share each metric catches
    (:func:`caught_by`), all seeds pooled."""
    out = []
    groups = [(op, TARGET_METRIC[op], rows[(rows.kind == "mutant") & ~rows.equivalent & (rows.operator == op)])
              for op in OPERATORS]
    groups.append(("same behaviour (renamed, reordered, equivalent)", "none", neutral_candidates(rows)))
    for name, target, part in groups:
        if part.empty:
            continue
        out.append({"candidates": name, "target": target, "n": len(part),
                    **{m: f"{caught_mask(part, m).mean():.2f}" for m in METRIC_NAMES}})
    return out


def plot_metrics(kept: pd.DataFrame, path: Path) -> None:
    """Mean score per metric for the reference, each operator's mutants and each generator (seeds as dots)."""
    groups = candidate_classes(kept)
    with figure(path, figsize=(11, 4)) as (_, ax):
        width = 0.8 / len(groups)
        for j, (name, g) in enumerate(groups):
            x = np.arange(len(METRIC_NAMES)) + (j - (len(groups) - 1) / 2) * width
            per_seed = g.groupby("seed_index")[list(METRIC_NAMES)].mean()
            ax.bar(x, per_seed.mean().to_numpy(), width, color=f"C{j % 10}", alpha=0.8, label=name)
            for xi, m in zip(x, METRIC_NAMES, strict=True):
                ax.scatter(np.full(len(per_seed), xi), per_seed[m], color="black", s=6, zorder=3)
        ax.set_xticks(np.arange(len(METRIC_NAMES)), list(METRIC_NAMES))
        ax.set_ylabel("mean score")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7, ncol=4)


def plot_checks(claim: Any, thresholds: dict[str, float], path: Path) -> None:
    """Each verdict check's per-seed values (dots) against its threshold (a tick)."""
    with figure(path, figsize=(9, 3.6)) as (_, ax):
        for i, o in enumerate(claim.checks):
            vals = [v for v in o.values if v is not None]
            ax.scatter(np.full(len(vals), i), vals, color="C0", s=18, zorder=3)
            ax.hlines(thresholds[o.name], i - 0.3, i + 0.3, color="C3")
        ax.set_xticks(np.arange(len(claim.checks)), [o.name.split(":")[0] for o in claim.checks], rotation=20,
                      ha="right", fontsize=7)
        ax.set_ylabel("per-seed value (red: threshold)")
        ax.set_ylim(-0.05, 1.05)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed scores and write the report."""
    scores = read_scores(paths.scores)
    operators = [op for op in OPERATORS if op in set(scores.operator)]
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(scores, operators)
    seeds = sorted(int(s) for s in scores.seed_index.unique())
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=seeds, profile=ctx.profile,
                                       timings=timings), cfg.gates)
    thresholds = {c.name: c.threshold for c in cfg.verdict.checks}
    mutants = counted_mutants(scores)
    neutral = neutral_candidates(scores)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_metrics(scores[~scores.equivalent], paths.plots / "metrics_by_candidate.png")
    plot_checks(claim, thresholds, paths.plots / "checks_per_seed.png")
    all_mutants = scores[scores.kind == "mutant"]
    equivalent = all_mutants[all_mutants.equivalent]
    missed = mutants[[not caught_by(r[TARGET_METRIC[r.operator]], r.outcomes, TARGET_METRIC[r.operator])
                      for _, r in mutants.iterrows()]] if len(mutants) else mutants
    neutral_caught = neutral[(neutral[list(METRIC_NAMES)] < 1.0).any(axis=1)]
    draws = mutant_draws(all_mutants)
    metrics = {"per_seed": per_seed,
               "mutant_means": {m: float(mutants[m].mean()) for m in METRIC_NAMES} if len(mutants) else {},
               "counts": {"candidates": len(scores), "mutants": len(all_mutants),
                          "equivalent": len(equivalent), "counted": len(mutants), "same_behaviour": len(neutral)},
               "mutants_per_seed": {str(r["seed"]): {"drawn": r["drawn"], "distinct": r["distinct"],
                                                     "also on another seed": r["also on another seed"]}
                                    for r in draws},
               "verdict": claim.verdict}
    in_verdict = {c.metric for c in cfg.verdict.checks}
    systems = sorted(scores.system.unique())
    write_report(paths, claim, metrics, timings, n_seeds=len(seeds), seeds=seeds, systems=systems,
                 budget=evaluation_budget(scores, cfg.evaluate.cpu_s, cfg.evaluate.workers),
                 examples=[{"system": s, "example": EXAMPLE_OF[s]} for s in systems],
                 operators=operators, board=leaderboard(scores), matrix=catch_matrix(scores),
                 counts=metrics["counts"], means=metrics["mutant_means"], gates=cfg.gates,
                 sizing_history=cfg.sizing_history, draws=draws,
                 wiring=[{"operator": op, "target": TARGET_METRIC[op], "mutants": int((mutants.operator == op).sum()),
                          "caught per seed": ", ".join("n/a" if v is None else f"{v:.2f}"
                                                       for v in per_seed.get(f"caught_{op}", [])),
                          "in the verdict": f"caught_{op}" in in_verdict} for op in WIRING if op in operators],
                 specificity_rows=[{"metric": m, "per-seed share scored 1": ", ".join(
                     "n/a" if v is None else f"{v:.2f}" for v in per_seed[f"specificity_{m}"])}
                     for m in METRIC_NAMES],
                 neutral_caught_rows=[{"seed": r.seed_index, "system": r.system, "kind": r.kind, "site": r.site,
                                       "syntax": r.syntax, "runtime": r.runtime, "conformance": r.conformance,
                                       "invariants": r.invariants, "tools": r.outcomes}
                                      for r in neutral_caught.itertuples()],
                 renamings=sorted({r.site for r in scores[scores.kind == "renamed"].itertuples()}),
                 equivalent_rows=[{"system": r.system, "operator": r.operator, "site": r.site}
                                  for r in equivalent.drop_duplicates(["system", "site"]).itertuples()],
                 missed_rows=[{"seed": r.seed_index, "system": r.system, "operator": r.operator, "site": r.site,
                               "syntax": r.syntax, "runtime": r.runtime, "conformance": r.conformance,
                               "invariants": r.invariants, "tools": r.outcomes} for r in missed.itertuples()],
                 outcome_rows=outcome_counts(scores), generated_rows=generated_rows(scores),
                 split_rows=invariant_split(mutants), construction=by_construction(mutants),
                 t_rows=t_intervals(per_seed, {c.name: c.metric for c in cfg.verdict.checks}),
                 total_minutes=sum(timings.values()) / 60,
                 generators=sorted(scores[scores.kind == "generated"].site.unique()),
                 generated_seeds=sorted(int(s) for s in scores[scores.kind == "generated"].seed_index.unique()),
                 history=rule_history(scores, operators, cfg.previous_rules, cfg.gates),
                 power_rows=seeds_to_decide(claim, thresholds))
    return {"verdict": claim.verdict}


def mutant_draws(mutants: pd.DataFrame) -> list[dict[str, Any]]:
    """Per seed: the mutants drawn (equivalent ones included), how many distinct (system, operator, site) they
    are, and how many of those were also drawn on another seed."""
    key = mutants.system + "|" + mutants.operator + "|" + mutants.site
    seeds_of = key.groupby(key).apply(lambda k: mutants.loc[k.index, "seed_index"].nunique())
    rows = []
    for s in sorted(mutants.seed_index.unique()):
        mine = set(key[mutants.seed_index == s])
        rows.append({"seed": int(s), "drawn": int((mutants.seed_index == s).sum()), "distinct": len(mine),
                     "also on another seed": int(sum(seeds_of[k] > 1 for k in mine))})
    return rows


def invariant_split(mutants: pd.DataFrame) -> list[dict[str, Any]]:
    """Per operator and seed: how the invariant check of its counted mutants ended: a TLC-reported invariant
    violation (the only catch), a run with every template confirmed, a time or memory limit (unclear), an
    evaluation error, or no run (SANY rejected the module)."""
    rows = []
    for (op, seed), part in mutants.groupby(["operator", "seed_index"]):
        ending = [run_ending(o, "invariants") for o in part.outcomes]
        rows.append({"operator": op, "seed": int(seed), "mutants": len(part),
                     "violated (caught)": sum(e == "violated" for e in ending),
                     "all confirmed": sum(e == "ok" for e in ending),
                     "limit (unclear)": sum(e in LIMITS for e in ending),
                     "evaluation error": sum(e == "error" for e in ending),
                     "not run (SANY failed)": sum(e is None for e in ending)})
    return rows


def by_construction(mutants: pd.DataFrame) -> dict[str, int]:
    """Counts behind the checks that would pass by construction: renamed variables (always an undeclared name),
    removed actions (out of Next), and caught mutants SANY rejects (left out of the ordering)."""
    caught = mutants[(mutants[list(METRIC_NAMES)] < 1.0).any(axis=1)]
    return {"rename_variable": int((mutants.operator == "rename_variable").sum()),
            "remove_action": int((mutants.operator == "remove_action").sum()),
            "ordering_caught": len(caught), "ordering_sany_fails": int((~caught.whole_module_parses).sum())}


def t_intervals(per_seed: dict[str, list[float | None]], names: dict[str, str]) -> list[dict[str, Any]]:
    """Per check: the mean over seeds and a two-sided 95% Student-t interval of it (n-1 degrees of freedom)."""
    rows = []
    for name, metric in names.items():
        v = np.array([x for x in per_seed.get(metric, []) if x is not None], dtype=float)
        if len(v) < 2:
            continue
        half = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
        rows.append({"check": name, "mean": f"{v.mean():.3f}", "95% t-interval":
                     f"[{v.mean() - half:.3f}, {v.mean() + half:.3f}]", "seeds": len(v)})
    return rows


def generated_rows(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """Each generated spec's scores and the start of its text (what the weak generator wrote)."""
    gen = scores[scores.kind == "generated"]
    return [{"seed": r.seed_index, "system": r.system, "generator": r.site, "syntax": r.syntax, "runtime": r.runtime,
             "conformance": r.conformance, "invariants": r.invariants,
             "spec (first 80 characters)": " ".join(r.spec.split())[:80].replace("|", "/")}
            for r in gen.itertuples()]


def outcome_counts(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """How the tool runs ended, counted over all candidates (e.g. how many hit the CPU-time limit)."""
    counts: dict[str, int] = {}
    for text in scores.outcomes:
        for part in text.split():
            counts[part] = counts.get(part, 0) + 1
    return [{"run=outcome": k, "candidates": v} for k, v in sorted(counts.items())]


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
