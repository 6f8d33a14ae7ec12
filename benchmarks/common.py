"""What every benchmark records beside its numbers: the machine and how busy it was."""

from __future__ import annotations

import os
import platform


def machine_info() -> dict[str, object]:
    """CPU count, Python, processor and the 1-minute load average (another job inflates timings)."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.machine(),
            "load_average_1min": round(os.getloadavg()[0], 2)}
