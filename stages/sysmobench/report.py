"""Step ``report``: the leaderboard per system and metric, the verdict, report.md, plots, metrics.json, claim.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.report import PaperCard, ReportPaths, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.sysmobench.config import PAPER, ReportInputs, load_report
from stages.sysmobench.expectations import METRICS as METRIC_NAMES
from stages.sysmobench.io import read_scores
from stages.sysmobench.mutation import OPERATORS, TARGET_METRIC

TIMED_STEPS = ("traces", "generate", "evaluate")
CARD = PaperCard(
    paper=PAPER,
    title=("SysMoBench: Evaluating AI on Formally Modeling Complex Real-World Systems (ICLR 2026; abstract in "
           "../shared/seeds/iclr2026-abstracts.txt, issue 26)"),
    claim=("Automated metrics can score an AI-written TLA+ model of a real system artifact: syntax (SANY), runtime "
           "(TLC simulation covers the actions without errors), conformance (instrumented executions of the code "
           "replay in the spec) and invariants (TLC confirms the system's invariant templates); each catches the "
           "mistakes it is meant for. The verdict here covers only the metrics (each catches the mutants meant for "
           "it, and the ordering on mutants); the paper's model finding (high syntax, far lower conformance) is "
           "untested here: no model wrote TLA+ (the generator's scores are under Scope of the verdict)."),
    paper_result=("Eleven system artifacts (Etcd and Redis Raft, ZooKeeper leader election, Asterinas spinlock / "
                  "mutex / ring buffer, ...); e.g. on Etcd Raft a model scored syntax 100%, runtime 25%, conformance "
                  "7.69%, invariants 69.23%: current models write parseable TLA+ but rarely specs that conform to "
                  "the code."),
)


@dataclass(frozen=True)
class Paths(ReportPaths):
    scores: Path = inp("the four metrics of every candidate, per seed and system")


def counted_mutants(scores: pd.DataFrame) -> pd.DataFrame:
    """The mutants that count: not equivalent to the reference."""
    return scores[(scores.kind == "mutant") & ~scores.equivalent]


def caught_share(mutants: pd.DataFrame, operator: str) -> float:
    """Share of an operator's mutants whose target metric is below 1 (the mistake was caught); NaN if none."""
    part = mutants[mutants.operator == operator]
    return float((part[TARGET_METRIC[operator]] < 1.0).mean()) if len(part) else float("nan")


def ordering_share(mutants: pd.DataFrame) -> float:
    """Share of the mutants some metric catches with syntax >= runtime >= conformance (the paper's ordering);
    NaN if no metric catches any (a blind metric must not pass by leaving every score at 1)."""
    caught = mutants[(mutants[list(METRIC_NAMES)] < 1.0).any(axis=1)]
    if caught.empty:
        return float("nan")
    ok = (caught.syntax >= caught.runtime) & (caught.runtime >= caught.conformance)
    return float(ok.mean())


def verdict_metrics(scores: pd.DataFrame, operators: list[str]) -> dict[str, list[float | None]]:
    """Per-seed verdict metrics: the reference's lowest score, each operator's caught share, the ordering share,
    the mutants' mean of each metric (non-finite values, from a seed without mutants of a kind, become None)."""
    seeds = sorted(scores.seed_index.unique())
    out: dict[str, list[float | None]] = {"reference_min_score": [], "ordering_share": [],
                                          **{f"caught_{op}": [] for op in operators},
                                          **{f"mutant_mean_{m}": [] for m in METRIC_NAMES}}
    for s in seeds:
        part = scores[scores.seed_index == s]
        ref = part[part.kind == "reference"]
        muts = counted_mutants(part)
        values: dict[str, float] = {"reference_min_score": float(ref[list(METRIC_NAMES)].to_numpy().min()),
                                    "ordering_share": ordering_share(muts),
                                    **{f"caught_{op}": caught_share(muts, op) for op in operators},
                                    **{f"mutant_mean_{m}": float(muts[m].mean()) if len(muts) else float("nan")
                                       for m in METRIC_NAMES}}
        for key, v in values.items():
            out[key].append(v if np.isfinite(v) else None)
    return out


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
    """(name, rows) of the reference, each operator's mutants and each generator's specs, those present."""
    groups = [("reference", scores[scores.kind == "reference"])]
    groups += [(op, scores[(scores.kind == "mutant") & (scores.operator == op)]) for op in OPERATORS]
    gen = scores[scores.kind == "generated"]
    groups += [(f"generated: {g}", gen[gen.site == g]) for g in sorted(gen.site.unique())]
    return [(n, g) for n, g in groups if not g.empty]


def catch_matrix(mutants: pd.DataFrame) -> list[dict[str, Any]]:
    """Per operator: the share of its mutants each metric catches (score below 1), all seeds pooled."""
    rows = []
    for op in OPERATORS:
        part = mutants[mutants.operator == op]
        if part.empty:
            continue
        rows.append({"operator": op, "target": TARGET_METRIC[op], "mutants": len(part),
                     **{m: f"{(part[m] < 1).mean():.2f}" for m in METRIC_NAMES}})
    return rows


