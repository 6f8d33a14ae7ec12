"""Independent seeded runs over worker processes (one mechanism for every paper).

A step whose runs (model × seed, data set × seed) are independent and whose torch work is capped at
``max_threads`` intra-op threads (stages/core/threads.py) would leave the rest of the step's global
``threads`` idle. ``map_runs`` spreads the runs over ``threads // max_threads`` spawned processes,
each capped at ``max_threads``. Every run seeds itself from its own job, so its result does not
depend on the number of processes or on which process ran it; results come back in job order.
With one process the runs go in this process, capped the same way.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from tqdm import tqdm

from stages.core.threads import cap_threads

J = TypeVar("J")
R = TypeVar("R")

_WORKER: dict[str, Any] = {}
# the most worker processes any map_runs call of this step started (the stage runner records it in the timing)
PEAK_PROCESSES = 1


def n_workers(threads: int, max_threads: int, n_jobs: int | None = None) -> int:
    """Processes for a step: its global thread budget over the per-process cap, at most one per job."""
    n = max(1, threads // max_threads)
    return n if n_jobs is None else max(1, min(n, n_jobs))


def in_worker() -> bool:
    """True inside a ``map_runs`` worker: a run keeps its own progress bar off there (the step's bar counts runs)."""
    return bool(_WORKER)


def _init(fn: Callable[[Any, Any], Any], shared: Any, max_threads: int) -> None:
    """Per worker: its torch thread cap, the run function and the data every run shares."""
    cap_threads(max_threads)
    _WORKER.update(fn=fn, shared=shared)


def _call(job: Any) -> Any:
    return _WORKER["fn"](job, _WORKER["shared"])


def map_runs(fn: Callable[[J, Any], R], jobs: Sequence[J], shared: Any, *, threads: int, max_threads: int,
             desc: str, unit: str = "run") -> list[R]:
    """``[fn(job, shared) for job in jobs]`` over ``n_workers(threads, max_threads, len(jobs))`` processes.

    ``fn`` must be a module-level function (it is sent to the workers by name) and must seed its run
    from ``job`` alone. ``shared`` is sent once to each worker. A failing run raises here.
    """
    global PEAK_PROCESSES
    workers = n_workers(threads, max_threads, len(jobs))
    PEAK_PROCESSES = max(PEAK_PROCESSES, workers)
    if workers == 1:
        cap_threads(max_threads)
        return [fn(job, shared) for job in tqdm(jobs, desc=desc, unit=unit)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(workers, initializer=_init, initargs=(fn, shared, max_threads)) as pool:
        return list(tqdm(pool.imap(_call, jobs, chunksize=1), total=len(jobs), desc=desc, unit=unit))
