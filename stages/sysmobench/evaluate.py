"""Step ``evaluate``: every candidate spec (the reference and its seeded mutants) scored on the four metrics.

Per seed and system: the reference spec, then up to ``mutants_per_operator`` mutants of each operator at
sites the seed draws; each is scored by SANY and TLC (``metrics.py``) against that seed's traces, with that
seed's TLC simulation seed. A mutant whose reachable transitions equal the reference's is marked
``equivalent`` (it makes no mistake a metric could see) and left out of the report's shares.
"""

from __future__ import annotations

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
from stages.sysmobench.specs import REFERENCE, render, systems
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


def candidate_jobs(cfg: EvaluateInputs, traces: pd.DataFrame, generated: pd.DataFrame, seed: int) -> list[Job]:
    """The reference, the drawn mutants and the generators' specs of every seed and system."""
    jobs = []
    for s in range(cfg.traces.n_seeds):
        for system in cfg.traces.systems:
            ref = REFERENCE[system]
            states = trace_states(traces, s, system)
            sim = Simulation(cfg.evaluate.sim_traces, cfg.evaluate.sim_depth,
                             derive_seed(seed, PAPER, "tlc", system, s) % 2**31)
            gen = rng(seed, PAPER, "mutants", system, s)
            cands = [("reference", "none", "the reference spec", render(ref))]
            for op in cfg.evaluate.operators:
                cands += [("mutant", m.operator, m.site, render(m.spec))
                          for m in draw_mutants(ref, op, cfg.evaluate.mutants_per_operator, gen)]
            mine = generated[(generated.seed_index == s) & (generated.system == system)]
            cands += [("generated", "none", g.generator, g.spec) for g in mine.itertuples()]
            jobs += [Job(s, system, j, kind, op, site, text, states, sim)
                     for j, (kind, op, site, text) in enumerate(cands)]
    return jobs


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every candidate (``workers`` sandboxed JVMs at a time) and write the score table."""
    e = cfg.evaluate
    tools = Tools(load_tla_tools(paths.tools), e.java, e.heap_mb, e.wall_s)
    traces = read_traces(paths.traces)
    sizes = systems(cfg.traces.n_procs, cfg.traces.capacity, cfg.traces.n_values)
    reference = {}
    for name in cfg.traces.systems:
        reference[name], outcome = transitions(tools, sizes[name], render(REFERENCE[name]))
        if reference[name] is None:
            raise RuntimeError(f"TLC did not explore the reference spec of {name} ({outcome}): raise "
                               f"{PAPER}.evaluate.wall_s or shrink the system")
    jobs = candidate_jobs(cfg, traces, read_generated(paths.generated), ctx.seed)

    stop = threading.Event()

    def one(job: Job) -> dict[str, Any]:
        if stop.is_set():
            raise RuntimeError("evaluate stopped")
        system = sizes[job.system]
        scores = score(tools, system, job.spec, job.traces, job.sim)
        equivalent = False
        if job.kind == "mutant" and scores.whole_module_parses:
            equivalent = transitions(tools, system, job.spec)[0] == reference[job.system]
        return {"seed_index": job.seed_index, "system": job.system, "candidate": job.candidate, "kind": job.kind,
                "operator": job.operator, "site": job.site, "equivalent": equivalent,
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
