"""The CI mechanism with a local DVC remote: a fresh clone reruns only what a param change touched."""

from __future__ import annotations

import re
from pathlib import Path

from tests.flows.conftest import BIN, git, make_fixture_repo, run, set_params, stale

DVC = str(BIN / "dvc")


def _ran(out: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", out))


def _skipped(out: str) -> set[str]:
    return set(re.findall(r"Stage '([^']+)' didn't change, skipping", out))


def test_fresh_clone_pulls_and_reruns_only_the_changed_paper(tmp_path: Path):
    origin = make_fixture_repo(tmp_path / "a")
    set_params(origin, alpha={"sleep": 0}, beta={"sleep": 0})
    run([DVC, "remote", "add", "-d", "ci", str(tmp_path / "remote")], origin)
    first = run([DVC, "repro"], origin).stdout
    assert len(_ran(first)) == 8
    run([DVC, "push"], origin)
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "results")

    clone = tmp_path / "b"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    assert not (clone / "data/base.txt").exists()
    run([DVC, "pull"], clone)
    assert (clone / "data/beta/train_2.txt").read_text() == "beta-train n=1\n"
    assert stale(clone) == set()

    set_params(clone, beta={"n": 2})
    assert stale(clone) == {"beta-data", "beta-train@1", "beta-train@2", "beta-report"}
    out = run([DVC, "repro"], clone).stdout
    assert _ran(out) == {"beta-data", "beta-train@1", "beta-train@2", "beta-report", "claims"}
    assert _skipped(out) == {"assets-base", "alpha-data", "alpha-report"}
    assert stale(clone) == set()
    run([DVC, "push"], clone)
    diff = run([DVC, "params", "diff", "--md"], clone).stdout
    assert "beta.n" in diff


def test_workflow_restores_reruns_pushes_and_reports_diffs():
    workflow = (Path(__file__).resolve().parents[2] / ".github/workflows/reproduce.yml").read_text()
    steps = ["run: dvc pull", "run: dvc repro", "run: dvc push", "dvc params diff origin/main --md",
             "dvc metrics diff origin/main --md", "GITHUB_STEP_SUMMARY"]
    positions = [workflow.index(step) for step in steps]
    assert positions == sorted(positions)
