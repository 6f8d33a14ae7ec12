"""Each paper's slowest stage alone and beside busy processes, per OpenMP wait setting.

``benchmarks/contention.py`` measures three probes; this measures the pipeline's own stages. For every
paper, its slowest stage at the default profile (by committed timings) runs at the smoke profile on a
smoke workspace's inputs (outputs to a temporary folder), in a fresh interpreter per run so that the
OpenMP variables take effect when libgomp loads, after one unmeasured warm-up run of the stage: once alone
and once beside ``--busy`` processes that spin in pure Python (2 on 2 cores = 2× oversubscription: fair
sharing costs about 2×). The time is the stage's own work (``benchmarks.dag.run_redirected``), not the
interpreter's start-up.

Settings: libgomp's default spin (``GOMP_SPINCOUNT=300000``, its documented default, set explicitly so
the row does not depend on the project's own default) and ``GOMP_SPINCOUNT=10000``. The issue's targets:
beside 2× oversubscription a stage slows at most about 3×; alone a setting loses at most 10%.

Writes ``reports/bench/stage_contention.json`` and ``.md``. Usage (a smoke workspace whose DAG ran, e.g.
the one CI leaves): ``python -m benchmarks.stage_contention --workspace W``; without it a smoke DAG is
run first (about 16 minutes). About 15 minutes per repeat on 2 otherwise idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import machine_info
from benchmarks.contention import beside_busy
from benchmarks.dag import run_smoke, slowest_default_stage
from stages.core.config import load_global
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
BASE = "libgomp default (300000)"
SETTINGS: dict[str, dict[str, str]] = {BASE: {"GOMP_SPINCOUNT": "300000"},
                                       "GOMP_SPINCOUNT=10000": {"GOMP_SPINCOUNT": "10000"}}
TARGET_SLOWDOWN = 3.0
TARGET_IDLE_COST = 1.10
# a stage whose work takes less than this alone is timed too coarsely for a ratio to mean much
MIN_ALONE_S = 1.0
CHILD = ("import json, sys, tempfile; from pathlib import Path; from benchmarks.dag import run_redirected\n"
         "with tempfile.TemporaryDirectory() as d:\n"
         "    params = Path(sys.argv[3]) if len(sys.argv) > 3 else None\n"
         "    seconds = run_redirected(sys.argv[1], Path(sys.argv[2]), Path(d), params)\n"
         "import torch\n"
         "print(json.dumps({'seconds': seconds, 'threads': torch.get_num_threads()}))")
PARAMS_NAME = ".stage-contention-params.yaml"


def time_stage(stage: str, workspace: Path, extra_env: dict[str, str],
               params: Path | None = None) -> tuple[float, int]:
    """Seconds of the stage's own work in a fresh interpreter (cwd = the workspace) with ``extra_env``, and torch's
    threads when it ended (a step's ``max_threads`` cap shows here); ``params``: a global params file in the
    workspace's root to use instead of its params.yaml."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    argv = [sys.executable, "-c", CHILD, stage, str(workspace), *([str(params)] if params else [])]
    res = subprocess.run(argv, cwd=workspace, env={**env, **extra_env}, capture_output=True, text=True,
                         timeout=3600)
    if res.returncode != 0:
        raise RuntimeError((res.stderr.strip().splitlines() or ["no output"])[-1][:200])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return float(out["seconds"]), int(out["threads"])


def setting_order(repeat: int) -> list[str]:
    """The settings in the order of one repeat: forward on even repeats, reversed on odd ones (ABBA), so that a drift
    of the machine over the run does not read as the cost of the setting that always came second."""
    names = list(SETTINGS)
    return names if repeat % 2 == 0 else names[::-1]


def not_counted_because(per: dict[str, dict[str, list[float]]], threads: int) -> str:
    """Why a stage's ratios are not counted toward the targets ('' if they are)."""
    if threads <= 1:
        return "runs at 1 thread (a max_threads cap): OpenMP waits for no peer, so the setting cannot matter"
    if not per.get(BASE, {}).get("idle") or statistics.median(per[BASE]["idle"]) < MIN_ALONE_S:
        return f"under {MIN_ALONE_S:g} s alone: timed too coarsely for a ratio"
    return ""


def summarise(runs: dict[str, dict[str, dict[str, list[float]]]],
              threads: dict[str, int] | None = None) -> dict[str, Any]:
    """Per stage and setting: median alone and beside busy, slowdown, cost alone against libgomp's default;
    per setting: how many counted stages meet each target. Whether a stage counts is decided once per stage
    (``not_counted_because``), so every setting's summary covers the same stages."""
    threads = threads or {}
    stages: dict[str, dict[str, dict[str, Any]]] = {}
    excluded: dict[str, str] = {}
    for stage, per in runs.items():
        why = not_counted_because(per, threads.get(stage, 2))
        if why:
            excluded[stage] = why
        stages[stage] = {}
        for name, cond in per.items():
            if not cond["idle"] or not cond["busy"]:
                continue
            idle, busy = statistics.median(cond["idle"]), statistics.median(cond["busy"])
            base = statistics.median(per[BASE]["idle"]) if per.get(BASE, {}).get("idle") else None
            stages[stage][name] = {"idle": idle, "busy": busy, "slowdown": busy / idle,
                                   "idle_vs_default": idle / base if base else None,
                                   "idle_all": list(cond["idle"]), "busy_all": list(cond["busy"]),
                                   "counted": not why}
    settings: dict[str, dict[str, Any]] = {}
    for name in SETTINGS:
        rows = [per[name] for stage, per in stages.items() if name in per and stage not in excluded]
        if not rows:
            continue
        costs = [r["idle_vs_default"] for r in rows if r["idle_vs_default"] is not None]
        settings[name] = {"stages": len(rows),
                          "within_slowdown_target": sum(r["slowdown"] <= TARGET_SLOWDOWN for r in rows),
                          "median_slowdown": statistics.median(r["slowdown"] for r in rows),
                          "max_slowdown": max(r["slowdown"] for r in rows),
                          "within_idle_target": sum(c <= TARGET_IDLE_COST for c in costs),
                          "median_idle_vs_default": statistics.median(costs) if costs else None,
                          "total_idle_s": sum(r["idle"] for r in rows), "total_busy_s": sum(r["busy"] for r in rows)}
    return {"stages": stages, "settings": settings, "threads": threads, "not_counted": excluded}


def markdown(summary: dict[str, Any], info: dict, n_busy: int, repeats: int, errors: dict[str, str],
             threads: int = 2) -> str:
    slow, cost = f"{TARGET_SLOWDOWN:g}×", f"{100 * (TARGET_IDLE_COST - 1):.0f}%"
    lines = ["# The slowest stage of each paper under contention", "",
             f"Smoke profile, {threads} torch thread(s) per stage unless the step caps them (the threads column); "
             f"medians of {repeats} fresh-interpreter run(s) per setting alone and beside {n_busy} busy processes, "
             "the settings' order alternating between repeats, after one unmeasured warm-up run (load at the start "
             f"{info['load_average_1min']}). Fair sharing would slow a stage about 2×; the targets are ≤ {slow} "
             f"beside busy work and ≤ {cost} lost alone.", "",
             f"| setting | stages counted | ≤ {slow} beside busy | median slowdown | worst | ≤ {cost} lost alone | "
             "median alone vs default | sum alone (s) | sum beside busy (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in summary["settings"].items():
        c = "-" if s["median_idle_vs_default"] is None else f"{s['median_idle_vs_default']:.2f}"
        lines.append(f"| {name} | {s['stages']} | {s['within_slowdown_target']} | {s['median_slowdown']:.1f}× | "
                     f"{s['max_slowdown']:.1f}× | {s['within_idle_target']} | {c} | {s['total_idle_s']:.1f} | "
                     f"{s['total_busy_s']:.1f} |")
    lines += ["",
              "| stage | threads | setting | alone (s) | beside busy (s) | slowdown | alone vs default "
              "| every run alone (s) | every run beside busy (s) |",
              "|---|---:|---|---:|---:|---:|---:|---|---|"]
    for stage, per in summary["stages"].items():
        for name, v in per.items():
            c = "-" if v["idle_vs_default"] is None else f"{v['idle_vs_default']:.2f}"
            mark = "" if v["counted"] else " (not counted)"
            lines.append(f"| {stage}{mark} | {summary.get('threads', {}).get(stage, '-')} | {name} | {v['idle']:.2f} | "
                         f"{v['busy']:.2f} | {v['slowdown']:.1f}× | {c} | "
                         f"{', '.join(f'{x:.2f}' for x in v['idle_all'])} | "
                         f"{', '.join(f'{x:.2f}' for x in v['busy_all'])} |")
    for stage, err in errors.items():
        lines.append(f"| {stage} | - | error | {err.replace('|', '/')} | | | | | |")
    if summary.get("not_counted"):
        lines += ["", "Not counted: " + "; ".join(f"{s} ({why})" for s, why in summary["not_counted"].items()) + "."]
    return "\n".join(lines) + "\n"


def params_with_threads(workspace: Path, threads: int) -> Path:
    """The workspace's global params with ``threads`` set, written beside its params.yaml (so that the papers'
    params/<paper>.yaml files resolve as usual); the caller removes it."""
    params = yaml.safe_load((workspace / "params.yaml").read_text())
    params["threads"] = threads
    path = workspace / PARAMS_NAME
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, help="a smoke workspace whose DAG has run")
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2, help="runs per setting and condition (order alternates)")
    ap.add_argument("--papers", nargs="*", help="only these papers (default: all)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads of every stage (default: the repository's params.yaml; a smoke workspace "
                         "built by the tests runs at 1, where OpenMP never waits for a peer)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "stage_contention.json")
    args = ap.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = args.workspace.resolve() if args.workspace else run_smoke(Path(tmp) / "ws")[0]
        info = machine_info()
        threads = args.threads if args.threads is not None else load_global(ROOT / "params.yaml").threads
        papers = args.papers or load_global(workspace / "params.yaml").papers
        runs: dict[str, dict[str, dict[str, list[float]]]] = {}
        stage_threads: dict[str, int] = {}
        errors: dict[str, str] = {}

        def write() -> None:  # after every stage: a run that stops later keeps what it measured
            summary = summarise(runs, stage_threads)
            write_json({"machine": info, "busy": args.busy, "repeats": args.repeats, "threads": threads,
                        "settings": SETTINGS, "runs": runs, "stage_threads": stage_threads, "errors": errors,
                        "summary": summary}, args.out)
            write_text(markdown(summary, info, args.busy, args.repeats, errors, threads), args.out.with_suffix(".md"))

        params = params_with_threads(workspace, threads)
        try:
            for paper in papers:
                stage = slowest_default_stage(paper)
                if stage is None:
                    continue
                try:
                    per: dict[str, dict[str, list[float]]] = {name: {"idle": [], "busy": []} for name in SETTINGS}
                    _, used = time_stage(stage, workspace, SETTINGS[BASE], params)  # warm-up: caches
                    for r in range(args.repeats):
                        for name in setting_order(r):
                            env = SETTINGS[name]
                            per[name]["idle"].append(time_stage(stage, workspace, env, params)[0])
                            per[name]["busy"].append(beside_busy(
                                args.busy, lambda s=stage, e=env: time_stage(s, workspace, e, params))[0])
                    runs[stage], stage_threads[stage] = per, used
                except Exception as err:  # one failing stage is a row with its error; the others still run
                    errors[stage] = f"{type(err).__name__}: {err}"[:200]
                print(f"[bench stage_contention] {stage} {json.dumps(runs.get(stage, errors.get(stage)))}",
                      file=sys.stderr, flush=True)
                write()
        finally:
            params.unlink(missing_ok=True)
    write()
    print(args.out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
