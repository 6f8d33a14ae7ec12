"""Where the test suite's time goes, and what it will cost at nineteen papers.

Reads a JUnit XML of a whole-suite run (``python -m pytest --junitxml=junit.xml``; CI's
``make test`` with ``PYTEST_ADDOPTS=--junitxml=...``) and writes ``reports/bench/suite.json`` and
the table in ``reports/bench/suite.md``: the suite's wall time, the time per test folder, the two
smoke-DAG runs (the shared run's time is the suite property ``smoke_dag_seconds`` that the
``smoke_repo`` fixture records) and the determinism reruns (one test per stage), the slowest tests, and a
linear projection to nineteen papers.

Projection: the per-paper cost is every test under ``tests/<paper>/`` plus the paper's share of
the two smoke-DAG runs and of the per-paper probes (kill, corruption, params), i.e. everything
that grows with the number of papers; the rest (flows, core, assets, lint) stays fixed.
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from benchmarks.common import machine_info
from stages.core.config import load_global
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
TARGET_PAPERS = 19
DETERMINISM = "test_stage_rerun_reproduces_its_outputs_bit_for_bit"  # one case per stage
PER_PAPER_PROBES = ("test_kill_every_paper", "test_corruption_every_stage", "test_params_every_paper")


def _folder(classname: str) -> str:
    parts = classname.split(".")
    return parts[1] if len(parts) > 2 else "(top)"


def summarise(junit: Path, papers: list[str]) -> dict:
    """Seconds per folder, the smoke DAG runs, the slowest tests and the projection to nineteen papers."""
    root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    cases = [(c.get("classname", ""), c.get("name", ""), float(c.get("time", 0.0))) for c in root.iter("testcase")]
    if not cases:
        raise ValueError(f"{junit}: no test cases")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    if "smoke_dag_seconds" not in props:
        raise ValueError(f"{junit}: no smoke_dag_seconds property (a run of tests/smoke.py's fixture records it)")
    shared = float(props["smoke_dag_seconds"])
    # the shared run is inside the time of the first test that needed it: the shortest test that is
    # at least that long is taken as its host, and the DAG taken out of it
    hosts = [i for i, (_, name, s) in enumerate(cases) if s >= shared]
    if hosts:
        i = min(hosts, key=lambda i: cases[i][2])
        cases[i] = (cases[i][0], cases[i][1], cases[i][2] - shared)
    per_folder: Counter[str] = Counter()
    for classname, _, seconds in cases:
        per_folder[_folder(classname)] += seconds
    rerun = sum(s for _, name, s in cases if name.split("[")[0] == DETERMINISM)
    probes = sum(s for cls, _, s in cases if cls.rsplit(".", 1)[-1] in PER_PAPER_PROBES)
    paper_tests = sum(per_folder[p] for p in papers)
    growing = shared + rerun + probes + paper_tests
    total = float(suite.get("time", sum(s for *_, s in cases))) if suite is not None else sum(s for *_, s in cases)
    per_paper = growing / len(papers)
    projected = total + (TARGET_PAPERS - len(papers)) * per_paper
    slowest = sorted(cases, key=lambda c: -c[2])[:15]
    stage_times = json.loads(props.get("smoke_stage_times") or "{}")
    stage_cpu = sorted(stage_times.items(), key=lambda kv: -kv[1]["cpu_s"])
    return {
        "benchmark": "suite",
        "machine": machine_info(),
        "papers": len(papers),
        "tests": len(cases),
        "suite_wall_s": round(total, 1),
        "per_folder_s": {k: round(v, 1) for k, v in per_folder.most_common()},
        "smoke_dag_shared_run_s": round(shared, 1),
        "smoke_dag_determinism_rerun_s": round(rerun, 1),
        "per_paper_probes_s": round(probes, 1),
        "per_paper_cost_s": round(per_paper, 1),
        "projected_suite_s_at_19_papers": round(projected, 1),
        "slowest": [{"test": f"{c}::{n}", "seconds": round(s, 1)} for c, n, s in slowest],
        "smoke_dag_cpu_s": round(sum(t["cpu_s"] for t in stage_times.values()), 1),
        "smoke_dag_cpu_s_per_paper": {p: round(sum(t["cpu_s"] for s, t in stage_times.items()
                                                   if s.startswith(f"{p}-")), 1) for p in papers},
        "smoke_stages_most_cpu": [{"stage": s, **t} for s, t in stage_cpu[:15]],
    }


def markdown(result: dict) -> str:
    """The table for reports/bench/suite.md."""
    lines = ["# Test suite time", "",
             f"{result['tests']} tests, {result['papers']} papers, suite wall time "
             f"{result['suite_wall_s'] / 60:.1f} min (load {result['machine']['load_average_1min']} at the end).", "",
             "Seconds are test times summed over the pytest-xdist workers, so the parts add up to more than the wall "
             "time; a worker that waited for the shared smoke DAG counts the wait in its first test that needed it.",
             "",
             "| part | seconds |", "|---|---:|",
             f"| smoke DAG, shared run (the `smoke_repo` fixture) | {result['smoke_dag_shared_run_s']} |",
             f"| determinism, every stage rerun on the shared inputs | {result['smoke_dag_determinism_rerun_s']} |",
             f"| per-paper probes (kill, corruption, params) | {result['per_paper_probes_s']} |"]
    lines += [f"| `tests/{k}` | {v} |" for k, v in result["per_folder_s"].items()]
    lines += ["", f"Growing with the papers: {result['per_paper_cost_s']} s per paper; at {TARGET_PAPERS} papers the "
              f"suite would take about {result['projected_suite_s_at_19_papers'] / 60:.0f} min (linear projection).",
              "", "Slowest tests:", "", "| test | seconds |", "|---|---:|"]
    lines += [f"| `{row['test']}` | {row['seconds']} |" for row in result["slowest"]]
    if result["smoke_stages_most_cpu"]:
        per_paper = ", ".join(f"{p} {s}" for p, s in result["smoke_dag_cpu_s_per_paper"].items())
        lines += ["", f"The shared smoke DAG used {result['smoke_dag_cpu_s']} CPU-seconds (DVC and the stage "
                  f"commands). Per paper: {per_paper}.", "", "| stage | CPU s | wall s |", "|---|---:|---:|"]
        lines += [f"| `{r['stage']}` | {r['cpu_s']} | {r['wall_s']} |" for r in result["smoke_stages_most_cpu"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--junit", type=Path, required=True, help="JUnit XML of a whole-suite run")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = parser.parse_args(argv)
    result = summarise(args.junit, load_global(ROOT / "params.yaml").papers)
    write_json(result, args.out / "suite.json")
    write_text(markdown(result), args.out / "suite.md")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
