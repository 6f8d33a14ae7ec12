"""benchmarks/dag.py: start-up against work, and the FLOP rate, on hand-made timings."""

from __future__ import annotations

import json

import pytest

from benchmarks.dag import (
    LOW_SHARE_REASONS,
    LOW_SHARE_TARGET,
    ROOT,
    markdown,
    refresh,
    slowest_default_stage,
    startup_table,
    summarise,
)


def _timing(root, paper, step, seconds, profile, **extra):
    path = root / "reports" / paper / "timings" / f"{step}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"paper": paper, "profile": profile, "step": step, "wall_time_s": seconds, **extra}))


def test_startup_is_the_command_time_minus_the_work_and_its_share_uses_the_default_work(tmp_path):
    ws, committed = tmp_path / "ws", tmp_path / "repo"
    _timing(ws, "alpha", "train", 2.0, "smoke")
    _timing(ws, "alpha", "report", 0.5, "smoke")
    _timing(committed, "alpha", "train", 95.0, "default")
    _timing(committed, "alpha", "report", 1.0, "default")
    times = {"alpha-train": {"wall_s": 7.0, "cpu_s": 6.5}, "alpha-report": {"wall_s": 4.5, "cpu_s": 4.0},
             "assets-x": {"wall_s": 3.0, "cpu_s": 3.0}, "claims": {"wall_s": 2.0, "cpu_s": 2.0}}
    rows = {r["stage"]: r for r in startup_table(ws, times, committed)}
    assert set(rows) == {"alpha-train", "alpha-report"}  # assets and the ledger are not a paper's stages
    assert rows["alpha-train"]["startup_s"] == pytest.approx(5.0)
    assert rows["alpha-train"]["default_startup_share"] == pytest.approx(5.0 / 100.0)
    assert rows["alpha-report"]["default_startup_share"] == pytest.approx(4.0 / 5.0)
    result = summarise(list(rows.values()), [{"stage": "alpha-train", "smoke_work_s": 2.0, "flops": 4e9,
                                              "flop_per_s": 2e9}], peak=1e10, threads=1)
    assert result["papers"]["alpha"] == {"stages": 2, "startup_s": 9.0, "default_work_s": 96.0,
                                         "default_startup_share": pytest.approx(9.0 / 105.0, abs=1e-4),
                                         "default_alone_estimate_s": None, "default_stages_as_measured": 2}
    assert result["slowest_stage_flops"][0]["fraction_of_peak"] == pytest.approx(0.2)
    text = markdown(result)
    assert "| alpha | 2 | 9.0 | 96.0 |" in text and "| alpha-train | 2.0 | 4.000 | 2.00 | 0.2 |  |" in text


def test_the_slowest_stage_is_chosen_from_default_timings_only(tmp_path):
    _timing(tmp_path, "alpha", "train", 50.0, "default")
    _timing(tmp_path, "alpha", "evaluate", 80.0, "default")
    _timing(tmp_path, "alpha", "data", 500.0, "smoke")  # a leftover smoke timing never counts
    assert slowest_default_stage("alpha", tmp_path) == "alpha-evaluate"
    assert slowest_default_stage("beta", tmp_path) is None


def test_the_estimate_alone_is_cpu_seconds_over_threads_and_a_stage_without_them_counts_as_measured(tmp_path):
    ws, committed = tmp_path / "ws", tmp_path / "repo"
    for paper in ("alpha", "beta"):
        _timing(ws, paper, "train", 2.0, "smoke")
        _timing(ws, paper, "report", 0.5, "smoke")
    _timing(committed, "alpha", "train", 300.0, "default", cpu_time_s=400.0, threads=2)
    _timing(committed, "alpha", "report", 2.0, "default", cpu_time_s=1.5, threads=1)
    _timing(committed, "beta", "train", 300.0, "default", cpu_time_s=400.0, threads=2)
    _timing(committed, "beta", "report", 2.0, "default")  # written before CPU seconds were recorded
    times = {f"{p}-{s}": {"wall_s": 3.0, "cpu_s": 3.0} for p in ("alpha", "beta") for s in ("train", "report")}
    rows = startup_table(ws, times, committed)
    result = summarise(rows, [], peak=1e10, threads=1)
    assert result["papers"]["alpha"]["default_alone_estimate_s"] == pytest.approx(200.0 + 1.5)
    # beta's report timing predates CPU seconds: that stage counts as measured, its train as estimated
    assert result["papers"]["beta"]["default_alone_estimate_s"] == pytest.approx(200.0 + 2.0)
    assert result["papers"]["beta"]["default_stages_as_measured"] == 1
    assert result["default_work_total_s"] == pytest.approx(604.0)
    assert result["default_alone_total_s"] == pytest.approx(201.5 + 202.0)
    assert result["papers_estimated_alone"] == ["alpha"]
    text = markdown(result)
    assert "Estimated alone: 0.11 h (target 4 h), 1 of 2 papers from timings with CPU seconds" in text
    assert "| alpha | 2 |" in text and "| 201.5 |" in text and "| beta | 2 |" in text
    assert "| 202.0 (1 of 2 stages as measured) |" in text


