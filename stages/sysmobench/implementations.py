"""The system artifacts: a spinlock, a mutex with a wait queue, a ring buffer and a leader election among nodes,
written here in Python and instrumented to log each code action with the abstract state after it (SysMoBench
§3.3: instrumented executions produce the traces that conformance checking replays).

Processes are generators: each ``yield`` ends one atomic step of the real code, and a seeded scheduler picks
which runnable process steps next, so an execution is one interleaving of the implementation, reproducible
from its seed. The logged state is the implementation's own fields (the lock word, the owner, the queue, the
slots and indices; the election's roles, known leaders and live count) plus each process's position in its code
(``pc``) where the state alone does not give it, written as TLA+ values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

Step = dict[str, Any]  # {"action": str, "args": list[int], "state": {var: TLA+ literal}}


def tla_value(value: Any) -> str:
    """A Python value as a TLA+ literal (bool, int, str, tuple/list as a sequence)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list | tuple):
        return "<<" + ", ".join(tla_value(v) for v in value) + ">>"
    raise TypeError(f"no TLA+ literal for {value!r}")


def zero_based(values: list[int]) -> str:
    """A function on 0..n-1 as a TLA+ literal (TLA+ sequences start at 1)."""
    return f"[i \\in 0..{len(values) - 1} |-> {tla_value(values)}[i + 1]]"


class SpinLock:
    """Test-and-set spinlock; ``pc`` is each process's position (instrumentation only)."""

    def __init__(self, n_procs: int) -> None:
        self.locked = False
        self.pc = ["idle"] * n_procs

    def try_acquire(self) -> bool:
        """Atomic test-and-set: True if the lock word was clear and is now set."""
        if self.locked:
            return False
        self.locked = True
        return True

    def release(self) -> None:
        self.locked = False

    def state(self) -> dict[str, str]:
        return {"locked": tla_value(self.locked), "pc": tla_value(self.pc)}

    def process(self, p: int, log: Callable[[str, list[int]], None]) -> Iterator[None]:
        while True:
            while not self.try_acquire():
                yield  # spinning changes nothing
            self.pc[p - 1] = "cs"
            log("Acquire", [p])
            yield
            self.release()
            self.pc[p - 1] = "idle"
            log("Release", [p])
            yield


class WaitQueueMutex:
    """A mutex whose unlock hands ownership to the first waiter in FIFO order."""

    def __init__(self, n_procs: int) -> None:
        self.owner = 0
        self.waiters: deque[int] = deque()
        self.pc = ["idle"] * n_procs

    def state(self) -> dict[str, str]:
        return {"owner": tla_value(self.owner), "queue": tla_value(list(self.waiters)), "pc": tla_value(self.pc)}

    def process(self, p: int, log: Callable[[str, list[int]], None]) -> Iterator[None]:
        while True:
            if self.owner == 0:
                self.owner = p
                self.pc[p - 1] = "cs"
                log("Lock", [p])
            else:
                self.waiters.append(p)
                self.pc[p - 1] = "waiting"
                log("Wait", [p])
                while self.owner != p:
                    yield  # parked until handed the mutex
            yield
            if self.waiters:
                nxt = self.waiters.popleft()
                self.owner = nxt
                self.pc[p - 1], self.pc[nxt - 1] = "idle", "cs"
                log("Handoff", [p])
            else:
                self.owner = 0
                self.pc[p - 1] = "idle"
                log("Unlock", [p])
            yield


class RingBuffer:
    """Single-producer single-consumer ring buffer; an empty slot holds 0."""

    def __init__(self, capacity: int, values: list[int], rng: np.random.Generator) -> None:
        self.slots = [0] * capacity
        self.head = self.tail = self.count = self.last = 0
        self.values, self.rng = values, rng

    def state(self) -> dict[str, str]:
        return {"buf": zero_based(self.slots), "head": tla_value(self.head), "tail": tla_value(self.tail),
                "count": tla_value(self.count), "last": tla_value(self.last)}

    def producer(self, log: Callable[[str, list[int]], None]) -> Iterator[None]:
        while True:
            if self.count < len(self.slots):
                v = int(self.rng.choice(self.values))
                self.slots[self.tail] = v
                self.tail = (self.tail + 1) % len(self.slots)
                self.count += 1
                log("Produce", [v])
            yield

    def consumer(self, log: Callable[[str, list[int]], None]) -> Iterator[None]:
        while True:
            if self.count > 0:
                self.last = self.slots[self.head]
                self.slots[self.head] = 0
                self.head = (self.head + 1) % len(self.slots)
                self.count -= 1
                log("Consume", [])
            yield


