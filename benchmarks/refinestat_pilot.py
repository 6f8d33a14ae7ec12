"""The pilot that sizes the default profile and pilots the competence gate, on validation data only.

It runs the methods (and, if asked, the controls and the scripted positive control) on a separate seed set:
its own global seed, so its splits and sampling streams are not the default run's, and the fit rows alone
(no held-out score is computed or read). It prints, per prompt ending and method, how often an attempt
completes and runs a program, the tokens, masked draws and resampled statements per attempt, and the
decoding and sandbox throughput, as one JSON document.

    PYTHONPATH=. python benchmarks/refinestat_pilot.py --seed 101 --seeds 0 1 --out pilot.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.sandbox import Limits
from stages.refinestat.config import load_data, load_synthesize
from stages.refinestat.data import build_table
from stages.refinestat.pipeline import PATHS
from stages.refinestat.ppl_sandbox import PplSandbox
from stages.refinestat.synthesize import COMPILEDIR, load_lm, synthesize_tasks


def summarise(programs: pd.DataFrame) -> dict[str, Any]:
    """Per arm: attempts, share that submitted a program, run rate, reliable share, tokens, masks, resamples, time."""
    out = {}
    for arm, g in programs.groupby("arm"):
        out[str(arm)] = {"attempts": len(g), "submitted": float((g.n_versions > 0).mean()),
                         "run_rate": float(g.runnable.mean()), "reliable": float((g.score >= 5).mean()),
                         "tokens": float(g.tokens.mean()), "masked": float(g.masked.mean()),
                         "resampled": float(g.resampled.mean()), "runs": float(g.n_versions.mean()),
                         "first_program_tokens": float(g.first_program_tokens[g.first_program_tokens >= 0].mean())
                         if (g.first_program_tokens >= 0).any() else None,
                         "run_rate_by_task": {str(t): float(x) for t, x in g.groupby("task").runnable.mean().items()},
                         "errors": g[~g.runnable].error.str.extract(r"^(\w+)")[0].value_counts().to_dict()}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--lm", type=Path, default=Path(PATHS["lm"]))
    ap.add_argument("--tables", type=Path, default=Path(PATHS["tables"]))
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--tasks", nargs="+", default=None)
    ap.add_argument("--prompt-end", nargs="+", default=["indent", "newline"])
    ap.add_argument("--methods", nargs="+", default=None)
    ap.add_argument("--n-programs", type=int, default=None)
    ap.add_argument("--token-budget", type=int, default=None)
    ap.add_argument("--controls", action="store_true")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    data_cfg = load_data(args.params)
    data_cfg = data_cfg.model_copy(update={"n_splits": max(args.seeds) + 1})
    table = build_table(data_cfg, args.tables, args.seed)
    tasks = args.tasks or list(data_cfg.tasks)
    base = load_synthesize(args.params)
    lm = load_lm(args.lm, base.generate.max_threads)
    limits = Limits(wall_s=base.sandbox.wall_s, memory_mb=base.sandbox.memory_mb, cpu_s=base.sandbox.cpu_s)
    report: dict[str, Any] = {"seed": args.seed, "seeds": args.seeds, "tasks": tasks, "arms": {}}
    with PplSandbox(limits, base.sandbox.startup_wall_s, COMPILEDIR) as sandbox:
        for end in args.prompt_end:
            update = {"prompt_end": end}
            if args.n_programs:
                update["n_programs"] = args.n_programs
            if args.token_budget:
                update["token_budget"] = args.token_budget
            cfg = base.model_copy(update={"generate": base.generate.model_copy(update=update)})
            start = time.perf_counter()
            out = synthesize_tasks(cfg, table, lm, sandbox, args.seed, args.seeds, tasks, heldout=False,
                                   controls=args.controls and end == args.prompt_end[0], methods=args.methods)
            programs = pd.DataFrame(out["programs"])
            tokens = float(programs[programs.arm.isin(cfg.generate.methods)].tokens.sum())
            report["arms"][end] = {"summary": summarise(programs), "wall_s": time.perf_counter() - start,
                                   "sandbox_runs": out["sandbox_runs"], "sandbox_wall_s": out["sandbox_wall_s"],
                                   "sandbox_cpu_s": out["sandbox_cpu_s"], "decode_s": out["decode_s"],
                                   "decode_cpu_s": out["decode_cpu_s"], "tokens": tokens,
                                   "tokens_per_s": tokens / max(out["decode_s"], 1e-9),
                                   "tokens_per_cpu_s": tokens / max(out["decode_cpu_s"], 1e-9),
                                   "programs": programs[["seed_index", "task", "arm", "attempt", "runnable", "score",
                                                         "program", "error", "tokens"]].to_dict("records")}
            args.out.write_text(json.dumps(report, indent=1, default=str))
            print(json.dumps({end: report["arms"][end]["summary"]}, indent=1, default=str), flush=True)


if __name__ == "__main__":
    main()
