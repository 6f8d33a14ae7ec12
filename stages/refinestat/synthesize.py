"""Step ``synthesize``: every method's attempts on every task and seed, each program run in the sandbox,
beside the expert program and a mis-specified control (same sandbox, same sampler)."""

from __future__ import annotations

import hashlib
import multiprocessing
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
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
from stages.refinestat.config import METHODS, PAPER, SynthesizeInputs, load_synthesize
from stages.refinestat.expectations import programs_suite, versions_suite
from stages.refinestat.generator import (
    Budget,
    LMSource,
    ScriptedSource,
    Settings,
    attempt,
    build_prompt,
    generator_for,
    token_texts,
)
from stages.refinestat.io import read_tasks, sizes, split_data
from stages.refinestat.ppl_sandbox import ROOT, PplSandbox
from stages.refinestat.reliability import reliability_score
from stages.refinestat.tasks import TASKS, scripted_control

DIAGNOSTICS = ("rhat_max", "ess_bulk_min", "ess_tail_min", "divergences", "bfmi_min", "pareto_k_max", "elpd_loo",
               "n_obs", "heldout_lpd")
COMPILEDIR = ROOT / ".cache" / "pytensor"
TRACE_KEYS = ("seed_index", "task", "arm", "attempt", "event_index")
TRACE_COLUMNS = ("statement", "event", "prefix", "token", "prob", "reason")


@dataclass(frozen=True)
class Paths:
    tasks: Path = inp("task table (fit / held-out splits)")
    lm: Path = inp("the generator's causal-LM asset folder (generate.generator)")
    programs: Path = out("one row per (seed, task, arm, attempt): the returned program and its diagnostics")
    versions: Path = out("one row per sandbox run")
    trace: Path = out("the masking and rejection trace: one row per masked draw, dead end, resample, sandbox run")


def predictive(result: dict[str, Any], exchangeable: bool) -> float | None:
    """The score compared with the expert: held-out log predictive density per point where rows can be held
    out, else PSIS-LOO ELPD per point (Eight Schools has no rows to spare)."""
    if result.get("outcome") != "ok":
        return None
    if exchangeable:
        return result.get("heldout_lpd")
    elpd, n = result.get("elpd_loo"), result.get("n_obs")
    return None if elpd is None or not n else float(elpd) / n


def lm_stream_seed(global_seed: int, sampling_round: int, seed_index: int, task: str, method: str, k: int) -> int:
    """The seed of one LM attempt's sampling stream; round 0 is the first run's streams, any other round draws
    fresh ones for the same seeds, splits and MCMC seeds (a replication that cannot reuse earlier attempts)."""
    keys = ("lm",) if sampling_round == 0 else ("lm", f"round {sampling_round}")
    return derive_seed(global_seed, PAPER, *keys, seed_index, task, method, k)


def result_row(result: dict[str, Any] | None, score: int, exchangeable: bool) -> dict[str, Any]:
    """The columns of a sandbox result."""
    result = result or {"outcome": "none"}
    row = {k: (None if result.get(k) is None else float(result[k])) for k in DIAGNOSTICS}
    row.update(outcome=str(result["outcome"]), error=str(result.get("error") or result.get("heldout_error") or ""),
               score=int(score), runnable=result["outcome"] == "ok", predictive=predictive(result, exchangeable))
    return row


