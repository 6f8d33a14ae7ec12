"""Per-step thread caps for steps made of many tiny torch ops (one mechanism for every paper).

The stage runner applies the global ``threads`` of params.yaml to every step. A step whose work
is thousands of tiny ops (a 64-wide transformer, an ODE solver step) can lose more to OpenMP
synchronisation than a second thread gains; its params section then has ``max_threads`` (typed
``MaxThreads``) and its ``run`` calls ``cap_threads(cfg.max_threads)`` first. A cap only ever
lowers the count. The OpenMP wait policy is left at its default: passive waiting helps only on an
oversubscribed machine and makes small ops about 2× slower on an idle one (docs/DEVELOPING.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MaxThreads = Annotated[int, Field(ge=1, le=512, description="cap on torch intra-op threads for this step "
                                                           "(never raises the global `threads`)")]


def cap_threads(max_threads: int) -> int:
    """Lower torch's intra-op threads to ``max_threads`` (never above the current count); the count set."""
    import torch

    n = min(torch.get_num_threads(), max_threads)
    torch.set_num_threads(n)
    return n
