"""Step ``synthesize``: every method's attempts on every task and seed, each program run in the sandbox,
beside the expert program and a mis-specified control (same sandbox, same sampler)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import InputError, write_parquet
from stages.core.sandbox import Limits
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.refinestat.config import PAPER, SynthesizeInputs, load_synthesize
from stages.refinestat.expectations import programs_suite, versions_suite
from stages.refinestat.generator import Budget, LineSampler, Settings, attempt, build_prompt, generator_for
from stages.refinestat.io import read_tasks, sizes, split_data
from stages.refinestat.ppl_sandbox import ROOT, PplSandbox
from stages.refinestat.reliability import reliability_score
from stages.refinestat.tasks import TASKS

DIAGNOSTICS = ("rhat_max", "ess_bulk_min", "ess_tail_min", "divergences", "bfmi_min", "pareto_k_max", "elpd_loo",
               "n_obs", "heldout_lpd")
COMPILEDIR = ROOT / ".cache" / "pytensor"


@dataclass(frozen=True)
class Paths:
    tasks: Path = inp("task table (fit / held-out splits)")
    lm: Path = inp("SmolLM2-135M-Instruct asset folder")
    programs: Path = out("one row per (seed, task, arm, attempt): the returned program and its diagnostics")
    versions: Path = out("one row per sandbox run")


def predictive(result: dict[str, Any], exchangeable: bool) -> float | None:
    """The score compared with the expert: held-out log predictive density per point where rows can be held
    out, else PSIS-LOO ELPD per point (Eight Schools has no rows to spare)."""
    if result.get("outcome") != "ok":
        return None
    if exchangeable:
        return result.get("heldout_lpd")
    elpd, n = result.get("elpd_loo"), result.get("n_obs")
    return None if elpd is None or not n else float(elpd) / n


def result_row(result: dict[str, Any] | None, score: int, exchangeable: bool) -> dict[str, Any]:
    """The columns of a sandbox result."""
    result = result or {"outcome": "none"}
    row = {k: (None if result.get(k) is None else float(result[k])) for k in DIAGNOSTICS}
    row.update(outcome=str(result["outcome"]), error=str(result.get("error") or result.get("heldout_error") or ""),
               score=int(score), runnable=result["outcome"] == "ok", predictive=predictive(result, exchangeable))
    return row


def run_program(sandbox: PplSandbox, cfg: SynthesizeInputs, fit: dict[str, Any], held: dict[str, Any] | None,
                seed_of: Callable[..., int], program: list[str], key: tuple[Any, ...]) -> dict[str, Any]:
    """One program in the sandbox on a task's fit rows (scored on its held-out rows), seeded by its key."""
    smp = cfg.sampler
    return sandbox.run({"program": program, "data": fit, "heldout": held, "chains": smp.chains, "draws": smp.draws,
                        "tune": smp.tune, "target_accept": smp.target_accept, "seed": seed_of(*key)})


