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

import re
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from stages.core.config import load_global
from tests.smoke import SmokeRepo
from tests.stage_rerun import NONDETERMINISTIC, ROOT, difference, longest_stage, names, same, stage_command

PAPERS = load_global(ROOT / "params.yaml").papers
PROGRESS = re.compile(r"\|\s*\d+/\d+ \[")  # a tqdm bar: "desc:  40%|####      | 2/5 [00:01<..."
MARKER_TIMEOUT_S = 900


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


@pytest.mark.parametrize("paper", PAPERS)
def test_longest_stage_survives_kills(smoke_repo: SmokeRepo, paper: str, tmp_path: Path) -> None:
    entry = longest_stage(smoke_repo, paper)
    argv, outs = stage_command(smoke_repo, entry, tmp_path)

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
            assert names(out) == names(ref)
            continue
        assert same(out, ref), (f"{entry.stage}: {name} after a kill and a rerun differs from the smoke run's:\n"
                                 f"{difference(out, ref)}")