class LeaderElection:
    """Highest-id-wins (bully) election among nodes 1..N that crash and rejoin: a candidate defers to a higher live
    node or, with none, declares itself leader and every live node follows it; a crash makes the nodes that
    followed the crashed node or waited for a leader candidates again. ``leader`` is each node's known leader
    (0: none); a waiting follower has deferred and knows no leader yet."""

    def __init__(self, n_nodes: int, rng: np.random.Generator, crash_p: float = 0.2) -> None:
        self.role = ["down"] * n_nodes
        self.leader = [0] * n_nodes
        self.live = 0
        self.rng, self.crash_p = rng, crash_p

    def state(self) -> dict[str, str]:
        return {"role": tla_value(self.role), "leader": tla_value(self.leader), "live": tla_value(self.live)}

    def higher_live(self, p: int) -> bool:
        """Whether a node with a higher id than ``p`` is up."""
        return any(r != "down" for r in self.role[p:])

    def declare(self, p: int) -> None:
        """``p`` leads; every live node (a former leader included) follows it."""
        for k, r in enumerate(self.role):
            if r != "down":
                self.role[k], self.leader[k] = "follower", p
        self.role[p - 1] = "leading"

    def crash(self, p: int) -> None:
        """``p`` goes down; its followers and the waiting followers become candidates and forget their leader."""
        for k, r in enumerate(self.role):
            if r == "follower" and self.leader[k] in (0, p):
                self.role[k] = "candidate"
            if self.leader[k] == p:
                self.leader[k] = 0
        self.role[p - 1], self.leader[p - 1] = "down", 0
        self.live -= 1

    def process(self, p: int, log: Callable[[str, list[int]], None]) -> Iterator[None]:
        while True:
            if self.role[p - 1] == "down":
                self.role[p - 1] = "candidate"
                self.live += 1
                log("Join", [p])
            elif self.rng.random() < self.crash_p:
                self.crash(p)
                log("Crash", [p])
            elif self.role[p - 1] == "candidate" and self.higher_live(p):
                self.role[p - 1] = "follower"
                log("Defer", [p])
            elif self.role[p - 1] == "candidate":
                self.declare(p)
                log("Declare", [p])
            yield


def execute(system: str, n_steps: int, rng: np.random.Generator, n_procs: int, capacity: int,
            n_values: int) -> list[Step]:
    """One seeded execution: the initial state, then every logged action until ``n_steps`` actions."""
    obj: Any
    if system == "spinlock":
        obj = SpinLock(n_procs)
    elif system == "mutex":
        obj = WaitQueueMutex(n_procs)
    elif system == "ringbuffer":
        obj = RingBuffer(capacity, list(range(1, n_values + 1)), rng)
    elif system == "election":
        obj = LeaderElection(n_procs, rng)
    else:
        raise ValueError(f"unknown system {system!r}")
    steps: list[Step] = [{"action": "Init", "args": [], "state": obj.state()}]

    def log(action: str, args: list[int]) -> None:
        steps.append({"action": action, "args": args, "state": obj.state()})

    if system == "ringbuffer":
        procs = [obj.producer(log), obj.consumer(log)]
    else:
        procs = [obj.process(p, log) for p in range(1, n_procs + 1)]
    guard = 0
    while len(steps) <= n_steps:
        next(procs[int(rng.integers(len(procs)))])
        guard += 1
        if guard > 1000 * n_steps:
            raise RuntimeError(f"{system}: no progress after {guard} scheduler steps")
    return steps[: n_steps + 1]
