"""Where each stage's time goes: start-up against work, per stage and paper, and how close each
paper's slowest stage comes to the machine's fp32 matmul peak.

Inputs: a smoke workspace whose DAG ran with ``python -m stages.repro --times T`` (``--workspace``
and ``--times``; without them this module copies the repository and runs one), and the committed
default-profile timings ``reports/<paper>/timings/<step>.json``. Writes ``reports/bench/dag.json``
and the table ``reports/bench/dag.md``.

- Start-up of a stage = the wall time of its whole command (DVC, the interpreter, imports, params
  validation; from ``--times``) minus the time the stage measures around its own work (its timings
  JSON in the workspace). It hardly depends on the profile, so the start-up share at the default
  profile is ``startup / (startup + committed default work time)``.
- FLOP/s: each paper's slowest stage at the default profile is run again in-process at the smoke
  profile on the workspace's inputs (outputs to a temporary folder), once plain for its time and once
  under ``torch.utils.flop_counter.FlopCounterMode``, which counts the FLOPs of matrix products,
  convolutions and attention run through torch (2 per multiply-add); elementwise ops, numpy and
  anything outside torch count 0. Achieved = counted FLOPs / plain run time; the peak is fp32
  ``torch.mm`` of 1024 x 1024 matrices at the workspace's thread count, measured in the same process
  just before. Smoke batches are small, so the fraction is a lower bound on the default profile's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import alone_estimate, machine_info
from stages import dag
from stages.core.config import load_global
from stages.core.io import write_json, write_text
from stages.core.stage import output_paths, run_stage

ROOT = Path(__file__).resolve().parents[1]
# The target: no paper's slowest stage below 10% of the matmul peak without a stated reason. Each reason
# says what the stage computes and at which default sizes (the smoke rerun shrinks most models to overhead, so a
# smoke fraction is a lower bound). A stage that enters the table below 10% needs an entry (tested).
LOW_SHARE_TARGET = 0.1
LOW_SHARE_REASONS: dict[str, str] = {
    "matrix_denoising-flow_studies": "no torch: float64 NumPy Lanczos on sampled matrices up to 3600×4800 "
                                     "(matrix-vector products, reorthogonalisation in Python)",
    "mtd_mirror_descent-train": "32-wide, 2-head transformers (3 and 5 layers) at batch 16 × 65 tokens, 1 thread per "
                                "process: per-op overhead dominates",
    "denots-train": "adaptive dopri5 solver over a 32-wide GRU cell at batch 32, backpropagated through about 100 "
                    "function evaluations per step: thousands of tiny ops (1 thread per process)",
    "espo-rl": "smoke model d16 × 1 layer is overhead; default d64 × 3 layers, batch 64 × 32 tokens",
    "purrception-evaluate": "smoke d16 on 4 tokens; default a 64-wide, 2-layer transformer sampling 49-token "
                            "batches with Euler steps",
    "relash-train": "three small models per fit (256-wide score MLP, 128-wide VAE, a full-batch embedding bound "
                    "by elementwise work)",
    "biocap-train": "small projectors (1280 or 384 → 512 → 128) at batch 128",
    "dupo-sft": "smoke d16 × 1 layer is overhead; default d64 × 3 layers at batch 32, sequences padded to the "
                "batch's longest",
    "fga-views": "frozen EfficientNet-Lite0 (depthwise convolutions, memory-bound) on 64×64 images",
    "m3cotbench-train": "smoke hidden 16; default a small CNN and a 128-wide GRU over 8-token sequences",
    "detection_debias-train": "width-12 CenterNet on 48×48 images at batch 48; COCO scoring in pycocotools",
    "refinestat-synthesize": "SmolLM2-135M decoding one token at a time (batch 1, memory-bound) with a grammar check "
                             "per candidate token in Python, and PyMC sampling in subprocesses (no torch FLOPs)",
    "sysmobench-evaluate": "no torch: TLA+ specs checked by SANY and TLC in Java subprocesses",
    "ssg-train": "smoke d16 is overhead; default d128 × 5 layers at batch 32 × 70 tokens on 1 thread",
    "mvcustom-pretrain": "smoke 8 channels, 3 steps; default a 32-channel U-Net with cross-view attention, 8 scenes "
                         "× 6 views at 16×16, 1 thread",
}


def startup_table(workspace: Path, times: dict[str, dict[str, float]], committed: Path = ROOT) -> list[dict]:
    """Per stage: smoke command time, smoke work time, start-up, committed default work time, start-up share."""
    rows = []
    for stage, t in sorted(times.items()):
        paper, _, step = stage.partition("-")
        if not step or paper == "assets":
            continue
        smoke = workspace / "reports" / paper / "timings" / f"{step}.json"
        if not smoke.is_file():
            continue
        work = json.loads(smoke.read_text())["wall_time_s"]
        startup = max(0.0, t["wall_s"] - work)
        row: dict[str, Any] = {"stage": stage, "paper": paper, "smoke_command_s": t["wall_s"],
                               "smoke_cpu_s": t["cpu_s"], "smoke_work_s": work, "startup_s": round(startup, 2)}
        rows.append(with_committed(row, committed))
    return rows


def with_committed(row: dict[str, Any], committed: Path = ROOT) -> dict[str, Any]:
    """The stage's row with its committed default-profile work time, CPU seconds and estimate alone."""
    paper, _, step = row["stage"].partition("-")
    default = committed / "reports" / paper / "timings" / f"{step}.json"
    row = {k: v for k, v in row.items() if not k.startswith("default_")}
    if default.is_file():
        committed_timing = json.loads(default.read_text())
        d, startup = committed_timing["wall_time_s"], row["startup_s"]
        row["default_work_s"] = d
        if "cpu_time_s" in committed_timing:  # timings written since the runner records CPU seconds
            row["default_cpu_s"] = committed_timing["cpu_time_s"]
            row["default_alone_estimate_s"] = round(alone_estimate(committed_timing), 2)
        row["default_startup_share"] = round(startup / (startup + d), 4) if startup + d > 0 else None
    return row