def test_a_stage_whose_flop_run_fails_is_a_row_with_its_error(tmp_path, monkeypatch):
    import benchmarks.dag as bench

    def boom(stage, workspace):
        raise FileNotFoundError("no such input: data/x.parquet")

    monkeypatch.setattr(bench, "flops_of", boom)
    row = bench.flops_or_error("alpha-train", tmp_path)
    assert row["flop_per_s"] is None and row["error"] == "FileNotFoundError: no such input: data/x.parquet"
    result = summarise([], [row], peak=1e10, threads=1)
    assert "| alpha-train | - | - | - | failed: FileNotFoundError: no such input: data/x.parquet |" in markdown(result)


def test_a_stage_below_the_share_target_without_a_reason_is_marked_in_the_table(tmp_path):
    result = summarise([], [{"stage": "alpha-train", "smoke_work_s": 1.0, "flops": 1e8, "flop_per_s": 1e8},
                            {"stage": "denots-train", "smoke_work_s": 1.0, "flops": 1e8, "flop_per_s": 1e8}],
                       peak=1e10, threads=1)
    text = markdown(result)
    assert "| alpha-train | 1.0 | 0.100 | 0.10 | 0.01 | NOT STATED |" in text
    assert f"| {LOW_SHARE_REASONS['denots-train']} |" in text


def test_every_committed_slowest_stage_below_the_target_has_a_stated_reason():
    committed = json.loads((ROOT / "reports" / "bench" / "dag.json").read_text())
    low = [f["stage"] for f in committed["slowest_stage_flops"]
           if f.get("fraction_of_peak") is not None and f["fraction_of_peak"] < LOW_SHARE_TARGET]
    assert low, "the committed table has stages below the target; this check would be empty otherwise"
    assert [s for s in low if s not in LOW_SHARE_REASONS] == []


def test_refresh_rereads_the_committed_timings_and_keeps_the_smoke_rerun(tmp_path):
    ws, committed = tmp_path / "ws", tmp_path / "repo"
    _timing(ws, "alpha", "train", 2.0, "smoke")
    _timing(committed, "alpha", "train", 300.0, "default", cpu_time_s=400.0, threads=2, load_average_1min=4.0)
    rows = startup_table(ws, {"alpha-train": {"wall_s": 3.0, "cpu_s": 3.0}}, committed)
    flops = [{"stage": "alpha-train", "smoke_work_s": 2.0, "flops": 4e9, "flop_per_s": 2e9}]
    before = summarise(rows, flops, peak=1e10, threads=1)
    assert before["default_alone_total_s"] == pytest.approx(200.0)
    # a default rerun alone: half the wall time, the machine the run's own
    _timing(committed, "alpha", "train", 150.0, "default", cpu_time_s=290.0, threads=2, load_average_1min=1.9)
    after = refresh(json.loads(json.dumps(before)), committed)
    assert after["default_work_total_s"] == pytest.approx(150.0)
    assert after["default_alone_total_s"] == pytest.approx(150.0)
    assert after["stages"][0]["startup_s"] == pytest.approx(1.0) and after["machine"] == before["machine"]
    assert after["slowest_stage_flops"][0]["fraction_of_peak"] == pytest.approx(0.2)
