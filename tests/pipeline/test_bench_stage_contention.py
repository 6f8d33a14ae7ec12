"""benchmarks/stage_contention.py: per-stage slowdowns, the cost alone against libgomp's default, target counts."""

import pytest

from benchmarks.stage_contention import BASE, ROOT, markdown, setting_order, summarise, time_stage

SPIN = "GOMP_SPINCOUNT=10000"


def _cond(idle: list[float], busy: list[float]) -> dict[str, list[float]]:
    return {"idle": idle, "busy": busy}


def test_slowdowns_costs_and_targets_by_hand():
    runs = {"a-train": {BASE: _cond([10, 12, 11], [40, 100, 44]), SPIN: _cond([11.0], [25.0])},
            "b-eval": {BASE: _cond([2.0], [5.0]), SPIN: _cond([2.4], [4.0])},
            "c-tiny": {BASE: _cond([0.2], [2.0]), SPIN: _cond([0.2], [0.5])}}
    s = summarise(runs)
    a = s["stages"]["a-train"]
    assert a[BASE]["idle"] == 11 and a[BASE]["busy"] == 44 and a[BASE]["slowdown"] == pytest.approx(4.0)
    assert a[BASE]["idle_vs_default"] == 1.0 and a[BASE]["busy_all"] == [40, 100, 44]
    assert a[SPIN]["slowdown"] == pytest.approx(25 / 11) and a[SPIN]["idle_vs_default"] == pytest.approx(1.0)
    assert s["stages"]["b-eval"][SPIN]["idle_vs_default"] == pytest.approx(1.2)
    assert not s["stages"]["c-tiny"][SPIN]["counted"]  # 0.2 s alone: listed, not counted
    base, spin = s["settings"][BASE], s["settings"][SPIN]
    assert base["stages"] == spin["stages"] == 2
    assert base["within_slowdown_target"] == 1 and base["max_slowdown"] == pytest.approx(4.0)  # 4.0× and 2.5×
    assert spin["within_slowdown_target"] == 2  # 2.27× and 1.67×
    assert spin["within_idle_target"] == 1  # 1.0 holds, 1.2 loses 20% alone
    assert spin["total_idle_s"] == pytest.approx(13.4) and spin["total_busy_s"] == pytest.approx(29.0)


def test_markdown_has_a_summary_row_per_setting_and_a_row_per_stage_setting_and_error():
    runs = {"a-train": {BASE: _cond([10.0], [40.0]), SPIN: _cond([10.0], [20.0])}}
    md = markdown(summarise(runs), {"load_average_1min": 0.3}, 2, 1, {"b-eval": "InputError: missing"})
    lines = md.splitlines()
    assert sum(line.startswith(f"| {BASE} |") for line in lines) == 1
    assert sum(line.startswith("| a-train |") for line in lines) == 2
    assert any("4.0×" in line for line in lines) and any("2.0×" in line for line in lines)
    assert any(line.startswith("| b-eval | - | error | InputError: missing") for line in lines)


def test_a_stage_that_fails_raises_with_its_last_error_line():
    with pytest.raises(RuntimeError, match="no step makes stage 'nopaper-nostep'"):
        time_stage("nopaper-nostep", ROOT, {})


def test_the_threads_override_is_a_params_file_beside_the_workspaces_own(tmp_path):
    import yaml

    from benchmarks.stage_contention import params_with_threads

    (tmp_path / "params.yaml").write_text("seed: 0\nprofile: smoke\nthreads: 1\npapers: [a, b]\n")
    path = params_with_threads(tmp_path, 2)
    assert path.parent == tmp_path and path.name != "params.yaml"  # params/<paper>.yaml resolve from the root
    assert yaml.safe_load(path.read_text()) == {"seed": 0, "profile": "smoke", "threads": 2, "papers": ["a", "b"]}
    assert yaml.safe_load((tmp_path / "params.yaml").read_text())["threads"] == 1  # the workspace's own untouched


def test_a_stage_capped_at_one_thread_or_too_short_is_not_counted_for_any_setting():
    # one OpenMP thread waits for no peer, so a "cost" measured there is drift, not the setting's
    runs = {"capped": {BASE: _cond([10.0, 10.0], [20.0]), SPIN: _cond([11.5, 11.5], [20.0])},
            "short": {BASE: _cond([0.9], [2.0]), SPIN: _cond([1.1], [2.0])},
            "real": {BASE: _cond([10.0], [40.0]), SPIN: _cond([10.5], [25.0])}}
    s = summarise(runs, {"capped": 1, "short": 2, "real": 2})
    assert set(s["not_counted"]) == {"capped", "short"} and "1 thread" in s["not_counted"]["capped"]
    assert s["settings"][BASE]["stages"] == s["settings"][SPIN]["stages"] == 1  # the same stages in every row
    assert s["settings"][SPIN]["median_idle_vs_default"] == pytest.approx(1.05)
    assert "Not counted: capped (runs at 1 thread" in markdown(s, {"load_average_1min": 0.1}, 2, 1, {})


def test_the_settings_alternate_between_repeats():
    assert setting_order(0) == [BASE, SPIN] and setting_order(1) == [SPIN, BASE] and setting_order(2) == [BASE, SPIN]