def refresh(result: dict[str, Any], committed: Path = ROOT) -> dict[str, Any]:
    """A written result with every default-profile figure reread from the committed timings; the smoke rerun,
    the FLOP counts, the peak and the machine they were measured on are kept."""
    rows = [with_committed(r, committed) for r in result["stages"]]
    new = summarise(rows, result["slowest_stage_flops"], result["matmul_peak_flop_per_s"], result["threads"])
    new["machine"] = result["machine"]
    return new


def matmul_peak(n: int = 1024, repeats: int = 20) -> float:
    """Measured fp32 FLOP/s of ``torch.mm`` on n x n matrices (best of ``repeats``)."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


def run_redirected(stage: str, workspace: Path, folder: Path, params: Path | None = None) -> float:
    """Run one stage in-process on the workspace's inputs with its outputs under ``folder``; its seconds.
    ``params``: a global params file beside the workspace's own (default: its params.yaml)."""
    params = params or workspace / "params.yaml"
    entry = dag.find_step(stage, params)
    base = dag.step_paths(entry, workspace)
    overrides = {f.name: folder / f.name / getattr(base, f.name).name
                 for f in dataclasses.fields(entry.paths) if f.metadata.get("role") == "out"}
    paths = dag.step_paths(entry, workspace, **overrides)
    for out in output_paths(paths):
        out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    run_stage(entry.paper, entry.step, entry.run, entry.load_config(params), paths, params, None)
    return time.perf_counter() - start


def flops_of(stage: str, workspace: Path) -> dict[str, Any]:
    """Counted FLOPs, plain time and achieved FLOP/s of one stage at the smoke profile."""
    from torch.utils.flop_counter import FlopCounterMode

    with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as counted:
        seconds = run_redirected(stage, workspace, Path(plain))
        counter = FlopCounterMode(display=False)
        with counter:
            run_redirected(stage, workspace, Path(counted))
    flops = int(counter.get_total_flops())
    return {"stage": stage, "smoke_work_s": round(seconds, 3), "flops": flops,
            "flop_per_s": flops / seconds if seconds > 0 else None}


