"""Step ``traces``: seeded executions of the instrumented implementations, every logged action with its state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.sysmobench.config import PAPER, TracesConfig, load_traces
from stages.sysmobench.expectations import traces_suite
from stages.sysmobench.implementations import execute


@dataclass(frozen=True)
class Paths:
    traces: Path = out("one row per logged step: seed, system, trace, step, action, args, state (Parquet)")


def run(cfg: TracesConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Run every system ``n_traces`` times per seed and write the logged steps."""
    rows = []
    jobs = [(s, system) for s in cfg.seed_indices for system in cfg.systems]
    for s, system in tqdm(jobs, desc="executions", unit="system"):
        gen = rng(ctx.seed, PAPER, "traces", system, s)
        for t in range(cfg.n_traces):
            for i, step in enumerate(execute(system, cfg.n_steps, gen, cfg.n_procs, cfg.capacity, cfg.n_values)):
                rows.append({"seed_index": s, "system": system, "trace": t, "step": i, "action": step["action"],
                             "args": json.dumps(step["args"]), "state": json.dumps(step["state"], sort_keys=True)})
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.traces", traces_suite(len(table)))
    write_parquet(table, paths.traces)
    return {"steps": len(table)}


main = Step(PAPER, "traces", run, load_traces, Paths)


if __name__ == "__main__":
    main()
