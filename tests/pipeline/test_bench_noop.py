"""benchmarks/noop.py: medians per command, a workspace that is not fully reproduced is never repro'd, and a
repro that runs a stage is refused (made-up runners, no DVC)."""

from __future__ import annotations

import pytest

from benchmarks.noop import is_clean, markdown, measure, ran_stages


class FakeRunner:
    """Answers each command with a fixed time and output; records what ran."""

    def __init__(self, status: str, repro: str) -> None:
        self.status, self.repro, self.calls = status, repro, []

    def __call__(self, cmd, cwd):
        name = " ".join(cmd[:2]) if cmd[0] == "dvc" else "python"
        self.calls.append(name)
        seconds = {"python": 0.02, "dvc --version": 0.8, "dvc status": 2.0 + 0.1 * len(self.calls),
                   "dvc repro": 6.0}[name]
        return seconds, {"dvc status": self.status, "dvc repro": self.repro}.get(name, "")


def test_a_fully_reproduced_workspace_gets_medians_for_every_command_and_the_target_read_off(tmp_path):
    runner = FakeRunner("Data and pipelines are up to date.\n", "Stage 'a' didn't change, skipping\n")
    r = measure(tmp_path, 3, runner)
    assert r["fully_reproduced"] and runner.calls.count("dvc repro") == 3
    assert r["median_s"]["dvc repro"] == 6.0 and r["median_s"]["python -c pass"] == 0.02
    assert r["median_s"]["dvc status"] == pytest.approx(2.0 + 0.1 * 6)  # calls 3, 6, 9: the middle one
    assert r["within_target"] == {"dvc status": True, "dvc repro": False}
    text = markdown([{"label": "smoke", "stages_in_lock": 4, "files_in_outputs": 9, **r}])
    assert "| smoke | yes | 4 | 9 | `dvc repro` | 6.00 |" in text


def test_a_workspace_with_work_left_is_measured_by_status_only():
    runner = FakeRunner("a-train:\n\tchanged deps:\n\t\tmodified: x\n", "Running stage 'a-train':\n")
    r = measure(__import__("pathlib").Path("."), 2, runner)
    assert not r["fully_reproduced"] and "dvc repro" not in runner.calls and "dvc repro" not in r["median_s"]


def test_a_repro_that_runs_a_stage_is_refused(tmp_path):
    runner = FakeRunner("", "Running stage 'a-train':\n> python -m x\n")
    with pytest.raises(RuntimeError, match="ran a-train; not a no-op"):
        measure(tmp_path, 1, runner)


def test_status_and_repro_output_parsing():
    assert is_clean("") and is_clean("Data and pipelines are up to date.") and not is_clean("a:\n\tchanged outs:")
    assert ran_stages("Running stage 'p-data':\nx\nRunning stage 'p-train':\n") == ["p-data", "p-train"]