def flops_or_error(stage: str, workspace: Path) -> dict[str, Any]:
    """``flops_of``, or the stage's row with the error that stopped it (one stage does not stop the table)."""
    try:
        return flops_of(stage, workspace)
    except Exception as err:  # reported in the table; the other stages still run
        return {"stage": stage, "smoke_work_s": None, "flops": None, "flop_per_s": None,
                "error": f"{type(err).__name__}: {err}"[:200]}


def slowest_default_stage(paper: str, committed: Path = ROOT) -> str | None:
    """The paper's stage with the longest committed default-profile work time."""
    best = None
    for path in sorted((committed / "reports" / paper / "timings").glob("*.json")):
        t = json.loads(path.read_text())
        if t.get("profile") == "default" and (best is None or t["wall_time_s"] > best[1]):
            best = (f"{paper}-{path.stem}", t["wall_time_s"])
    return best[0] if best else None


TARGET_HOURS = 4.0  # the whole default DAG on an idle 2-core machine


def summarise(rows: list[dict], flops: list[dict], peak: float, threads: int) -> dict[str, Any]:
    papers: dict[str, dict[str, float]] = {}
    for r in rows:
        p = papers.setdefault(r["paper"], {"stages": 0, "startup_s": 0.0, "default_work_s": 0.0})
        p["stages"] += 1
        p["startup_s"] = round(p["startup_s"] + r["startup_s"], 2)
        p["default_work_s"] = round(p["default_work_s"] + r.get("default_work_s", 0.0), 2)
    for name, p in papers.items():
        total = p["startup_s"] + p["default_work_s"]
        p["default_startup_share"] = round(p["startup_s"] / total, 4) if total else None
        own = [r for r in rows if r["paper"] == name]
        # an estimate of the paper's default time alone where any stage's timing has CPU seconds; a stage whose
        # timing predates them counts as measured (a data step of seconds must not void a paper's estimate)
        measured = [r for r in own if "default_alone_estimate_s" not in r]
        p["default_stages_as_measured"] = len(measured)
        p["default_alone_estimate_s"] = (round(sum(r.get("default_alone_estimate_s", r.get("default_work_s", 0.0))
                                                   for r in own), 2) if len(measured) < len(own) else None)
    for f in flops:
        f["fraction_of_peak"] = round(f["flop_per_s"] / peak, 5) if f["flop_per_s"] is not None else None
    startups = sorted(r["startup_s"] for r in rows)
    return {"benchmark": "dag", "machine": machine_info(), "threads": threads,
            "matmul_peak_flop_per_s": peak, "median_startup_s": startups[len(startups) // 2] if startups else None,
            "papers": papers, "stages": rows, "slowest_stage_flops": flops,
            "default_work_total_s": round(sum(p["default_work_s"] for p in papers.values()), 2),
            # the target's measure: each paper alone where its timings allow it, else as measured (an upper bound)
            "default_alone_total_s": round(sum(p["default_work_s"] if p["default_alone_estimate_s"] is None
                                               else p["default_alone_estimate_s"] for p in papers.values()), 2),
            "papers_estimated_alone": sorted(n for n, p in papers.items() if p["default_alone_estimate_s"] is not None
                                             and not p["default_stages_as_measured"])}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Where the DAG's time goes", "",
             f"Smoke workspace at {result['threads']} thread(s); machine load "
             f"{result['machine']['load_average_1min']} at the end. Median start-up per stage "
             f"{result['median_startup_s']} s. fp32 matmul peak "
             f"{result['matmul_peak_flop_per_s'] / 1e9:.1f} GFLOP/s.", "",
             "Default work is the committed wall time, measured wherever and beside whatever the run had; "
             "the estimate alone is the wall time where the machine was the run's (other work over the run "
             "averaging at most a quarter core; for timings older than that record, the load at the end at most "
             "its threads + 0.5), else its CPU seconds over threads × worker processes (or the wall time where "
             "lower), for timings that record CPU seconds (`-` for older ones).", "",
             "| paper | stages | start-up (s, all stages) | default work (s) | start-up share at default "
             "| estimate alone (s) |", "|---|---|---|---|---|---|"]
    for name, p in sorted(result["papers"].items()):
        alone = p.get("default_alone_estimate_s")
        partly = (f" ({p['default_stages_as_measured']} of {p['stages']} stages as measured)"
                  if alone is not None and p.get("default_stages_as_measured") else "")
        lines.append(f"| {name} | {p['stages']} | {p['startup_s']} | {p['default_work_s']} | "
                     f"{p['default_startup_share']} | {'-' if alone is None else alone}{partly} |")
    lines += ["", f"Committed default work of all papers: {result.get('default_work_total_s', 0) / 3600:.2f} h "
              "of wall time as measured."]
    if "default_alone_total_s" in result:
        n_alone = len(result["papers_estimated_alone"])
        lines += ["", f"Estimated alone: {result['default_alone_total_s'] / 3600:.2f} h (target {TARGET_HOURS:g} h), "
                  f"{n_alone} of {len(result['papers'])} papers from timings with CPU seconds in every stage (their "
                  "wall time where the machine was the run's); the other papers' stages without CPU seconds count as "
                  "measured (an upper bound where they ran beside other work)."]
    lines += ["", "Each paper's slowest default stage, rerun at the smoke profile (FLOPs counted by "
              "`torch.utils.flop_counter`: matmul, convolution, attention):", "",
              "| stage | smoke work (s) | GFLOP | GFLOP/s | fraction of matmul peak | why below 10% |",
              "|---|---|---|---|---|---|"]
    for f in result["slowest_stage_flops"]:
        if f.get("error"):
            lines.append(f"| {f['stage']} | - | - | - | failed: {f['error'].replace('|', '/')} | |")
            continue
        rate = f"{f['flop_per_s'] / 1e9:.2f}" if f["flop_per_s"] is not None else "-"
        low = f["fraction_of_peak"] is not None and f["fraction_of_peak"] < LOW_SHARE_TARGET
        why = LOW_SHARE_REASONS.get(f["stage"], "NOT STATED") if low else ""
        lines.append(f"| {f['stage']} | {f['smoke_work_s']} | {f['flops'] / 1e9:.3f} | {rate} | "
                     f"{f['fraction_of_peak']} | {why} |")
    return "\n".join(lines) + "\n"