class CachedRunner:
    """The sandbox for one task split, with its results kept by program text: a program's MCMC seed is derived
    from its text, so an identical program gets the identical result and runs once."""

    def __init__(self, sandbox: PplSandbox, cfg: SynthesizeInputs, fit: dict[str, Any], held: dict[str, Any] | None,
                 seed_of: Callable[[str], int]) -> None:
        self.sandbox, self.cfg, self.fit, self.held, self.seed_of = sandbox, cfg, fit, held, seed_of
        self.cache: dict[str, dict[str, Any]] = {}
        self.runs = 0
        self.wall_s = 0.0
        self.cpu_s = 0.0

    def __call__(self, program: list[str]) -> dict[str, Any]:
        text = "\n".join(program)
        if text not in self.cache:
            smp = self.cfg.sampler
            digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
            result = self.sandbox.run({"program": program, "data": self.fit, "heldout": self.held,
                                       "chains": smp.chains, "draws": smp.draws, "tune": smp.tune,
                                       "target_accept": smp.target_accept, "seed": self.seed_of(digest)})
            self.runs += 1
            self.wall_s += float(result.get("wall_s") or 0.0)
            self.cpu_s += float(result.get("cpu_s") or 0.0)
            self.cache[text] = result
        return dict(self.cache[text])


def settings_of(cfg: SynthesizeInputs) -> Settings:
    """The generation settings of the params."""
    g = cfg.generate
    return Settings(temperature=g.temperature, resample_temperature=g.resample_temperature, top_p=g.top_p,
                    max_statements=g.max_statements, max_line_tokens=g.max_line_tokens,
                    refine_rounds=g.refine_rounds, min_passing=cfg.reliability.min_passing,
                    thresholds=cfg.reliability, max_checks=g.max_checks, prompt_end=g.prompt_end,
                    max_resamples=g.max_resamples)


