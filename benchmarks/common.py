"""What every benchmark records beside its numbers: the machine and how busy it was."""

from __future__ import annotations

import os
import platform
from typing import Any


def machine_info() -> dict[str, object]:
    """CPU count, Python, processor and the 1-minute load average (another job inflates timings)."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.machine(),
            "load_average_1min": round(os.getloadavg()[0], 2)}


# a run whose machine load at the end was at most its own threads plus this had no other work beside it
LOAD_MARGIN = 0.5
# a run beside other work that averaged at most this many busy cores over it had the machine to itself
OTHER_CORES_MARGIN = 0.25


def alone_estimate(timing: dict[str, Any]) -> float | None:
    """A step's wall time alone from its timing: the wall time itself where the machine had no other work,
    else CPU seconds over the cores the step could use, bounded by the wall time. None for timings written
    before the runner recorded CPU seconds.

    Beside other work the wall time grows while the CPU seconds do not, so CPU / cores estimates the time
    alone. That assumes the step kept those cores busy, which is false for a step whose torch work runs at
    fewer threads than recorded (mvcustom's pretrain: 2 recorded, 1 used) or whose worker processes finish
    unevenly (the last of nine runs over two processes runs alone): where the machine was the step's, its
    wall time is the measure. Timings since the runner records ``other_cpu_s`` (the busy CPU seconds of
    other work over the whole run) and ``processes`` decide that by the other work's average busy cores
    (at most ``OTHER_CORES_MARGIN``), and the step's cores are threads × processes. Older timings decide it
    by the 1-minute load at the end (at most ``threads + LOAD_MARGIN``), which misses other work that ended
    before the step did, and count threads only: CPU seconds beyond wall × threads come from worker
    processes (denots' train: two one-thread processes with ``threads`` 1), and only the wall time bounds those.
    """
    if "cpu_time_s" not in timing or not timing.get("threads"):
        return None
    wall, cpu = float(timing["wall_time_s"]), float(timing["cpu_time_s"])
    if "other_cpu_s" in timing:
        if wall <= 0 or timing["other_cpu_s"] / wall <= OTHER_CORES_MARGIN:
            return wall
        return min(cpu / (timing["threads"] * timing.get("processes", 1)), wall)
    load = timing.get("load_average_1min")
    if load is not None and load <= timing["threads"] + LOAD_MARGIN:
        return wall
    return min(cpu / timing["threads"], wall)
