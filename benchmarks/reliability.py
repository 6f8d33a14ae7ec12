"""Reliability in counts: what the generated bad-input, corruption, kill, determinism and isolation
tests tried and how much of it the pipeline survived.

Reads a JUnit XML of a test run (``python -m pytest --junitxml=junit.xml``, the whole suite or the
reliability tests alone) or, without ``--junit``, runs the reliability tests itself (they share one
smoke DAG run; about as long as the suite's smoke part). Writes ``reports/bench/reliability.json``
and the table in ``reports/bench/reliability.md``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from benchmarks.common import machine_info
from stages.core.io import write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
TESTS = {
    "params": ("tests/pipeline/test_params_every_paper.py", "test_bad_value_refused_with_its_key"),
    "truncated input": ("tests/pipeline/test_corruption_every_stage.py", "test_truncated_input_names_the_file"),
    "dropped column": ("tests/pipeline/test_corruption_every_stage.py", "test_dropped_column_is_refused"),
    "NaN weights": ("tests/pipeline/test_corruption_every_stage.py", "test_nan_weights_never_become_results"),
    "kill and rerun": ("tests/pipeline/test_kill_every_paper.py", "test_longest_stage_survives_kills"),
    "determinism (per stage)": ("tests/pipeline/test_determinism_every_stage.py",
                                "test_stage_rerun_reproduces_its_outputs_bit_for_bit"),
    "network-free DAG": ("tests/pipeline/test_repro_smoke.py", "test_the_smoke_dag_ran_without_network"),
    "sandbox limits": ("tests/core/test_sandbox.py", ""),
}


def _outcome(case: ET.Element) -> str:
    for tag, name in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            return "known_gap" if found.get("type") == "pytest.xfail" else name
    return "passed"


def count(junit: Path) -> dict[str, dict[str, int]]:
    """Per kind of probe: cases passed (survived), failed (a new defect), known gaps (listed defects,
    xfail) and skipped (not applicable)."""
    cases = ET.parse(junit).getroot().iter("testcase")
    counts: dict[str, Counter[str]] = {kind: Counter() for kind in TESTS}
    for case in cases:
        module = case.get("classname", "").replace(".", "/") + ".py"
        name = case.get("name", "").split("[")[0]
        for kind, (path, test) in TESTS.items():
            if module.endswith(path) and (not test or name == test):
                counts[kind][_outcome(case)] += 1
    return {k: {o: c[o] for o in ("passed", "failed", "known_gap", "skipped")} for k, c in counts.items()}


def params_examples() -> int:
    """Generated params mistakes tried per run of the params test (one refusal checked each)."""
    from tests.pipeline import test_params_every_paper as t

    params = t.read_params(t.PARAMS)
    return sum(min(t.SETTINGS.max_examples, len([c for d in t._sections_read(e) for c in t._section_cases(params, d)]))
               for e in t.CONFIGURED)


def markdown(counts: dict[str, dict[str, int]], examples: int) -> str:
    lines = ["# Reliability probes", "",
             "Generated for every paper and stage (`python -m benchmarks.reliability`); a failed probe is a defect.",
             "", "| probe | survived | failed | known gap (listed) | not applicable |", "|---|---:|---:|---:|---:|"]
    for kind, c in counts.items():
        lines.append(f"| {kind} | {c['passed']} | {c['failed']} | {c['known_gap']} | {c['skipped']} |")
    lines += ["", f"The params probes tried {examples} generated mistakes (NaN, ±inf, wrong types, unknown keys)"
              " across every step's params sections; each was refused before work with its dotted key.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--junit", type=Path, help="JUnit XML of a test run (default: run the reliability tests)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports/bench/reliability.json")
    args = parser.parse_args(argv)
    junit = args.junit
    if junit is None:
        junit = Path(tempfile.mkdtemp()) / "junit.xml"
        files = sorted({path for path, _ in TESTS.values()})
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", f"--junitxml={junit}", *files],
                       cwd=ROOT, check=False)
    counts = count(junit)
    examples = params_examples()
    write_json({"probes": counts, "params_examples": examples, "machine": machine_info()}, args.out)
    write_text(markdown(counts, examples), args.out.with_suffix(".md"))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
