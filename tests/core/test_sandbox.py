"""The sandbox for generated programs: each limit ends a run that passes it, with its outcome named."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from stages.core.sandbox import Limits, group_cpu_seconds, run_limited

PY = sys.executable


def test_a_normal_program_runs_with_its_output_and_stdin() -> None:
    done = run_limited([PY, "-c", "import sys; print(sys.stdin.read().upper()); print('warn', file=sys.stderr)"],
                       Limits(wall_s=20), stdin="hello")
    assert done.ok and done.returncode == 0
    assert done.stdout.strip() == "HELLO" and done.stderr.strip() == "warn"


def test_a_failing_program_is_an_error_with_its_exit_code() -> None:
    done = run_limited([PY, "-c", "raise SystemExit(3)"], Limits(wall_s=20))
    assert done.outcome == "error" and done.returncode == 3


def test_a_program_that_loops_forever_is_stopped_at_the_wall_limit() -> None:
    start = time.monotonic()
    done = run_limited([PY, "-c", "while True: pass"], Limits(wall_s=1.0, cpu_s=60))
    assert done.outcome == "timeout" and done.returncode != 0
    assert time.monotonic() - start < 30  # stopped, not run to the CPU limit


def test_the_cpu_limit_ends_a_busy_program() -> None:
    done = run_limited([PY, "-c", "while True: pass"], Limits(wall_s=60, cpu_s=1))
    assert done.outcome == "cpu"


def test_unbounded_allocation_is_stopped_by_the_watchdog() -> None:
    grow = "x = []\nwhile True: x.append(bytearray(20 * 2**20))"
    done = run_limited([PY, "-c", grow], Limits(wall_s=60, memory_mb=300))
    assert done.outcome == "memory"
    assert done.peak_rss_mb > 200


def test_unbounded_allocation_meets_the_address_space_limit() -> None:
    grow = "x = []\nwhile True: x.append(bytearray(20 * 2**20))"
    done = run_limited([PY, "-c", grow], Limits(wall_s=60, memory_mb=400, address_space=True))
    assert done.outcome == "memory"


def test_endless_output_is_capped() -> None:
    done = run_limited([PY, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                       Limits(wall_s=60, output_mb=1))
    assert done.outcome == "output"
    assert len(done.stdout) <= 2**20


def test_processes_the_program_spawned_die_with_it() -> None:
    spawn = ("import subprocess, sys, time\n"
             "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
             "print(child.pid, flush=True)\n"
             "while True: time.sleep(0.1)")
    done = run_limited([PY, "-c", spawn], Limits(wall_s=2.0))
    assert done.outcome == "timeout"
    child = int(done.stdout.split()[0])
    deadline = time.monotonic() + 5
    while psutil.pid_exists(child) and psutil.Process(child).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the grandchild outlived the sandboxed run"
        time.sleep(0.05)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Limits(wall_s=0)
    with pytest.raises(ValueError, match="positive"):
        Limits(memory_mb=-1)


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH (TLC needs it)")
def test_the_jvm_runs_under_the_watchdog_and_is_stopped_when_it_grows(tmp_path: Path) -> None:
    """The JVM (TLC's runtime) needs no address-space limit; the RSS watchdog stops it."""
    source = tmp_path / "Grow.java"
    source.write_text("public class Grow { public static void main(String[] a) {"
                      " java.util.List<long[]> x = new java.util.ArrayList<>();"
                      " System.out.println(\"started\"); System.out.flush();"
                      " while (true) x.add(new long[1 << 20]); } }")
    done = run_limited(["java", "-Xmx4g", str(source)], Limits(wall_s=120, memory_mb=400), cwd=tmp_path)
    assert done.outcome == "memory", done.describe() + done.stderr[-500:]
    assert "started" in done.stdout


def test_cpu_time_counts_the_whole_process_group():
    """CPU seconds of a child that has exited (pytensor's compiler is one) stay charged to its parent's group."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0:\n    pass"
    live = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                             f"subprocess.run([sys.executable, '-c', {burn!r}])\nprint('done', flush=True)\n"
                             "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None and live.stdout.readline().strip() == "done"  # the child has exited
        used = group_cpu_seconds(psutil.Process(live.pid))
        assert 1.0 <= used < 5.0
    finally:
        live.kill()
        live.wait()
