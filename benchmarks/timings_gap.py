"""Your stage times beside the committed ones: after a ``dvc repro`` (any profile), every stage timing in
``reports/<paper>/timings/`` that differs from the one committed at ``--rev`` (default HEAD), with the ratio of
wall times and, where both timings record them, CPU seconds, threads and the load at the step's end.

A ratio far above 1 with CPU / threads close to the committed one means the run shared the cores (see
``load``); a ratio far above 1 in CPU seconds too means the stage itself did more or slower work on this
machine (thread settings, a slower CPU, an adaptive solver taking other step counts). Timings of another
profile than the committed one are listed apart, not compared. Writes ``--out`` (JSON and ``.md``) when given.
Usage: ``python -m benchmarks.timings_gap [--rev REV] [--out reports/bench/timings_gap.json]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.common import alone_estimate
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]


def committed_timing(repo: Path, rev: str, rel: str) -> dict[str, Any] | None:
    """The timing JSON at ``rev`` (None if that revision has no such file)."""
    res = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=repo, capture_output=True, text=True)
    return json.loads(res.stdout) if res.returncode == 0 else None


def check_rev(repo: Path, rev: str) -> None:
    """Refuse a revision that is not a commit of ``repo`` (else every timing would read as never committed)."""
    res = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=repo,
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise ValueError(f"{rev!r} is not a commit of the git repository at {repo}")


def gap_rows(repo: Path, rev: str = "HEAD") -> list[dict[str, Any]]:
    """One row per timing file whose content differs from the committed one."""
    check_rev(repo, rev)
    rows = []
    for path in sorted((repo / "reports").glob("*/timings/*.json")):
        rel = path.relative_to(repo).as_posix()
        now = json.loads(path.read_text())
        then = committed_timing(repo, rev, rel)
        if then == now:
            continue
        row: dict[str, Any] = {"stage": f"{path.parts[-3]}-{path.stem}", "profile": now.get("profile"),
                               "wall_s": now["wall_time_s"], "cpu_s": now.get("cpu_time_s"),
                               "threads": now.get("threads"), "load": now.get("load_average_1min"),
                               "alone_estimate_s": alone_estimate(now)}
        if then is None or then.get("profile") != now.get("profile"):
            row.update(committed_profile=None if then is None else then.get("profile"), comparable=False)
        else:
            row.update(committed_profile=then.get("profile"), comparable=True,
                       committed_wall_s=then["wall_time_s"], committed_cpu_s=then.get("cpu_time_s"),
                       committed_load=then.get("load_average_1min"),
                       committed_alone_estimate_s=alone_estimate(then),
                       wall_ratio=now["wall_time_s"] / then["wall_time_s"] if then["wall_time_s"] else None,
                       cpu_ratio=(now["cpu_time_s"] / then["cpu_time_s"]
                                  if "cpu_time_s" in now and then.get("cpu_time_s") else None))
        rows.append(row)
    return rows


def _f(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def markdown(rows: list[dict[str, Any]], rev: str) -> str:
    lines = [f"# Stage times against the timings committed at `{rev}`", "",
             "The estimate alone is CPU / threads, or the wall time where that is lower (worker processes, as in "
             "denots' train, do more CPU seconds than the threads can); it understates a step whose threads idle "
             "through serial parts.", "",
             "| stage | profile | committed wall (s) | wall (s) | wall × | committed CPU (s) | CPU (s) | CPU × | "
             "committed load | load | committed estimate alone (s) | estimate alone now (s) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["comparable"]:
            lines.append(f"| {r['stage']} | {r['profile']} | {_f(r['committed_wall_s'])} | {_f(r['wall_s'])} | "
                         f"{_f(r['wall_ratio'], '.2f')} | {_f(r['committed_cpu_s'])} | {_f(r['cpu_s'])} | "
                         f"{_f(r['cpu_ratio'], '.2f')} | {_f(r['committed_load'], '.2f')} | {_f(r['load'], '.2f')} | "
                         f"{_f(r['committed_alone_estimate_s'])} | {_f(r['alone_estimate_s'])} |")
    other = [r for r in rows if not r["comparable"]]
    if other:
        lines += ["", "Not compared (another profile than the committed timing, or none committed): "
                  + ", ".join(f"{r['stage']} ({r['profile']})" for r in other) + "."]
    if not rows:
        lines += ["", "No timing differs from the committed one."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="HEAD", help="the commit whose timings are the reference")
    ap.add_argument("--repo", type=Path, default=ROOT)
    ap.add_argument("--out", type=Path, help="write JSON here and the table beside it (.md)")
    args = ap.parse_args(argv)
    try:
        rows = gap_rows(args.repo, args.rev)
    except ValueError as err:
        ap.error(str(err))
    md = markdown(rows, args.rev)
    if args.out:
        write_json({"rev": args.rev, "rows": rows}, args.out)
        write_text(md, args.out.with_suffix(".md"))
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
