"""Rerunning one stage of the shared smoke workspace as its own process, outputs redirected.

The kill probes (tests/pipeline/test_kill_every_paper.py) and the determinism check
(tests/pipeline/test_determinism_every_stage.py) both run a stage's command as dvc.yaml would,
on the shared run's inputs, with every output under a temporary folder, and compare the outputs
byte for byte with the shared run's. A stage that is deterministic given its inputs, for every
stage, makes the whole DAG deterministic; checked per stage, the checks are independent tests that
pytest-xdist spreads over the workers, and a difference names the stage that made it.
"""

from __future__ import annotations

import dataclasses
import filecmp
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from stages import dag
from tests.smoke import SmokeRepo

ROOT = Path(__file__).resolve().parents[1]

# Papers whose outputs are known to differ between two runs on the same machine; each needs a fix.
NONDETERMINISTIC = {
    "text2grad": "SFT policy bytes, PPO curves and metrics.json differed in 1 of 3 pairs of smoke runs",
    "sci2pol": "bench scores/answers and metrics.json differed in 1 of 3 pairs of smoke runs",
}

# output names that hold wall times (claim.json, the report's text and the timing), which differ run to run
TIMED_OUTPUTS = frozenset({"report", "claim"})


def shows_progress(entry: Any) -> bool:
    """Whether the step's own code (its paper's files it imports) draws a tqdm progress bar, itself or
    through ``map_runs`` (stages/core/workers.py, whose bar counts the runs)."""
    own = ROOT / "stages" / entry.paper
    files = dag.import_closure(f"stages.{entry.paper}.{entry.step}")
    return any(f.is_relative_to(own) and ("tqdm(" in (text := f.read_text()) or "map_runs(" in text) for f in files)


def longest_stage(smoke_repo: SmokeRepo, paper: str) -> Any:
    """The paper's longest stage in the smoke run among those that show progress (the kill probe's)."""
    timings = {}
    for entry in filter(shows_progress, dag.steps(paper)):
        path = smoke_repo.root / dag.timing_path(entry)
        if path.is_file():
            timings[entry.stage] = json.loads(path.read_text())["wall_time_s"]
    assert timings, f"{paper}: no stage that shows a progress bar (long work should), or no smoke timings"
    return smoke_repo.step(max(timings, key=timings.__getitem__))


def stage_command(smoke_repo: SmokeRepo, entry: Any, folder: Path) -> tuple[list[str], dict[str, Path]]:
    """The step's command line with every output (and its timing) under ``folder``."""
    outs = {f.name: folder / f.name / Path(dag.field_paths(entry)[f.name]).name
            for f in dataclasses.fields(entry.paths) if f.metadata.get("role") == "out"}
    paths = smoke_repo.paths(entry.stage, **outs)
    argv = [sys.executable, "-m", f"stages.{entry.paper}.{entry.step}", "--params", str(smoke_repo.params),
            "--timing", str(folder / "timing.json")]
    for f in dataclasses.fields(entry.paths):
        argv += ["--" + f.name.replace("_", "-"), str(getattr(paths, f.name))]
    for out in outs.values():
        out.parent.mkdir(parents=True, exist_ok=True)
    return argv, outs


def _tree(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def names(path: Path) -> list[Path]:
    """The files of an output (itself, or a folder's files relative to it)."""
    return [p.relative_to(path) for p in _tree(path)]


def same(a: Path, b: Path) -> bool:
    """The same file names and bytes (a file or a folder)."""
    return names(a) == names(b) and all(filecmp.cmp(x, y, shallow=False)
                                        for x, y in zip(_tree(a), _tree(b), strict=True))


def difference(a: Path, b: Path) -> str:
    """What differs between two outputs, for the failure message: the differing rows of Parquet tables
    (a CI failure should say which row changed, not only that a file did)."""
    if names(a) != names(b):
        return f"files {names(a)} vs {names(b)}"
    lines = []
    for x, y in zip(_tree(a), _tree(b), strict=True):
        if filecmp.cmp(x, y, shallow=False):
            continue
        if x.suffix != ".parquet":
            lines.append(f"{x.name}: bytes differ")
            continue
        left, right = pd.read_parquet(x), pd.read_parquet(y)
        if list(left.columns) != list(right.columns) or len(left) != len(right):
            lines.append(f"{x.name}: shape {left.shape} vs {right.shape}")
            continue
        rows = [i for i in range(len(left)) if not left.iloc[[i]].reset_index(drop=True).equals(
            right.iloc[[i]].reset_index(drop=True))]
        for i in rows[:5]:
            cols = [c for c in left.columns if repr(left[c].iloc[i]) != repr(right[c].iloc[i])]
            lines.append(f"{x.name} row {i}: " + "; ".join(
                f"{c}: {str(left[c].iloc[i])[:120]!r} -> {str(right[c].iloc[i])[:120]!r}" for c in cols))
        lines.append(f"{x.name}: {len(rows)} of {len(left)} rows differ")
    return "\n".join(lines)
