"""Run a generated program or an external tool in a subprocess with time, memory and output limits.

Probabilistic programs a model wrote, TLA+ specs checked by TLC, anything not written here: never
in-process. :func:`run_limited` starts the command in a new session (its own process group), so
that every process it spawns is killed with it, and enforces

- a wall-clock limit (the whole group is SIGKILLed when it passes),
- a memory limit on the resident set of the whole group (a watchdog polls it; ``address_space=True``
  also sets RLIMIT_AS, which a Python program meets as a ``MemoryError``; leave it off for the JVM,
  which reserves far more address space than it uses, and pass ``-Xmx`` instead),
- a CPU-time limit (RLIMIT_CPU) and an output limit (stdout and stderr go to files capped by
  RLIMIT_FSIZE, so a program that prints forever cannot fill the disk or this process's memory).

The outcome says which limit ended the run: ``ok``, ``error`` (non-zero exit), ``timeout``,
``memory``, ``output``, ``cpu``.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import psutil

Outcome = Literal["ok", "error", "timeout", "memory", "output", "cpu"]
MIB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Limits:
    """What a sandboxed run may use."""

    wall_s: float = 30.0
    memory_mb: int = 1024
    cpu_s: int | None = None  # default: the wall limit, rounded up
    output_mb: int = 16
    address_space: bool = False  # RLIMIT_AS too (fine for Python/C programs, not for the JVM)
    poll_s: float = 0.02

    def __post_init__(self) -> None:
        if not self.wall_s > 0 or self.memory_mb <= 0 or self.output_mb <= 0 or self.poll_s <= 0:
            raise ValueError(f"sandbox limits must be positive: {self}")


@dataclasses.dataclass(frozen=True)
class Completed:
    """A finished sandboxed run."""

    cmd: tuple[str, ...]
    outcome: Outcome
    returncode: int
    stdout: str
    stderr: str
    wall_time_s: float
    peak_rss_mb: float

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def describe(self) -> str:
        """One line for a log or a report."""
        return (f"{self.outcome} (exit {self.returncode}, {self.wall_time_s:.2f} s, "
                f"peak {self.peak_rss_mb:.0f} MiB): {' '.join(self.cmd)[:120]}")


def _limit_child(limits: Limits) -> None:
    """In the child, before exec: the rlimits (a crash here is reported by Popen)."""
    cpu = limits.cpu_s if limits.cpu_s is not None else int(limits.wall_s) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    out = limits.output_mb * MIB
    resource.setrlimit(resource.RLIMIT_FSIZE, (out, out))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.address_space:
        mem = limits.memory_mb * MIB
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))


def group_rss(proc: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (0 once they are gone)."""
    total = 0
    try:
        members = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def group_cpu_seconds(proc: psutil.Process) -> float:
    """CPU seconds (user + system) of a process and its descendants, the ones that exited included
    (a waited-for child's time is in its parent's ``children_*``); a member that is gone adds nothing."""
    try:
        members = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for member in members:
        try:
            t = member.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def kill_group(pid: int) -> None:
    """SIGKILL every process of the group ``pid`` leads (nothing if it is gone)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def run_limited(cmd: Sequence[str], limits: Limits = Limits(), *, cwd: Path | str | None = None,
                stdin: str | None = None, env: Mapping[str, str] | None = None) -> Completed:
    """Run ``cmd`` under ``limits`` and return how it ended; never raises for the program's failure."""
    cmd = tuple(str(c) for c in cmd)
    with tempfile.TemporaryDirectory(prefix="sandbox-") as tmp:
        out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.monotonic()
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=None if env is None else dict(env), stdout=out, stderr=err,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                start_new_session=True, preexec_fn=lambda: _limit_child(limits),
            )
            if stdin is not None:
                threading.Thread(target=_feed, args=(proc, stdin), daemon=True).start()
            watched = psutil.Process(proc.pid)
            peak, reason = 0, None
            while proc.poll() is None:
                rss = group_rss(watched)
                peak = max(peak, rss)
                if rss > limits.memory_mb * MIB:
                    reason = "memory"
                elif time.monotonic() - start > limits.wall_s:
                    reason = "timeout"
                if reason:
                    kill_group(proc.pid)
                    break
                time.sleep(limits.poll_s)
            returncode = proc.wait()
            kill_group(proc.pid)  # whatever the program left running in its group
            wall = time.monotonic() - start
        capped = max(out_path.stat().st_size, err_path.stat().st_size) >= limits.output_mb * MIB
        stdout, stderr = _read(out_path), _read(err_path)
    outcome: Outcome
    if reason is not None:
        outcome = reason  # type: ignore[assignment]
    elif returncode == 0:
        outcome = "ok"
    elif returncode == -signal.SIGXFSZ or (returncode != 0 and capped):
        outcome = "output"  # killed by SIGXFSZ, or (Python ignores it) failed writing past the cap
    elif returncode == -signal.SIGXCPU:
        outcome = "cpu"
    elif limits.address_space and "MemoryError" in stderr[-2000:]:
        outcome = "memory"
    else:
        outcome = "error"
    return Completed(cmd, outcome, returncode, stdout, stderr, round(wall, 3), round(peak / MIB, 1))


def _feed(proc: subprocess.Popen[bytes], text: str) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode())
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
