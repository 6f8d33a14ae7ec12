"""What every benchmark records beside its numbers: the machine and how busy it was."""

from __future__ import annotations

import os
import platform
from typing import Any


def machine_info() -> dict[str, object]:
    """CPU count, Python, processor and the 1-minute load average (another job inflates timings)."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.machine(),
            "load_average_1min": round(os.getloadavg()[0], 2)}


def alone_estimate(timing: dict[str, Any]) -> float | None:
    """A step's wall time alone from its timing: CPU seconds over its threads, or the wall time where that is
    lower (CPU seconds beyond wall × threads come from worker processes, which ran side by side).

    Beside other work the wall time grows while the CPU seconds do not, so CPU / threads estimates the time
    alone; a step whose worker processes each run its threads (denots' train: two one-thread processes) does
    more CPU seconds than its threads can in the wall time, and only the wall time bounds it. None for
    timings written before the runner recorded CPU seconds.
    """
    if "cpu_time_s" not in timing or not timing.get("threads"):
        return None
    return min(timing["cpu_time_s"] / timing["threads"], timing["wall_time_s"])