def plot_metrics(kept: pd.DataFrame, path: Path) -> None:
    """Mean score per metric for the reference, each operator's mutants and each generator (seeds as dots)."""
    groups = candidate_classes(kept)
    with figure(path, figsize=(10, 4)) as (_, ax):
        width = 0.8 / len(groups)
        for j, (name, g) in enumerate(groups):
            x = np.arange(len(METRIC_NAMES)) + (j - (len(groups) - 1) / 2) * width
            per_seed = g.groupby("seed_index")[list(METRIC_NAMES)].mean()
            ax.bar(x, per_seed.mean().to_numpy(), width, color=f"C{j}", alpha=0.8, label=name)
            for xi, m in zip(x, METRIC_NAMES, strict=True):
                ax.scatter(np.full(len(per_seed), xi), per_seed[m], color="black", s=6, zorder=3)
        ax.set_xticks(np.arange(len(METRIC_NAMES)), list(METRIC_NAMES))
        ax.set_ylabel("mean score")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7, ncol=3)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict from the per-seed scores and write the report."""
    scores = read_scores(paths.scores)
    operators = [op for op in OPERATORS if op in set(scores.operator)]
    timings = read_timings(paths.timings, TIMED_STEPS)
    per_seed = verdict_metrics(scores, operators)
    seeds = sorted(int(s) for s in scores.seed_index.unique())
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, per_seed, seeds=seeds, profile=ctx.profile,
                                       timings=timings), cfg.gates)
    mutants = counted_mutants(scores)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_metrics(scores[~scores.equivalent], paths.plots / "metrics_by_candidate.png")
    all_mutants = scores[scores.kind == "mutant"]
    equivalent = all_mutants[all_mutants.equivalent]
    missed = mutants[mutants.apply(lambda r: r[TARGET_METRIC[r.operator]] >= 1.0, axis=1)] if len(mutants) \
        else mutants
    metrics = {"per_seed": per_seed,
               "mutant_means": {m: float(mutants[m].mean()) for m in METRIC_NAMES} if len(mutants) else {},
               "counts": {"candidates": len(scores), "mutants": len(all_mutants),
                          "equivalent": len(equivalent), "counted": len(mutants)},
               "verdict": claim.verdict}
    write_report(paths, claim, metrics, timings, n_seeds=len(seeds), systems=sorted(scores.system.unique()),
                 operators=operators, board=leaderboard(scores), matrix=catch_matrix(mutants),
                 counts=metrics["counts"], means=metrics["mutant_means"], gates=cfg.gates,
                 sizing_history=cfg.sizing_history,
                 equivalent_rows=[{"system": r.system, "operator": r.operator, "site": r.site}
                                  for r in equivalent.drop_duplicates(["system", "site"]).itertuples()],
                 missed_rows=[{"seed": r.seed_index, "system": r.system, "operator": r.operator, "site": r.site,
                               "syntax": r.syntax, "runtime": r.runtime, "conformance": r.conformance,
                               "invariants": r.invariants, "tools": r.outcomes} for r in missed.itertuples()],
                 outcome_rows=outcome_counts(scores), generated_rows=generated_rows(scores),
                 split_rows=invariant_split(mutants), construction=by_construction(mutants),
                 drop_guard_violations=violation_only_share(mutants, "drop_guard"),
                 drop_guard_threshold=next((c.threshold for c in cfg.verdict.checks
                                            if c.metric == "caught_drop_guard"), None),
                 t_rows=t_intervals(per_seed, {c.name: c.metric for c in cfg.verdict.checks}),
                 total_minutes=sum(timings.values()) / 60,
                 generators=sorted(scores[scores.kind == "generated"].site.unique()),
                 generated_seeds=sorted(int(s) for s in scores[scores.kind == "generated"].seed_index.unique()),
                 power_rows=seeds_to_decide(claim, {c.name: c.threshold for c in cfg.verdict.checks}))
    return {"verdict": claim.verdict}


def invariant_split(mutants: pd.DataFrame) -> list[dict[str, Any]]:
    """Per operator and seed: the mutants the invariants metric catches, split by how TLC ended: a reported
    invariant violation, a time limit or evaluation error (scored 0 without a violation), or no run (SANY
    rejected the module)."""
    rows = []
    for (op, seed), part in mutants.groupby(["operator", "seed_index"]):
        caught = part[part.invariants < 1.0]
        status = caught.outcomes.str.extract(r"invariants=(\w+)")[0]
        rows.append({"operator": op, "seed": int(seed), "mutants": len(part), "caught": len(caught),
                     "violated": int((status == "violated").sum()),
                     "limit/error": int(status.isin(["timeout", "error"]).sum()),
                     "not run (SANY failed)": int(status.isna().sum())})
    return rows


def violation_only_share(mutants: pd.DataFrame, operator: str) -> list[float]:
    """Per seed: share of an operator's mutants whose invariant check ended in a TLC-reported violation
    (a sensitivity of the drop_guard check, not the rule)."""
    part = mutants[mutants.operator == operator]
    return [float(g.outcomes.str.contains("invariants=violated").mean()) for _, g in part.groupby("seed_index")]


def by_construction(mutants: pd.DataFrame) -> dict[str, int]:
    """Counts of mutants that pass a check by construction: renamed variables (always an undeclared name),
    removed actions (out of Next), and caught mutants SANY rejects (runtime and conformance are then 0, so the
    ordering holds whatever the metrics measure)."""
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
    """How the tool runs ended, counted over all candidates (e.g. how many hit the wall-clock limit)."""
    counts: dict[str, int] = {}
    for text in scores.outcomes:
        for part in text.split():
            counts[part] = counts.get(part, 0) + 1
    return [{"run=outcome": k, "candidates": v} for k, v in sorted(counts.items())]


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