def control_rows(run: CachedRunner, task: str, base: dict[str, Any], reliability: Any
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The expert, the mis-specified control and the null model, each run once through the same scoring."""
    t = TASKS[task]
    programs, versions = [], []
    for arm, program in (("expert", t.expert), ("misspecified", t.misspecified), ("null", t.null)):
        result = run(list(program))
        score = reliability_score(result, reliability) if result["outcome"] == "ok" else -1
        row = result_row(result, score, t.exchangeable)
        programs.append({**base, "arm": arm, "attempt": 0, "program": "\n".join(program), "tokens": 0,
                         "resampled": 0, "masked": 0, "n_versions": 1, "first_runnable": row["runnable"],
                         "first_program_tokens": 0, **row})
        versions.append({**base, "arm": arm, "attempt": 0, "version": 0, **{k: row[k] for k in ("outcome", "score")}})
    return programs, versions


def attempt_rows(res: dict[str, Any], base: dict[str, Any], arm: str, k: int, exchangeable: bool
                 ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One attempt's returned program, its sandbox runs and its trace, as table rows."""
    best = res["best"]
    row = result_row(best["result"] if best else None, best["score"] if best else -1, exchangeable)
    program = {**base, "arm": arm, "attempt": k, "program": "\n".join(best["program"]) if best else "",
               "tokens": res["tokens"], "resampled": res["resampled"], "masked": res["masked"],
               "n_versions": len(res["versions"]), "first_runnable": res["first_runnable"],
               "first_program_tokens": int(res["first_program_tokens"]), **row}
    versions = [{**base, "arm": arm, "attempt": k, "version": v, "outcome": str(ver["result"]["outcome"]),
                 "score": int(ver["score"])} for v, ver in enumerate(res["versions"])]
    trace = [{**base, "arm": arm, "attempt": k, "event_index": i, **{c: e[c] for c in TRACE_COLUMNS}}
             for i, e in enumerate(res["trace"])]
    return program, versions, trace


def synthesize_tasks(cfg: SynthesizeInputs, table: pd.DataFrame, lm: tuple[Any, Any, list[str]], sandbox: PplSandbox,
                     global_seed: int, seed_indices: list[int], tasks: list[str], heldout: bool = True,
                     controls: bool = True, methods: list[str] | None = None,
                     progress: Any = None) -> dict[str, Any]:
    """Controls, the scripted positive control and every method's attempts on each (seed, task): the rows of the
    programs, versions and trace tables, and the sandbox's counts and times."""
    g = cfg.generate
    settings = settings_of(cfg)
    script_settings = replace(settings, max_line_tokens=g.script_line_tokens, prompt_end="indent")
    model, tokenizer, vocab = lm
    out: dict[str, Any] = {"programs": [], "versions": [], "trace": [], "sandbox_runs": 0, "sandbox_wall_s": 0.0,
                           "sandbox_cpu_s": 0.0, "decode_s": 0.0, "decode_cpu_s": 0.0}
    for seed_index in seed_indices:
        for task in tasks:
            t = TASKS[task]
            fit = split_data(table, task, seed_index, "fit")
            held = split_data(table, task, seed_index, "heldout") if t.exchangeable and heldout else None
            if t.exchangeable and heldout and held is None:
                raise InputError(f"task table: {task} split {seed_index} has no held-out rows")
            run = CachedRunner(sandbox, cfg, fit, held,
                               lambda digest, s=seed_index, t=task: derive_seed(global_seed, PAPER, s, t, digest)
                               % 2**31)
            base = {"seed_index": seed_index, "task": task}
            if controls:
                rows, vers = control_rows(run, task, base, cfg.reliability)
                out["programs"] += rows
                out["versions"] += vers
                for m in METHODS:  # the scripted positive control: known-invalid statements first, then valid
                    gen = generator_for(derive_seed(global_seed, PAPER, "script", seed_index, task, m))
                    res = attempt(ScriptedSource(scripted_control(task)), gen, run, m, task, script_settings,
                                  Budget(tokens=g.script_token_budget, runs=1))
                    row, vers, trace = attempt_rows(res, base, f"scripted_{m}", 0, t.exchangeable)
                    out["programs"].append(row)
                    out["versions"] += vers
                    out["trace"] += trace
            src = LMSource(model, tokenizer, build_prompt(task, sizes(fit), g.n_shots, g.prompt_end), g.prompt_end,
                           vocab)
            for method in methods or g.methods:
                for k in range(g.n_programs):
                    gen = generator_for(lm_stream_seed(global_seed, g.sampling_round, seed_index, task, method, k))
                    budget = Budget(tokens=g.token_budget, runs=g.max_runs)
                    wall0, cpu0, sandbox0 = time.perf_counter(), time.process_time(), run.wall_s
                    res = attempt(src, gen, run, method, task, settings, budget)
                    decode_s = time.perf_counter() - wall0 - (run.wall_s - sandbox0)
                    out["decode_s"] += decode_s
                    out["decode_cpu_s"] += time.process_time() - cpu0
                    row, vers, trace = attempt_rows(res, base, method, k, t.exchangeable)
                    out["programs"].append(row)
                    out["versions"] += vers
                    out["trace"] += trace
                    if progress is not None:
                        progress.update()
            out["sandbox_runs"] += run.runs
            out["sandbox_wall_s"] += run.wall_s
            out["sandbox_cpu_s"] += run.cpu_s
    return out


def load_lm(path: Path, max_threads: int) -> tuple[Any, Any, list[str]]:
    """The generator, its tokenizer and each token's text."""
    model, tokenizer = load_causal_lm(path)
    cap_threads(max_threads)
    return model, tokenizer, token_texts(tokenizer, model.get_output_embeddings().weight.shape[0])


def _worker(cfg: SynthesizeInputs, tasks_path: str, lm_path: str, global_seed: int,
            jobs: list[tuple[int, str]]) -> dict[str, Any]:
    """One worker process: its own LM and sandbox, the (seed, task) jobs given to it."""
    table = read_tasks(Path(tasks_path))
    lm = load_lm(Path(lm_path), cfg.generate.max_threads)
    limits = Limits(wall_s=cfg.sandbox.wall_s, memory_mb=cfg.sandbox.memory_mb, cpu_s=cfg.sandbox.cpu_s)
    out: dict[str, Any] = {"programs": [], "versions": [], "trace": [], "sandbox_runs": 0, "sandbox_wall_s": 0.0,
                           "sandbox_cpu_s": 0.0, "decode_s": 0.0, "decode_cpu_s": 0.0, "restarts": 0}
    attempts = len(jobs) * len(cfg.generate.methods) * cfg.generate.n_programs
    with PplSandbox(limits, cfg.sandbox.startup_wall_s, COMPILEDIR) as sandbox, \
            tqdm(total=attempts, desc=f"{PAPER} attempts ({len(jobs)} seed-task jobs)", unit="attempt") as bar:
        for seed_index, task in jobs:
            part = synthesize_tasks(cfg, table, lm, sandbox, global_seed, [seed_index], [task], progress=bar)
            for k in ("programs", "versions", "trace"):
                out[k] += part[k]
            for k in ("sandbox_runs", "sandbox_wall_s", "sandbox_cpu_s", "decode_s", "decode_cpu_s"):
                out[k] += part[k]
        out["restarts"] = sandbox.restarts
    return out


def run(cfg: SynthesizeInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Run the controls and the methods' attempts; write the returned programs, every sandbox run and the trace.

    The (seed, task) jobs are shared out over ``workers`` processes, each with its own LM and sandbox worker;
    every seed is derived from its job's keys, so the tables do not depend on the number of workers."""
    g = cfg.generate
    if Path(paths.lm).name != g.generator:
        raise InputError(f"{paths.lm}: the generator asset is not {PAPER}.generate.generator = {g.generator!r} "
                         "(run `make dag` after changing the param)")
    table = read_tasks(paths.tasks)
    tasks = [t for t in TASKS if t in set(table.task)]
    n_splits = int(table.split.max()) + 1
    if n_splits < g.n_seeds:
        raise InputError(f"{paths.tasks}: {n_splits} splits, fewer than the {g.n_seeds} seeds of {PAPER}.generate")
    jobs = [(s, t) for s in range(g.n_seeds) for t in tasks]
    shares = [jobs[i::g.workers] for i in range(min(g.workers, len(jobs)))]
    if len(shares) == 1:
        parts = [_worker(cfg, str(paths.tasks), str(paths.lm), ctx.seed, shares[0])]
    else:
        with ProcessPoolExecutor(len(shares), mp_context=multiprocessing.get_context("spawn")) as pool:
            parts = list(pool.map(_worker, *zip(*[(cfg, str(paths.tasks), str(paths.lm), ctx.seed, share)
                                                  for share in shares], strict=True)))
    merged: dict[str, Any] = {k: [] for k in ("programs", "versions", "trace")}
    for part in parts:
        for k in merged:
            merged[k] += part[k]
    order = {job: i for i, job in enumerate(jobs)}
    for k in merged:
        merged[k].sort(key=lambda r: order[(r["seed_index"], r["task"])])
    prog_df, ver_df = pd.DataFrame(merged["programs"]), pd.DataFrame(merged["versions"])
    trace_df = pd.DataFrame(merged["trace"], columns=[*TRACE_KEYS, *TRACE_COLUMNS])
    validate_table(prog_df, f"{PAPER}.programs", programs_suite(len(prog_df)))
    validate_table(ver_df, f"{PAPER}.versions", versions_suite(len(ver_df)))
    write_parquet(prog_df, paths.programs)
    write_parquet(ver_df, paths.versions)
    write_parquet(trace_df, paths.trace)
    total = {k: round(sum(p[k] for p in parts), 1) for k in ("sandbox_runs", "sandbox_wall_s", "sandbox_cpu_s",
                                                            "decode_s", "decode_cpu_s", "restarts")}
    # wall and CPU times go to the log only (they differ run to run); the tables and metrics hold none
    print(f"[{PAPER}-synthesize] times: " + ", ".join(f"{k} {v}" for k, v in total.items()), file=sys.stderr)
    return {"n_programs": len(prog_df), "n_runs": len(ver_df), "workers": len(shares), **total}


main = Step(PAPER, "synthesize", run, load_synthesize, Paths)


if __name__ == "__main__":
    main()
