"""benchmarks/contention.py: medians, slowdowns beside busy work and the cost alone against libgomp's default."""

import pytest

from benchmarks.contention import markdown, summarise

BASE = "default spin (libgomp)"


def _runs(idle: list[float], busy: list[float]) -> dict[str, list[dict[str, float]]]:
    return {"idle": [{"purrception_step_ms": x} for x in idle], "busy": [{"purrception_step_ms": x} for x in busy]}


def test_slowdown_is_the_ratio_of_medians_and_cost_alone_is_against_the_default():
    runs = {BASE: _runs([10, 12, 11], [40, 100, 44]), "passive": _runs([20, 22, 21], [30, 35, 33])}
    s = summarise(runs)
    base, passive = s[BASE]["purrception_step_ms"], s["passive"]["purrception_step_ms"]
    assert base["idle"] == 11 and base["busy"] == 44 and base["slowdown"] == pytest.approx(4.0)
    assert base["idle_vs_default"] == 1.0
    assert passive["slowdown"] == pytest.approx(33 / 21) and passive["idle_vs_default"] == pytest.approx(21 / 11)
    assert passive["busy_all"] == [30, 35, 33]  # every run kept: a bimodal slowdown shows in the table
    assert "matmul64_us" not in s[BASE]  # a measure the probes did not return is left out, not zero


def test_markdown_has_one_row_per_setting_and_measure():
    runs = {BASE: _runs([10, 10, 10], [20, 20, 20]), "passive": _runs([10, 10, 10], [15, 15, 15])}
    md = markdown(summarise(runs), {"load_average_1min": 0.5}, n_busy=2, repeats=3)
    rows = [line for line in md.splitlines() if line.startswith("| ") and "purrception" in line]
    assert len(rows) == 2 and "2.0×" in rows[0] and "1.5×" in rows[1]


def test_a_busy_process_exits_once_its_parent_is_gone():
    # a killed benchmark must not leave processes spinning on the cores (they would skew every later measurement)
    import subprocess
    import sys
    import time
    from pathlib import Path

    from benchmarks.contention import BUSY

    def running(pid: int) -> bool:
        stat = Path(f"/proc/{pid}/stat")
        return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"

    code = (f"import os, subprocess, sys; p = subprocess.Popen([sys.executable, '-c', {BUSY!r}, str(os.getpid())], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)")
    pid = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    try:
        deadline = time.monotonic() + 20
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not running(pid)
    finally:  # if it failed, the spinning process must not outlive the test either
        import os
        import signal

        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
