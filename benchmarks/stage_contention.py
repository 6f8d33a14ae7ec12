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
         "    print(json.dumps(run_redirected(sys.argv[1], Path(sys.argv[2]), Path(d), params)))")
PARAMS_NAME = ".stage-contention-params.yaml"


def time_stage(stage: str, workspace: Path, extra_env: dict[str, str], params: Path | None = None) -> float:
    """Seconds of the stage's own work in a fresh interpreter (cwd = the workspace) with ``extra_env``;
    ``params``: a global params file in the workspace's root to use instead of its params.yaml."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    argv = [sys.executable, "-c", CHILD, stage, str(workspace), *([str(params)] if params else [])]
    res = subprocess.run(argv, cwd=workspace, env={**env, **extra_env}, capture_output=True, text=True,
                         timeout=3600)
    if res.returncode != 0:
        raise RuntimeError((res.stderr.strip().splitlines() or ["no output"])[-1][:200])
    return float(json.loads(res.stdout.strip().splitlines()[-1]))


def summarise(runs: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, Any]:
    """Per stage and setting: median alone and beside busy, slowdown, cost alone against libgomp's default;
    per setting: how many stages meet each target (stages under ``MIN_ALONE_S`` alone are listed, not counted)."""
    stages: dict[str, dict[str, dict[str, Any]]] = {}
    for stage, per in runs.items():
        stages[stage] = {}
        for name, cond in per.items():
            if not cond["idle"] or not cond["busy"]:
                continue
            idle, busy = statistics.median(cond["idle"]), statistics.median(cond["busy"])
            base = statistics.median(per[BASE]["idle"]) if per.get(BASE, {}).get("idle") else None
            stages[stage][name] = {"idle": idle, "busy": busy, "slowdown": busy / idle,
                                   "idle_vs_default": idle / base if base else None,
                                   "busy_all": list(cond["busy"]), "counted": idle >= MIN_ALONE_S}
    settings: dict[str, dict[str, Any]] = {}
    for name in SETTINGS:
        rows = [per[name] for per in stages.values() if name in per and per[name]["counted"]]
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
    return {"stages": stages, "settings": settings}


def markdown(summary: dict[str, Any], info: dict, n_busy: int, repeats: int, errors: dict[str, str],
             threads: int = 2) -> str:
    lines = ["# The slowest stage of each paper under contention", "",
             f"Smoke profile, {threads} torch thread(s) per stage (a step's own `max_threads` cap still applies); "
             f"medians of {repeats} fresh-interpreter run(s) alone and beside "
             f"{n_busy} busy processes (load at the start {info['load_average_1min']}). Fair sharing would slow "
             f"a stage about 2×; the targets are ≤ {TARGET_SLOWDOWN:g}× beside busy work and ≤ "
             f"{100 * (TARGET_IDLE_COST - 1):.0f}% lost alone. Stages under {MIN_ALONE_S:g} s alone are shown "
             "but not counted.", "",
             "| setting | stages counted | ≤ 3× beside busy | median slowdown | worst | ≤ 10% lost alone | "
             "median alone vs default | sum alone (s) | sum beside busy (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in summary["settings"].items():
        cost = "-" if s["median_idle_vs_default"] is None else f"{s['median_idle_vs_default']:.2f}"
        lines.append(f"| {name} | {s['stages']} | {s['within_slowdown_target']} | {s['median_slowdown']:.1f}× | "
                     f"{s['max_slowdown']:.1f}× | {s['within_idle_target']} | {cost} | {s['total_idle_s']:.1f} | "
                     f"{s['total_busy_s']:.1f} |")
    lines += ["",
              "| stage | setting | alone (s) | beside busy (s) | slowdown | alone vs default | every busy run (s) |",
              "|---|---|---:|---:|---:|---:|---|"]
    for stage, per in summary["stages"].items():
        for name, v in per.items():
            cost = "-" if v["idle_vs_default"] is None else f"{v['idle_vs_default']:.2f}"
            mark = "" if v["counted"] else " (not counted)"
            runs = ", ".join(f"{x:.2f}" for x in v["busy_all"])
            lines.append(f"| {stage}{mark} | {name} | {v['idle']:.2f} | {v['busy']:.2f} | {v['slowdown']:.1f}× | "
                         f"{cost} | {runs} |")
    for stage, err in errors.items():
        lines.append(f"| {stage} | error | {err} | | | | |")
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
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--papers", nargs="*", help="only these papers (default: all)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads of every stage (default: the repository's params.yaml; a smoke workspace "
                         "built by the tests runs at 1, where OpenMP never waits for a peer)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "stage_contention.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = args.workspace.resolve() if args.workspace else run_smoke(Path(tmp) / "ws")[0]
        info = machine_info()
        threads = args.threads or load_global(ROOT / "params.yaml").threads
        papers = args.papers or load_global(workspace / "params.yaml").papers
        runs: dict[str, dict[str, dict[str, list[float]]]] = {}
        errors: dict[str, str] = {}
        params = params_with_threads(workspace, threads)
        try:
            for paper in papers:
                stage = slowest_default_stage(paper)
                if stage is None:
                    continue
                try:
                    runs[stage] = {name: {"idle": [], "busy": []} for name in SETTINGS}
                    time_stage(stage, workspace, SETTINGS[BASE], params)  # warm-up: file cache, compiled caches
                    for _ in range(args.repeats):
                        for name, env in SETTINGS.items():
                            runs[stage][name]["idle"].append(time_stage(stage, workspace, env, params))
                            runs[stage][name]["busy"].append(
                                beside_busy(args.busy, lambda s=stage, e=env: time_stage(s, workspace, e, params)))
                except RuntimeError as err:  # one failing stage is a row with its error; the others still run
                    errors[stage] = str(err)
                    runs.pop(stage, None)
                print(f"[bench stage_contention] {stage} {json.dumps(runs.get(stage, errors.get(stage)))}",
                      file=sys.stderr, flush=True)
        finally:
            params.unlink(missing_ok=True)
    summary = summarise(runs)
    md = markdown(summary, info, args.busy, args.repeats, errors, threads)
    write_json({"machine": info, "busy": args.busy, "repeats": args.repeats, "threads": threads,
                "settings": SETTINGS, "runs": runs, "errors": errors, "summary": summary}, args.out)
    write_text(md, args.out.with_suffix(".md"))
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
