"""What each stage pays to import before its work starts (``python -X importtime``).

Every stage runs as its own process, so the imports of its entry module are paid once per stage
and per run: at the smoke profile they are most of a stage's time, at the default profile a fixed
cost beside the work. For every stage command in ``dvc.yaml`` (``python -m <module> ...``) this
imports the module in a fresh interpreter with ``-X importtime`` and records:

- the module's cumulative import time (the interpreter's own start-up excluded);
- the cumulative time of each heavy package it pulls in at import (``HEAVY``), whether or not its
  ``run`` uses it; a heavy package a stage never uses is the one to make lazy.

Writes ``reports/bench/imports.json`` and ``reports/bench/imports.md``. Timings depend on the
machine's load (recorded beside them) and on a warm file cache: the first import of a package after
boot reads it from disk, so every module is imported twice and the second time is kept.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import machine_info
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "lightning", "peft", "sentence_transformers", "pymc", "pytensor", "arviz",
         "sklearn", "scipy", "pandas", "pyarrow", "great_expectations", "matplotlib", "faiss", "safetensors",
         "gguf", "numba", "jax")
LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def stage_modules(dvc_yaml: Path = ROOT / "dvc.yaml") -> dict[str, str]:
    """Stage name -> the module its command runs with ``python -m``."""
    stages = yaml.safe_load(dvc_yaml.read_text())["stages"]
    out = {}
    for name, spec in stages.items():
        match = re.search(r"python -m (\S+)", " ".join(str(spec.get("cmd", "")).split()))
        if match:
            out[name] = match.group(1)
    return out


def parse_importtime(stderr: str, module: str) -> dict[str, Any]:
    """Cumulative seconds of ``module`` and of every top-level heavy package from ``-X importtime`` output.

    A line reads ``import time: <self us> | <cumulative us> | <indent><name>``; a package's first (outermost)
    line is the one whose cumulative time counts (later imports of it are cache hits).
    """
    total = None
    heavy: dict[str, float] = {}
    for line in stderr.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cumulative, name = int(m.group(2)) / 1e6, m.group(4)
        top = name.split(".")[0]
        if name == top and top in HEAVY and top not in heavy:
            heavy[top] = round(cumulative, 3)
        if name == module:
            total = round(cumulative, 3)
    return {"import_s": total, "heavy": heavy}


def measure(module: str, repeats: int = 2) -> dict[str, Any]:
    """Import ``module`` in a fresh interpreter ``repeats`` times; the last run's numbers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result: dict[str, Any] = {}
    for _ in range(repeats):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return {"import_s": None, "heavy": {}, "error": proc.stderr.strip().splitlines()[-1:]}
        result = parse_importtime(proc.stderr, module)
    return result


def markdown(result: dict[str, Any]) -> str:
    rows = sorted(result["stages"].items(), key=lambda kv: -(kv[1]["import_s"] or 0))
    lines = ["# What each stage pays to import", "",
             f"`python -X importtime`, second of two imports per module (warm file cache); machine load "
             f"{result['machine']['load_average_1min']} at the end, so the seconds are relative. Total over "
             f"{len(rows)} stages: {result['total_import_s']:.1f} s per full run of the DAG.", "",
             "| stage | module | import (s) | heavy packages imported (cumulative s) |", "|---|---|---|---|"]
    for stage, r in rows:
        heavy = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["heavy"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {stage} | `{r['module']}` | {r['import_s']} | {heavy or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="stage names (default: every stage in dvc.yaml)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = parser.parse_args(argv)
    modules = stage_modules()
    if args.only:
        modules = {k: v for k, v in modules.items() if k in set(args.only)}
    stages = {}
    for stage, module in modules.items():
        print(f"[bench imports] {stage}", file=sys.stderr)
        stages[stage] = {"module": module, **measure(module)}
    result = {"benchmark": "imports", "machine": machine_info(), "stages": stages,
              "total_import_s": round(sum(r["import_s"] or 0 for r in stages.values()), 2)}
    write_json(result, args.out / "imports.json")
    write_text(markdown(result), args.out / "imports.md")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