def run_smoke(dest: Path) -> tuple[Path, Path]:
    """Copy the repository to ``dest`` at the smoke profile and run its DAG with ``--times``."""
    from tests.smoke import copy_repo

    copy_repo(dest)
    times = dest / "times.json"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-m", "stages.repro", "--jobs", "1", "--times", str(times)], cwd=dest,
                   check=True, env=env)
    return dest, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, help="a smoke workspace whose DAG has run")
    parser.add_argument("--times", type=Path, help="its `stages.repro --times` JSON")
    parser.add_argument("--no-flops", action="store_true", help="skip the in-process FLOP runs")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    parser.add_argument("--refresh", action="store_true",
                        help="reread only the committed default timings into the written dag.json (after a default "
                             "rerun; no smoke run)")
    args = parser.parse_args(argv)
    if (args.workspace is None) != (args.times is None):
        parser.error("--workspace and --times go together")
    if args.refresh:
        result = refresh(json.loads((args.out / "dag.json").read_text()))
        write_json(result, args.out / "dag.json")
        write_text(markdown(result), args.out / "dag.md")
        print(markdown(result))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        workspace, times = (args.workspace, args.times) if args.workspace else run_smoke(Path(tmp) / "ws")
        stage_times = json.loads(times.read_text())["stages"]
        rows = startup_table(workspace, stage_times)
        glob = load_global(workspace / "params.yaml")
        import torch

        torch.set_num_threads(glob.threads)
        peak = matmul_peak()
        flops = []
        if not args.no_flops:
            for paper in glob.papers:
                stage = slowest_default_stage(paper)
                if stage is not None:
                    print(f"[bench dag] {stage}", file=sys.stderr)
                    flops.append(flops_or_error(stage, workspace))
        result = summarise(rows, flops, peak, glob.threads)
    write_json(result, args.out / "dag.json")
    write_text(markdown(result), args.out / "dag.md")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
