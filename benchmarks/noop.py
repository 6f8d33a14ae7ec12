"""A no-op ``dvc repro`` and ``dvc status`` on a fully reproduced workspace, and where their time goes.

Writes ``reports/bench/noop.json`` and ``noop.md``. Every command runs in a fresh process ``--repeats`` times
(median reported): ``python -c pass`` (the interpreter), ``dvc --version`` (DVC's import and command line),
``dvc status`` and ``dvc repro``. The workspace must be fully reproduced: ``dvc status`` must report nothing
before any ``dvc repro`` runs, and a ``dvc repro`` that runs a stage is an error (the number would not be a
no-op's). The target is at most 5 s for each. Without ``--workspace`` the repository itself is measured
(``dvc status`` only when it is not fully reproduced, which is the usual state of a clone).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import machine_info
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 5.0
UP_TO_DATE = ("Data and pipelines are up to date", "up to date")

Runner = Callable[[Sequence[str], Path], tuple[float, str]]


def run_timed(cmd: Sequence[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds and combined output of one command (an error if it fails)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    start = time.perf_counter()
    res = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` in {cwd} exited {res.returncode}: {res.stderr.strip()[-2000:]}")
    return seconds, res.stdout + res.stderr


def is_clean(status_output: str) -> bool:
    """Whether ``dvc status`` reported nothing to do."""
    text = status_output.strip()
    return text == "" or any(s in text for s in UP_TO_DATE)


def ran_stages(repro_output: str) -> list[str]:
    """The stages a ``dvc repro`` ran (``Running stage '<name>'`` lines)."""
    return [line.split("'")[1] for line in repro_output.splitlines()
            if line.startswith("Running stage '") and line.count("'") >= 2]


def measure(workspace: Path, repeats: int, runner: Runner = run_timed) -> dict[str, Any]:
    """Median wall seconds of each command; refuses a workspace that is not fully reproduced before any repro."""
    commands = {"python -c pass": [sys.executable, "-c", "pass"], "dvc --version": ["dvc", "--version"],
                "dvc status": ["dvc", "status"]}
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    clean = True
    for _ in range(repeats):
        for name, cmd in commands.items():
            s, out = runner(cmd, workspace)
            seconds[name].append(s)
            if name == "dvc status":
                clean = clean and is_clean(out)
    result: dict[str, Any] = {"workspace": str(workspace), "repeats": repeats, "fully_reproduced": clean}
    if clean:
        seconds["dvc repro"] = []
        for _ in range(repeats):
            s, out = runner(["dvc", "repro"], workspace)
            ran = ran_stages(out)
            if ran:
                raise RuntimeError(f"{workspace}: `dvc repro` ran {', '.join(ran)}; not a no-op workspace")
            seconds["dvc repro"].append(s)
    result["median_s"] = {k: round(statistics.median(v), 3) for k, v in seconds.items()}
    result["all_s"] = {k: [round(x, 3) for x in v] for k, v in seconds.items()}
    result["within_target"] = {k: v <= TARGET_S for k, v in result["median_s"].items() if k.startswith("dvc ")
                               and k != "dvc --version"}
    return result


def workspace_size(workspace: Path) -> dict[str, int]:
    """Stages in ``dvc.lock`` and files under ``data/``, ``models/`` and ``reports/`` (what DVC may hash)."""
    lock = workspace / "dvc.lock"
    n_stages = sum(1 for line in lock.read_text().splitlines() if line.startswith("  ") and not line.startswith("   ")
                   and line.rstrip().endswith(":")) if lock.is_file() else 0
    files = sum(1 for d in ("data", "models", "reports") for p in (workspace / d).rglob("*") if p.is_file())
    return {"stages_in_lock": n_stages, "files_in_outputs": files}


def markdown(results: list[dict[str, Any]]) -> str:
    """One table row per workspace and command."""
    lines = ["# A no-op `dvc repro` and `dvc status`", "",
             f"Median wall seconds over fresh processes; target at most {TARGET_S:.0f} s. `dvc --version` is DVC's "
             "import and command-line start alone, so the rest of `dvc status` is reading the DAG and checking hashes.",
             "", "| workspace | fully reproduced | stages | output files | command | median (s) |",
             "|---|---|---|---|---|---|"]
    for r in results:
        for cmd, s in r["median_s"].items():
            lines.append(f"| {r['label']} | {'yes' if r['fully_reproduced'] else 'no'} | {r['stages_in_lock']} | "
                         f"{r['files_in_outputs']} | `{cmd}` | {s:.2f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, action="append",
                        help="a workspace to measure (repeatable); default: this repository")
    parser.add_argument("--label", action="append", help="a name per --workspace for the table")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = parser.parse_args(argv)
    workspaces = args.workspace or [ROOT]
    labels = args.label or [w.name for w in workspaces]
    if len(labels) != len(workspaces):
        parser.error("give one --label per --workspace")
    results = []
    for label, ws in zip(labels, workspaces, strict=True):
        r = measure(ws.resolve(), args.repeats)
        results.append({"label": label, **workspace_size(ws), **r})
    write_json({"benchmark": "noop", "machine": machine_info(), "target_s": TARGET_S, "results": results},
               args.out / "noop.json")
    write_text(markdown(results), args.out / "noop.md")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
