"""OpenMP waiting under contention: the same small and large torch work alone and beside busy processes.

Writes ``reports/bench/contention.json`` and ``contention.md``. For each OpenMP wait setting (libgomp's
default spin, shorter spin counts, the passive policy), with 2 torch threads, the probe of
``benchmarks.threads`` (a purrception training step, a 64×64 matmul, one SmolLM2-135M forward pass on
160 tokens) runs in a fresh interpreter ``--repeats`` times on the idle machine and as often beside
``--busy`` processes that spin in pure Python (2 busy processes on 2 cores = 2× oversubscription). Fair
sharing would slow the work about 2×; much more means threads wait for a descheduled peer. A setting is
worth adopting when it cuts the slowdown beside busy processes without costing more than 10% alone.
About 10 minutes on 2 otherwise idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from benchmarks.common import machine_info
from benchmarks.threads import PROBE
from stages.core.io import write_json

SETTINGS: dict[str, dict[str, str]] = {
    "default spin (libgomp)": {},
    "GOMP_SPINCOUNT=10000": {"GOMP_SPINCOUNT": "10000"},
    "GOMP_SPINCOUNT=100": {"GOMP_SPINCOUNT": "100"},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
}
T = TypeVar("T")
# spins in pure Python while its parent (the pid it is given) lives, so a killed benchmark leaves no busy process
BUSY = "import os, sys\nparent = int(sys.argv[1])\nwhile os.getppid() == parent:\n    pass"
MEASURES = ("purrception_step_ms", "matmul64_us", "smollm2_forward_160_ms")


def probe(extra_env: dict[str, str], threads: int, model: Path) -> dict[str, float]:
    """One probe in a fresh interpreter with the OpenMP variables of ``extra_env`` only."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    res = subprocess.run([sys.executable, "-c", PROBE, str(threads), str(model)], env={**env, **extra_env},
                         capture_output=True, text=True, check=True, timeout=1200)
    return json.loads(res.stdout.strip().splitlines()[-1])


def beside_busy(n_busy: int, fn: Callable[[], T]) -> T:
    """Run ``fn()`` while ``n_busy`` pure-Python spinning processes compete for the cores."""
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY, str(os.getpid())]) for _ in range(n_busy)]
    try:
        return fn()
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def summarise(runs: dict[str, dict[str, list[dict[str, float]]]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per setting and measure: median alone, median beside the busy processes, their ratio, and the cost alone
    relative to libgomp's default."""
    base = "default spin (libgomp)"
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, cond in runs.items():
        out[name] = {}
        for m in MEASURES:
            if not all(m in r for r in cond["idle"] + cond["busy"]):
                continue
            idle = statistics.median(r[m] for r in cond["idle"])
            busy = statistics.median(r[m] for r in cond["busy"])
            base_idle = statistics.median(r[m] for r in runs[base]["idle"])
            out[name][m] = {"idle": idle, "busy": busy, "slowdown": busy / idle, "idle_vs_default": idle / base_idle,
                            "busy_all": [r[m] for r in cond["busy"]]}
    return out


def markdown(summary: dict[str, dict[str, dict[str, float]]], info: dict, n_busy: int, repeats: int) -> str:
    lines = ["# OpenMP waiting under contention", "",
             f"2 torch threads; medians of {repeats} fresh-interpreter probes alone and beside {n_busy} busy "
             f"processes (load at the start {info['load_average_1min']}). Fair sharing of the cores would slow "
             "the work about 2×.", "",
             "| setting | measure | alone | beside busy | slowdown | alone vs default | beside busy, every run |",
             "|---|---|---:|---:|---:|---:|---|"]
    for name, per in summary.items():
        for m, v in per.items():
            runs = ", ".join(f"{x:.1f}" for x in v["busy_all"])
            lines.append(f"| {name} | {m} | {v['idle']:.1f} | {v['busy']:.1f} | {v['slowdown']:.1f}× | "
                         f"{v['idle_vs_default']:.2f} | {runs} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=Path("models/assets/smollm2-135m"))
    ap.add_argument("--busy", type=int, default=2, help="busy processes beside the probe")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("reports/bench/contention.json"))
    args = ap.parse_args()
    info = machine_info()
    runs: dict[str, dict[str, list[dict[str, float]]]] = {}
    for name, env in SETTINGS.items():
        idle = [probe(env, args.threads, args.model) for _ in range(args.repeats)]
        busy = [beside_busy(args.busy, lambda env=env: probe(env, args.threads, args.model))
                for _ in range(args.repeats)]
        runs[name] = {"idle": idle, "busy": busy}
        print(name, json.dumps({"idle": idle, "busy": busy}), flush=True)
    summary = summarise(runs)
    write_json({"machine": info, "threads": args.threads, "busy": args.busy, "repeats": args.repeats,
                "runs": runs, "summary": summary}, args.out)
    args.out.with_suffix(".md").write_text(markdown(summary, info, args.busy, args.repeats))
    print(markdown(summary, info, args.busy, args.repeats))


if __name__ == "__main__":
    main()