def numbered(run_one: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``run_one`` with the attempt's run number appended to the seed key (draft 0, refinements 1, 2, ...)."""
    count = [0]

    def run_numbered(key: tuple[Any, ...], program: list[str]) -> dict[str, Any]:
        count[0] += 1
        return run_one(program, (*key, count[0] - 1))

    return run_numbered


def run(cfg: SynthesizeInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Run the controls and the methods' attempts; write the returned programs and every sandbox run."""
    g = cfg.generate
    table = read_tasks(paths.tasks)
    tasks = [t for t in TASKS if t in set(table.task)]
    n_splits = int(table.split.max()) + 1
    if n_splits < g.n_seeds:
        raise InputError(f"{paths.tasks}: {n_splits} splits, fewer than the {g.n_seeds} seeds of {PAPER}.generate")
    model, tokenizer = load_causal_lm(paths.lm)
    cap_threads(g.max_threads)
    settings = Settings(temperature=g.temperature, resample_temperature=g.resample_temperature, top_p=g.top_p,
                        max_statements=g.max_statements,
                        max_line_tokens=g.max_line_tokens, refine_rounds=g.refine_rounds,
                        min_passing=cfg.reliability.min_passing, thresholds=cfg.reliability)
    limits = Limits(wall_s=cfg.sandbox.wall_s, memory_mb=cfg.sandbox.memory_mb, cpu_s=cfg.sandbox.cpu_s)
    programs: list[dict[str, Any]] = []
    versions: list[dict[str, Any]] = []
    jobs = [(s, t) for s in range(g.n_seeds) for t in tasks]
    bar = tqdm(total=len(jobs) * (2 + len(g.methods) * g.n_programs), desc=f"{PAPER} programs", unit="prog")
    with PplSandbox(limits, cfg.sandbox.startup_wall_s, COMPILEDIR) as sandbox:
        for seed_index, task in jobs:
            t = TASKS[task]
            fit = split_data(table, task, seed_index, "fit")
            held = split_data(table, task, seed_index, "heldout") if t.exchangeable else None
            if t.exchangeable and held is None:
                raise InputError(f"{paths.tasks}: {task} split {seed_index} has no held-out rows")

            run_one = partial(run_program, sandbox, cfg, fit, held,
                              lambda *key, s=seed_index, t=task: derive_seed(ctx.seed, PAPER, s, t, *key) % 2**31)

            base = {"seed_index": seed_index, "task": task}
            for arm, program in (("expert", t.expert), ("misspecified", t.misspecified)):
                result = run_one(list(program), (arm,))
                score = reliability_score(result, cfg.reliability) if result["outcome"] == "ok" else -1
                row = result_row(result, score, t.exchangeable)
                programs.append({**base, "arm": arm, "attempt": 0, "program": "\n".join(program), "tokens": 0,
                                 "resampled": 0, "n_versions": 1, "first_runnable": row["runnable"], **row})
                versions.append({**base, "arm": arm, "attempt": 0, "version": 0,
                                 **{k: row[k] for k in ("outcome", "score")}})
                bar.update()
            prompt = build_prompt(task, sizes(fit), g.n_shots)
            sampler = LineSampler(model, tokenizer, prompt)
            for method in g.methods:
                for k in range(g.n_programs):
                    gen = generator_for(derive_seed(ctx.seed, PAPER, "lm", seed_index, task, method, k))
                    budget = Budget(tokens=g.token_budget, runs=g.max_runs)
                    res = attempt(sampler, gen, partial(numbered(run_one), (method, k)), method, task, settings,
                                  budget)
                    best = res["best"]
                    row = result_row(best["result"] if best else None, best["score"] if best else -1,
                                     t.exchangeable)
                    programs.append({**base, "arm": method, "attempt": k,
                                     "program": "\n".join(best["program"]) if best else "", "tokens": res["tokens"],
                                     "resampled": res["resampled"], "n_versions": len(res["versions"]),
                                     "first_runnable": res["first_runnable"], **row})
                    for v, ver in enumerate(res["versions"]):
                        versions.append({**base, "arm": method, "attempt": k, "version": v,
                                         "outcome": str(ver["result"]["outcome"]), "score": int(ver["score"])})
                    bar.update()
        restarts = sandbox.restarts
    bar.close()
    prog_df, ver_df = pd.DataFrame(programs), pd.DataFrame(versions)
    validate_table(prog_df, f"{PAPER}.programs", programs_suite(len(prog_df)))
    validate_table(ver_df, f"{PAPER}.versions", versions_suite(len(ver_df)))
    write_parquet(prog_df, paths.programs)
    write_parquet(ver_df, paths.versions)
    return {"n_programs": len(prog_df), "n_runs": len(ver_df), "restarts": restarts}


main = Step(PAPER, "synthesize", run, load_synthesize, Paths)


if __name__ == "__main__":
    main()
