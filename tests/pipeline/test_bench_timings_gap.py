"""benchmarks/timings_gap.py: a rerun's stage timings against the committed ones."""

import json
import subprocess

import pytest

from benchmarks.common import LOAD_MARGIN, alone_estimate
from benchmarks.timings_gap import gap_rows, markdown


def _timing(path, **fields):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fields))


def _repo(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    t = tmp_path / "reports" / "p" / "timings"
    _timing(t / "train.json", paper="p", profile="default", step="train", wall_time_s=100.0, cpu_time_s=180.0,
            threads=2, load_average_1min=3.0)
    _timing(t / "data.json", paper="p", profile="default", step="data", wall_time_s=5.0)
    _timing(t / "eval.json", paper="p", profile="default", step="eval", wall_time_s=7.0)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-qm",
                    "c"], cwd=tmp_path, check=True)
    return t


def test_only_changed_timings_are_rows_with_ratios_of_wall_and_cpu(tmp_path):
    t = _repo(tmp_path)
    assert gap_rows(tmp_path) == []  # nothing rerun: no row
    _timing(t / "train.json", paper="p", profile="default", step="train", wall_time_s=300.0, cpu_time_s=200.0,
            threads=2, load_average_1min=4.5)
    _timing(t / "data.json", paper="p", profile="smoke", step="data", wall_time_s=0.5)
    rows = {r["stage"]: r for r in gap_rows(tmp_path)}
    assert set(rows) == {"p-train", "p-data"}  # eval unchanged
    train = rows["p-train"]
    assert train["comparable"] and train["wall_ratio"] == pytest.approx(3.0)
    assert train["cpu_ratio"] == pytest.approx(200 / 180) and train["alone_estimate_s"] == pytest.approx(100.0)
    assert train["committed_alone_estimate_s"] == pytest.approx(90.0)
    assert not rows["p-data"]["comparable"]  # a smoke timing is not compared with a default one
    md = markdown(list(rows.values()), "HEAD")
    assert "| p-train | default | 100.0 | 300.0 | 3.00 |" in md and "p-data (smoke)" in md
    assert md.splitlines()[-3].endswith("| 90.0 | 100.0 |")  # committed and current estimates alone side by side


def test_a_timing_without_cpu_fields_compares_wall_only(tmp_path):
    t = _repo(tmp_path)
    _timing(t / "eval.json", paper="p", profile="default", step="eval", wall_time_s=25.0, cpu_time_s=20.0,
            threads=1, load_average_1min=0.5)
    (row,) = gap_rows(tmp_path)
    assert row["wall_ratio"] == pytest.approx(25.0 / 7.0) and row["cpu_ratio"] is None
    # an idle machine (load 0.5 at one thread): the wall time is the time alone, whatever the CPU seconds
    assert row["committed_alone_estimate_s"] is None and row["alone_estimate_s"] == pytest.approx(25.0)


def test_worker_processes_bound_the_estimate_alone_by_the_wall_time():
    """CPU seconds beyond wall × threads were done by processes side by side: CPU / threads would double the
    time of denots' train (two one-thread processes), so the wall time bounds it."""
    workers = {"wall_time_s": 1467.0, "cpu_time_s": 2768.0, "threads": 1}
    assert alone_estimate(workers) == pytest.approx(1467.0)
    shared = {"wall_time_s": 600.0, "cpu_time_s": 500.0, "threads": 2}  # beside other work: CPU / threads
    assert alone_estimate(shared) == pytest.approx(250.0)
    assert alone_estimate({"wall_time_s": 5.0}) is None and alone_estimate({**shared, "threads": 0}) is None


def test_a_run_with_the_machine_to_itself_is_its_own_estimate_alone():
    """CPU / threads assumes every thread stayed busy: a step that recorded 2 threads but used one core (CPU ≈
    wall) at load 1.0 would be halved. Where the load at the end was at most threads + margin, the wall time
    counts; above it (other work beside the step), CPU / threads does."""
    one_core = {"wall_time_s": 1016.0, "cpu_time_s": 1005.0, "threads": 2, "load_average_1min": 1.0}
    assert alone_estimate(one_core) == pytest.approx(1016.0)
    uneven = {"wall_time_s": 909.0, "cpu_time_s": 1488.0, "threads": 2, "load_average_1min": 1.53}
    assert alone_estimate(uneven) == pytest.approx(909.0)
    busy = {**one_core, "load_average_1min": 2.0 + LOAD_MARGIN + 0.01}
    assert alone_estimate(busy) == pytest.approx(1005.0 / 2)


def test_other_work_over_the_whole_run_decides_whether_the_machine_was_the_steps():
    """Since timings record ``other_cpu_s`` and ``processes``: other work averaging at most a quarter core over the
    run leaves the wall time as the estimate; more, and CPU seconds over threads × processes count (a step capped at
    one thread over two workers records threads 1, and CPU / 1 would double it)."""
    quiet = {"wall_time_s": 1777.0, "cpu_time_s": 1211.0, "threads": 1, "processes": 1, "load_average_1min": 4.0,
             "other_cpu_s": 0.2 * 1777.0}
    assert alone_estimate(quiet) == pytest.approx(1777.0)  # the load at the end alone would have said busy
    loaded = {**quiet, "other_cpu_s": 2.0 * 1777.0, "load_average_1min": 1.0}
    assert alone_estimate(loaded) == pytest.approx(1211.0)  # busy all along, quiet at the end
    workers = {"wall_time_s": 497.0, "cpu_time_s": 967.0, "threads": 1, "processes": 2, "other_cpu_s": 400.0}
    assert alone_estimate(workers) == pytest.approx(483.5)


def test_a_revision_that_is_not_a_commit_is_refused(tmp_path):
    _repo(tmp_path)
    with pytest.raises(ValueError, match="not a commit"):
        gap_rows(tmp_path, "no-such-rev")
