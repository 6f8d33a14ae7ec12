"""Verdict stability: does any paper's result hinge on rounding?

Metrics cannot be bit-identical across machines (BLAS kernels and thread scheduling round
differently), but a verdict must not flip with them. This benchmark compares two smoke runs of the
whole DAG that differ only in the numeric environment: the test suite's (``threads: 1``, the
machine's best torch kernels) and a perturbed one (``threads: 2`` and torch's AVX2 kernels,
``ATEN_CPU_CAPABILITY=avx2``, which change the order of floating-point reductions; stages that cap
their own threads at 1 see only the kernel change). Per paper it reports the largest absolute and
relative change of any number in metrics.json, and whether the verdict or any check's status changed.

    python -m benchmarks.stability --base BASE --perturbed PERTURBED

where BASE and PERTURBED are smoke workspaces (``tests.smoke.copy_repo`` then ``python -m stages.repro``;
for PERTURBED set ``threads: 2`` in its params.yaml and run with ``ATEN_CPU_CAPABILITY=avx2``).
Without them it builds both (two smoke DAG runs, about ten minutes on 2 idle cores). Writes
``reports/bench/stability.json`` and ``reports/bench/stability.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import machine_info
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
PERTURBATION = {"threads": 2, "env": {"ATEN_CPU_CAPABILITY": "avx2"}}


def numbers(tree: Any, prefix: str = "") -> dict[str, float]:
    """Every finite number in a JSON tree, by its path (``per_seed.gap[2]``); booleans are not numbers."""
    out: dict[str, float] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.update(numbers(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            out.update(numbers(value, f"{prefix}[{i}]"))
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool) and math.isfinite(tree):
        out[prefix] = float(tree)
    return out


def compare_metrics(base: Any, perturbed: Any) -> dict[str, Any]:
    """Largest absolute and relative change over the numbers both runs report; keys in one run only."""
    a, b = numbers(base), numbers(perturbed)
    shared = sorted(set(a) & set(b))
    worst_abs = max(shared, key=lambda k: abs(a[k] - b[k]), default=None)
    rel = {k: abs(a[k] - b[k]) / max(abs(a[k]), abs(b[k])) for k in shared if a[k] != b[k]}
    worst_rel = max(rel, key=rel.get, default=None)
    return {"numbers": len(shared), "changed": len(rel),
            "max_abs_change": abs(a[worst_abs] - b[worst_abs]) if worst_abs else 0.0, "max_abs_key": worst_abs,
            "max_rel_change": rel[worst_rel] if worst_rel else 0.0, "max_rel_key": worst_rel,
            "only_in_one": sorted(set(a) ^ set(b))}


def compare_claims(base: dict[str, Any], perturbed: dict[str, Any]) -> dict[str, Any]:
    """The verdicts and every check's status in both runs; the checks whose status changed."""
    status = {c["name"]: c["status"] for c in base.get("checks", [])}
    other = {c["name"]: c["status"] for c in perturbed.get("checks", [])}
    flipped = [{"check": n, "base": status.get(n), "perturbed": other.get(n)}
               for n in sorted(set(status) | set(other)) if status.get(n) != other.get(n)]
    return {"verdict_base": base.get("verdict"), "verdict_perturbed": perturbed.get("verdict"),
            "verdict_changed": base.get("verdict") != perturbed.get("verdict"), "checks": len(status),
            "checks_changed": flipped}


def compare(base: Path, perturbed: Path) -> dict[str, dict[str, Any]]:
    """Per paper of the base workspace's params: metrics and claim compared."""
    papers = yaml.safe_load((base / "params.yaml").read_text())["papers"]
    result = {}
    for paper in papers:
        files = [ws / "reports" / paper / name for ws in (base, perturbed) for name in ("metrics.json", "claim.json")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            result[paper] = {"missing": missing}
            continue
        mb, cb, mp, cp = (json.loads(f.read_text()) for f in files)
        result[paper] = {**compare_metrics(mb, mp), **compare_claims(cb, cp)}
    return result


def _smoke(dest: Path, threads: int, env: dict[str, str]) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.smoke import copy_repo

    root = copy_repo(dest)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["threads"] = threads
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    subprocess.run([sys.executable, "-m", "stages.repro", "--jobs", str(os.cpu_count() or 1)], cwd=root,
                   env={**os.environ, **env}, check=True)
    return root


def table(result: dict[str, dict[str, Any]]) -> str:
    lines = ["| paper | numbers | changed | max rel. change (key) | max abs. change | verdict (base → perturbed) "
             "| checks whose status changed |", "|---|---|---|---|---|---|---|"]
    for paper, r in result.items():
        if "missing" in r:
            lines.append(f"| {paper} | missing outputs | | | | | |")
            continue
        flips = "; ".join(f"{f['check']}: {f['base']} → {f['perturbed']}" for f in r["checks_changed"]) or "none"
        lines.append(f"| {paper} | {r['numbers']} | {r['changed']} | {r['max_rel_change']:.2g} ({r['max_rel_key']}) "
                     f"| {r['max_abs_change']:.3g} | {r['verdict_base']} → {r['verdict_perturbed']} | {flips} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="smoke workspace at threads 1 (built if absent)")
    ap.add_argument("--perturbed", type=Path, help="smoke workspace at the perturbation (built if absent)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports/bench/stability.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.base or _smoke(Path(tmp) / "base", 1, {})
        perturbed = args.perturbed or _smoke(Path(tmp) / "perturbed", PERTURBATION["threads"], PERTURBATION["env"])
        result = compare(base, perturbed)
    flipped = sorted(p for p, r in result.items() if r.get("verdict_changed") or r.get("checks_changed"))
    write_json({"machine": machine_info(), "profile": "smoke", "perturbation": PERTURBATION, "papers": result,
                "papers_with_a_changed_status": flipped}, args.out)
    write_text("# Verdict stability at the smoke profile\n\nBase: `threads: 1`; perturbed: `threads: 2` and "
               "`ATEN_CPU_CAPABILITY=avx2` (torch's AVX2 kernels). Smoke-profile metrics come from tiny runs, so "
               "a status that moves here marks a check that sits near its threshold at this scale, not a "
               "default-profile result that flips.\n\n" + table(result) + "\n", args.out.with_suffix(".md"))
    print(table(result))


if __name__ == "__main__":
    main()
