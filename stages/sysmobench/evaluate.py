"""Step ``evaluate``: every candidate spec scored on the four metrics.

Per seed and system: the reference spec; two specs with the reference's behaviour that no metric should catch
(the reference under a consistent variable renaming, scored against templates and traces renamed the same
way, and the reference with the conjuncts of its actions and the disjuncts of Next in a seeded new order);
up to ``mutants_per_operator`` mutants of each operator at the sites dealt to the seed; and the generators'
specs. Each is scored by SANY and TLC (``metrics.py``) against that seed's traces, with that seed's TLC
simulation seed. A mutant whose reachable transitions equal the reference's is marked ``equivalent`` (it makes
no mistake a metric could see): the report leaves it out of the catch shares and counts it with the
specs no metric should catch.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from stages.assets.loaders import load_tla_tools
from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed, rng
from stages.core.stage import StageContext, Step, inp, out
from stages.sysmobench.config import PAPER, EvaluateInputs, load_evaluate
from stages.sysmobench.expectations import scores_suite
from stages.sysmobench.io import read_generated, read_traces, trace_states
from stages.sysmobench.metrics import Simulation, score, transitions
from stages.sysmobench.mutation import draw_mutants
from stages.sysmobench.specs import (
    REFERENCE,
    RENAMING,
    System,
    rename_system,
    rename_variables,
    render,
    reorder,
    systems,
)
from stages.sysmobench.tla import Tools


@dataclass(frozen=True)
class Paths:
    tools: Path = inp("TLA+ tools asset (tla2tools.jar)")
    traces: Path = inp("logged steps of the instrumented executions")
    generated: Path = inp("specs written by the generators")
    scores: Path = out("the four metrics of every candidate, per seed and system (Parquet)")


@dataclass(frozen=True)
class Job:
    """One candidate to score."""

    seed_index: int
    system: str
    candidate: int
    kind: str
    operator: str
    site: str
    spec: str
    traces: list[list[dict[str, str]]]
    sim: Simulation
    renaming: dict[str, str]  # interface variable -> the candidate's name for it (empty: the interface's names)

    def named_system(self, sizes: dict[str, System]) -> System:
        """The system as this candidate names its variables."""
        return rename_system(sizes[self.system], self.renaming)

    def renamed_traces(self) -> list[list[dict[str, str]]]:
        """The logged states under the candidate's variable names (the trace mapping)."""
        return [[{self.renaming.get(k, k): v for k, v in state.items()} for state in tr] for tr in self.traces]


def candidate_jobs(cfg: EvaluateInputs, traces: pd.DataFrame, generated: pd.DataFrame, seed: int) -> list[Job]:
    """The reference, the drawn mutants and the generators' specs of every seed and system."""
    jobs = []
    for s in cfg.traces.seed_indices:
        for system in cfg.traces.systems:
            ref = REFERENCE[system]
            states = trace_states(traces, s, system)
            sim = Simulation(cfg.evaluate.sim_traces, cfg.evaluate.sim_depth,
                             derive_seed(seed, PAPER, "tlc", system, s) % 2**31)
            mapping = {v: RENAMING[v] for v in ref.variables}
            cands = [("reference", "none", "the reference spec", render(ref), {}),
                     ("renamed", "none", "the reference, variables renamed " +
                      ", ".join(f"{k}->{v}" for k, v in mapping.items()), render(rename_variables(ref, mapping)),
                      mapping),
                     ("reordered", "none", "the reference, conjuncts and disjuncts of Next reordered",
                      render(reorder(ref, rng(seed, PAPER, "reorder", system, s))), {})]
            for op in cfg.evaluate.operators:
                # one order of the sites per system and operator, shared by every seed, which take turns in it
                order = rng(seed, PAPER, "mutants", system, op)
                cands += [("mutant", m.operator, m.site, render(m.spec), {})
                          for m in draw_mutants(ref, op, cfg.evaluate.mutants_per_operator, s, order)]
            mine = generated[(generated.seed_index == s) & (generated.system == system)]
            cands += [("generated", "none", g.generator, g.spec, {}) for g in mine.itertuples()]
            jobs += [Job(s, system, j, kind, op, site, text, states, sim, renaming)
                     for j, (kind, op, site, text, renaming) in enumerate(cands)]
    return jobs


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every candidate (``workers`` sandboxed JVMs at a time) and write the score table."""
    e = cfg.evaluate
    tools = Tools(load_tla_tools(paths.tools), e.java, e.heap_mb, e.cpu_s, e.wall_s)
    traces = read_traces(paths.traces)
    sizes = systems(cfg.traces.n_procs, cfg.traces.capacity, cfg.traces.n_values)
    reference = {}
    for name in cfg.traces.systems:
        reference[name], outcome = transitions(tools, sizes[name], render(REFERENCE[name]))
        if reference[name] is None:
            raise RuntimeError(f"TLC did not explore the reference spec of {name} ({outcome}): raise "
                               f"{PAPER}.evaluate.cpu_s or shrink the system")
    jobs = candidate_jobs(cfg, traces, read_generated(paths.generated), ctx.seed)

    stop = threading.Event()

    def one(job: Job) -> dict[str, Any]:
        if stop.is_set():
            raise RuntimeError("evaluate stopped")
        system = job.named_system(sizes)
        scores = score(tools, system, job.spec, job.renamed_traces(), job.sim)
        equivalent = False
        if job.kind == "mutant" and scores.whole_module_parses:
            equivalent = transitions(tools, system, job.spec)[0] == reference[job.system]
        return {"seed_index": job.seed_index, "system": job.system, "candidate": job.candidate, "kind": job.kind,
                "operator": job.operator, "site": job.site, "renaming": json.dumps(job.renaming, sort_keys=True),
                "equivalent": equivalent,
                "whole_module_parses": scores.whole_module_parses, **scores.as_dict(), "outcomes": scores.outcomes,
                "spec": job.spec}

    pool = ThreadPoolExecutor(e.workers)
    try:
        rows = list(tqdm(pool.map(one, jobs), total=len(jobs), desc="candidates", unit="spec"))
    finally:  # an interrupted stage drops the queued candidates (each running one ends within its limit)
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.scores", scores_suite(len(table)))
    write_parquet(table, paths.scores)
    return {"candidates": len(table)}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
