"""Shared by the paper tests of steps whose runs go over ``stages.core.workers.map_runs``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from stages.core.workers import map_runs


def in_one_and_two_processes(fn: Callable[[Any, Any], Any], jobs: Sequence[Any], shared: Any) -> tuple[list, list]:
    """The same jobs run in this process and over two worker processes; this process's torch threads restored."""
    before = torch.get_num_threads()
    try:
        one = map_runs(fn, jobs, shared, threads=1, max_threads=1, desc="in process")
        two = map_runs(fn, jobs, shared, threads=2, max_threads=1, desc="two workers")
    finally:
        torch.set_num_threads(before)
    return one, two
