"""Each paper's longest stage survives SIGTERM and SIGKILL mid-work, and its rerun is identical.

Generated, not written per paper. For every paper, the stage that took longest in the shared
smoke run among those that draw a progress bar runs again as its own process (the command
dvc.yaml would run, its outputs redirected to a temporary folder) and is killed when its first
progress bar appears on stderr (the work has begun; no sleeps):

- SIGTERM: the stage exits 143 saying it was interrupted, and none of its outputs exist;
- SIGKILL: whatever half-written temporaries it left, a rerun sweeps them and runs to the end,
  and its outputs are byte-identical to the shared smoke run's (papers known to be
  nondeterministic are compared on the files that exist only).
"""

from __future__ import annotations

import dataclasses
import filecmp
import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from stages import dag
from stages.core.config import load_global
from tests.pipeline.test_repro_smoke import NONDETERMINISTIC
from tests.smoke import SmokeRepo

ROOT = Path(__file__).resolve().parents[2]
PAPERS = load_global(ROOT / "params.yaml").papers
PROGRESS = re.compile(r"\|\s*\d+/\d+ \[")  # a tqdm bar: "desc:  40%|####      | 2/5 [00:01<..."
MARKER_TIMEOUT_S = 900


def _shows_progress(entry: Any) -> bool:
    """Whether the step's own code (its paper's files it imports) draws a tqdm progress bar."""
    own = ROOT / "stages" / entry.paper
    files = dag.import_closure(f"stages.{entry.paper}.{entry.step}")
    return any(f.is_relative_to(own) and "tqdm(" in f.read_text() for f in files)


def _longest_stage(smoke_repo: SmokeRepo, paper: str) -> Any:
    """The paper's longest stage in the smoke run among those that show progress (the kill marker)."""
    timings = {}
    for entry in filter(_shows_progress, dag.steps(paper)):
        path = smoke_repo.root / dag.timing_path(entry)
        if path.is_file():
            timings[entry.stage] = json.loads(path.read_text())["wall_time_s"]
    assert timings, f"{paper}: no stage that shows a progress bar (long work should), or no smoke timings"
    return smoke_repo.step(max(timings, key=timings.__getitem__))


def _command(smoke_repo: SmokeRepo, entry: Any, folder: Path) -> tuple[list[str], dict[str, Path]]:
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


def _run_until_progress(argv: list[str], cwd: Path, sig: int) -> tuple[int, str]:
    """Start the stage, send ``sig`` at its first progress bar, return (exit code, stderr)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    marker = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        buffer = ""
        while chunk := proc.stderr.read(1):
            buffer += chunk
            if not marker.is_set() and PROGRESS.search(buffer[-400:]):
                marker.set()
        seen.append(buffer)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while not marker.wait(0.05):
        if proc.poll() is not None:
            break
    if marker.is_set() and proc.poll() is None:
        proc.send_signal(sig)
    code = proc.wait(timeout=MARKER_TIMEOUT_S)
    reader.join(timeout=30)
    stderr = "".join(seen)
    assert marker.is_set(), f"{argv[2]}: finished (exit {code}) before showing a progress bar:\n{stderr[-2000:]}"
    return code, stderr


def _tree(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def _names(path: Path) -> list[Path]:
    return [p.relative_to(path) for p in _tree(path)]


def _same(a: Path, b: Path) -> bool:
    """The same file names and bytes (a file or a folder)."""
    return _names(a) == _names(b) and all(filecmp.cmp(x, y, shallow=False)
                                          for x, y in zip(_tree(a), _tree(b), strict=True))


def _difference(a: Path, b: Path) -> str:
    """What differs between two outputs, for the failure message: the differing rows of Parquet tables
    (a CI failure should say which row changed, not only that a file did)."""
    if _names(a) != _names(b):
        return f"files {_names(a)} vs {_names(b)}"
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


@pytest.mark.parametrize("paper", PAPERS)
def test_longest_stage_survives_kills(smoke_repo: SmokeRepo, paper: str, tmp_path: Path) -> None:
    entry = _longest_stage(smoke_repo, paper)
    argv, outs = _command(smoke_repo, entry, tmp_path)

    code, stderr = _run_until_progress(argv, smoke_repo.root, signal.SIGTERM)
    assert code == 128 + signal.SIGTERM, f"{entry.stage}: SIGTERM gave exit {code}:\n{stderr[-2000:]}"
    assert "interrupted by SIGTERM" in stderr
    assert not [p for p in outs.values() if p.exists()], f"{entry.stage}: outputs left after SIGTERM"

    code, stderr = _run_until_progress(argv, smoke_repo.root, signal.SIGKILL)
    assert code == -signal.SIGKILL

    rerun = subprocess.run(argv, cwd=smoke_repo.root, capture_output=True, text=True)
    assert rerun.returncode == 0, f"{entry.stage}: rerun after SIGKILL failed:\n{rerun.stderr[-3000:]}"
    strays = [p for out in outs.values() for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    assert not strays, f"{entry.stage}: temporaries left after the rerun: {strays}"
    reference = smoke_repo.paths(entry.stage)
    for name, out in outs.items():
        ref = Path(getattr(reference, name))
        if "/reports/" in str(ref) or str(ref).startswith("reports/") or name in {"report", "claim", "plots"}:
            continue  # reports hold wall times
        if paper in NONDETERMINISTIC:
            assert _names(out) == _names(ref)
            continue
        assert _same(out, ref), (f"{entry.stage}: {name} after a kill and a rerun differs from the smoke run's:\n"
                                 f"{_difference(out, ref)}")
