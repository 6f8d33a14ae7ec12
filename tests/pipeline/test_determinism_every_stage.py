"""Determinism, stage by stage: every paper stage run again on the shared smoke run's inputs (same
params, same machine) writes byte-identical tables, models, plots and metrics.

Generated for every stage of every paper from dvc.yaml's source tables (no per-paper test code).
Each stage runs as its own process with the command dvc.yaml would run, its outputs redirected to a
temporary folder, and is compared with the shared run's outputs. Per stage rather than a second
run of the DAG: if every stage is deterministic given its inputs, so is the DAG (by induction over
its order), and a difference names the stage that made it; the checks are independent tests, so
the two pytest-xdist workers share them instead of one worker running a whole second DAG.

The stage each paper's kill probe reruns (its longest stage with a progress bar) is compared there,
after a SIGKILL and a rerun, against the same shared outputs; it is skipped here, not run a third
time. The assets are inputs, not results, and are not rerun. Outputs that hold wall times (the
report's text, claim.json, the timing) are not compared.
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest

from stages import dag
from stages.core.config import load_global
from tests.smoke import SmokeRepo, network_free_prefix
from tests.stage_rerun import (
    NONDETERMINISTIC,
    ROOT,
    TIMED_OUTPUTS,
    difference,
    longest_stage,
    names,
    same,
    stage_command,
)

STAGES = [entry.stage for paper in load_global(ROOT / "params.yaml").papers for entry in dag.steps(paper)]


@pytest.mark.parametrize("stage", STAGES)
def test_stage_rerun_reproduces_its_outputs_bit_for_bit(smoke_repo: SmokeRepo, stage: str, tmp_path: Path) -> None:
    entry = smoke_repo.step(stage)
    if longest_stage(smoke_repo, entry.paper).stage == stage:
        pytest.skip(f"{stage} is {entry.paper}'s kill-probe stage: its rerun is compared in test_kill_every_paper")
    argv, outs = stage_command(smoke_repo, entry, tmp_path)
    proc = subprocess.run([*network_free_prefix(), *argv], cwd=smoke_repo.root, capture_output=True, text=True)
    assert proc.returncode == 0, f"{stage}: rerun failed:\n{proc.stderr[-3000:]}"
    reference = smoke_repo.paths(stage)
    compared = {name: out for name, out in outs.items() if name not in TIMED_OUTPUTS}
    assert compared, f"{stage}: no output to compare"
    differ = {name: difference(out, Path(getattr(reference, name)))
              for name, out in compared.items() if not same(out, Path(getattr(reference, name)))}
    if entry.paper in NONDETERMINISTIC:
        assert all(names(out) == names(Path(getattr(reference, name))) for name, out in compared.items())
        if differ:
            warnings.warn(f"{stage}: known nondeterministic outputs differ ({NONDETERMINISTIC[entry.paper]}): "
                          f"{sorted(differ)}", stacklevel=1)
        return
    assert not differ, f"{stage}: outputs differ between two runs on the same inputs:\n" + "\n".join(
        f"{name}: {text}" for name, text in differ.items())
