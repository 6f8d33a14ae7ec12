"""The systems' formal side: each system's interface (constants, variables, code actions), its reference
TLA+ spec written here, and its invariant templates (SysMoBench §3: the spec must model the code's actions
over the variables the instrumentation logs; invariants are hand-written per system and instantiated on the
candidate spec).

A spec is held as structured data (:class:`Spec`: guards and updates per action) so that the mutation
operators (``mutation.py``) can edit one guard or one update; :func:`render` writes it as a TLA+ module, one
definition per line. Candidates from a generator are plain text and go through the same metrics.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

UNCHANGED = "UNCHANGED"


@dataclass(frozen=True)
class Action:
    """One action: parameters (each bound over a constant set in Next), guards, primed updates."""

    name: str
    params: tuple[tuple[str, str], ...]  # (parameter, the set it ranges over in Next)
    guards: tuple[str, ...]
    updates: tuple[tuple[str, str], ...]  # (variable, expression of its next value)

    def signature(self) -> str:
        """``Name(p, q)`` or ``Name``."""
        return f"{self.name}({', '.join(p for p, _ in self.params)})" if self.params else self.name


@dataclass(frozen=True)
class Spec:
    """A spec as data: module header, Init as one expression per variable, the actions, which are in Next."""

    module: str
    extends: tuple[str, ...]
    constants: tuple[str, ...]
    variables: tuple[str, ...]
    init: tuple[tuple[str, str], ...]
    actions: tuple[Action, ...]
    in_next: tuple[str, ...]  # names of the actions Next is made of

    def action(self, name: str) -> Action:
        """The action called ``name``."""
        return next(a for a in self.actions if a.name == name)

    def replace_action(self, new: Action) -> Spec:
        """A copy with the action of the same name replaced."""
        return dataclasses.replace(self, actions=tuple(new if a.name == new.name else a for a in self.actions))


@dataclass(frozen=True)
class System:
    """What the benchmark tells a modeller about a system: the interface a spec must use, and how to check it."""

    name: str
    module: str
    description: str
    constants: dict[str, str]  # constant -> the value TLC is given (TLA+ text)
    variables: tuple[str, ...]
    actions: tuple[str, ...]
    invariants: dict[str, str]  # template name -> TLA+ predicate over the variables and constants
    # a state constraint one step beyond the system's legal range, so that exhaustive checking of any candidate
    # (a mutant that lets a counter or queue grow included) ends instead of running into its time limit
    bound: str = "TRUE"


def action_definition(a: Action, variables: tuple[str, ...]) -> str:
    """One action as one line: guards, then updates, then UNCHANGED for the variables it leaves alone."""
    updated = [v for v, _ in a.updates]
    parts = list(a.guards) + [f"{v}' = {e}" for v, e in a.updates]
    kept = [v for v in variables if v not in updated]
    if kept:
        parts.append(f"{UNCHANGED} <<{', '.join(kept)}>>")
    return f"{a.signature()} == " + " /\\ ".join(parts)


def next_disjunct(a: Action) -> str:
    """``\\E p \\in Procs : A(p)`` or ``A``."""
    if not a.params:
        return a.name
    binders = ", ".join(f"{p} \\in {s}" for p, s in a.params)
    return f"(\\E {binders} : {a.signature()})"


def render(spec: Spec) -> str:
    """The spec as a TLA+ module, one definition per line."""
    lines = [f"---- MODULE {spec.module} ----", f"EXTENDS {', '.join(spec.extends)}"]
    if spec.constants:
        lines.append(f"CONSTANTS {', '.join(spec.constants)}")
    lines.append(f"VARIABLES {', '.join(spec.variables)}")
    lines.append(f"vars == <<{', '.join(spec.variables)}>>")
    lines.append("Init == " + " /\\ ".join(f"{v} = {e}" for v, e in spec.init))
    lines.extend(action_definition(a, spec.variables) for a in spec.actions)
    chosen = [spec.action(n) for n in spec.in_next]
    lines.append("Next == " + (" \\/ ".join(next_disjunct(a) for a in chosen) if chosen else "FALSE"))
    lines.append("Spec == Init /\\ [][Next]_vars")
    lines.append("====")
    return "\n".join(lines) + "\n"


P = (("p", "Procs"),)


def _pc(p: str, value: str) -> str:
    return f'[pc EXCEPT ![{p}] = "{value}"]'


SPINLOCK = Spec(
    module="Spinlock", extends=("Naturals",), constants=("Procs",), variables=("locked", "pc"),
    init=(("locked", "FALSE"), ("pc", '[q \\in Procs |-> "idle"]')),
    actions=(
        Action("Acquire", P, ('pc[p] = "idle"', "locked = FALSE"), (("locked", "TRUE"), ("pc", _pc("p", "cs")))),
        Action("Release", P, ('pc[p] = "cs"',), (("locked", "FALSE"), ("pc", _pc("p", "idle")))),
    ),
    in_next=("Acquire", "Release"),
)

MUTEX = Spec(
    module="Mutex", extends=("Naturals", "Sequences"), constants=("Procs",), variables=("owner", "queue", "pc"),
    init=(("owner", "0"), ("queue", "<<>>"), ("pc", '[q \\in Procs |-> "idle"]')),
    actions=(
        Action("Lock", P, ('pc[p] = "idle"', "owner = 0"), (("owner", "p"), ("pc", _pc("p", "cs")))),
        Action("Wait", P, ('pc[p] = "idle"', "owner # 0"),
               (("queue", "Append(queue, p)"), ("pc", _pc("p", "waiting")))),
        Action("Unlock", P, ('pc[p] = "cs"', "owner = p", "queue = <<>>"), (("owner", "0"), ("pc", _pc("p", "idle")))),
        Action("Handoff", P, ('pc[p] = "cs"', "owner = p", "queue # <<>>"),
               (("owner", "Head(queue)"), ("queue", "Tail(queue)"),
                ("pc", '[pc EXCEPT ![p] = "idle", ![Head(queue)] = "cs"]'))),
    ),
    in_next=("Lock", "Wait", "Unlock", "Handoff"),
)

RINGBUFFER = Spec(
    module="RingBuffer", extends=("Naturals",), constants=("Cap", "Values"),
    variables=("buf", "head", "tail", "count", "last"),
    init=(("buf", "[i \\in 0..(Cap - 1) |-> 0]"), ("head", "0"), ("tail", "0"), ("count", "0"), ("last", "0")),
    actions=(
        Action("Produce", (("v", "Values"),), ("count < Cap",),
               (("buf", "[buf EXCEPT ![tail] = v]"), ("tail", "(tail + 1) % Cap"), ("count", "count + 1"))),
        Action("Consume", (), ("count > 0",),
               (("last", "buf[head]"), ("buf", "[buf EXCEPT ![head] = 0]"), ("head", "(head + 1) % Cap"),
                ("count", "count - 1"))),
    ),
    in_next=("Produce", "Consume"),
)

N = (("n", "Nodes"),)
# a crash: the node goes down; the nodes that followed it, or waited for a leader, become candidates and forget it
_CRASH_ROLE = ('[k \\in Nodes |-> IF k = n THEN "down" ELSE IF leader[k] \\in {0, n} /\\ role[k] = "follower" '
               'THEN "candidate" ELSE role[k]]')

ELECTION = Spec(
    module="Election", extends=("Naturals",), constants=("Nodes",), variables=("role", "leader", "live"),
    init=(("role", '[k \\in Nodes |-> "down"]'), ("leader", "[k \\in Nodes |-> 0]"), ("live", "0")),
    actions=(
        Action("Join", N, ('role[n] = "down"',), (("role", '[role EXCEPT ![n] = "candidate"]'), ("live", "live + 1"))),
        Action("Defer", N, ('role[n] = "candidate"', '(\\E m \\in Nodes : m > n /\\ role[m] # "down")'),
               (("role", '[role EXCEPT ![n] = "follower"]'),)),
        Action("Declare", N, ('role[n] = "candidate"', '(\\A m \\in Nodes : role[m] # "down" => m <= n)'),
               (("role", '[k \\in Nodes |-> IF k = n THEN "leading" ELSE IF role[k] = "down" THEN "down" '
                         'ELSE "follower"]'),
                ("leader", '[k \\in Nodes |-> IF role[k] = "down" THEN 0 ELSE n]'))),
        Action("Crash", N, ('role[n] # "down"',),
               (("role", _CRASH_ROLE),
                ("leader", "[k \\in Nodes |-> IF k = n \\/ leader[k] = n THEN 0 ELSE leader[k]]"),
                ("live", "live - 1"))),
    ),
    in_next=("Join", "Defer", "Declare", "Crash"),
)

REFERENCE = {"spinlock": SPINLOCK, "mutex": MUTEX, "ringbuffer": RINGBUFFER, "election": ELECTION}

_MUTUAL_EXCLUSION = '\\A p, q \\in Procs : (pc[p] = "cs" /\\ pc[q] = "cs") => p = q'


def systems(n_procs: int, capacity: int, n_values: int) -> dict[str, System]:
    """The systems with their TLC constants at the given sizes (the election's nodes are ``n_procs``)."""
    procs = "{" + ", ".join(str(i) for i in range(1, n_procs + 1)) + "}"
    return {
        "spinlock": System(
            "spinlock", "Spinlock",
            "A test-and-set spinlock shared by processes 1..N: a process spins until the lock word is free, "
            "sets it and enters its critical section, then clears it.",
            {"Procs": procs}, SPINLOCK.variables, ("Acquire", "Release"),
            {"MutualExclusion": _MUTUAL_EXCLUSION,
             "LockWordMatchesHolder": 'locked <=> (\\E p \\in Procs : pc[p] = "cs")',
             "TypeOK": 'locked \\in BOOLEAN /\\ pc \\in [Procs -> {"idle", "cs"}]'}),
        "mutex": System(
            "mutex", "Mutex",
            "A mutex with a FIFO wait queue: a process takes a free mutex or joins the queue; on unlock the owner "
            "hands the mutex to the first waiter, or frees it when nobody waits.",
            {"Procs": procs}, MUTEX.variables, ("Lock", "Wait", "Unlock", "Handoff"),
            {"MutualExclusion": _MUTUAL_EXCLUSION,
             "HolderIsOwner": '\\A p \\in Procs : pc[p] = "cs" <=> owner = p',
             "QueuedAreWaiting": '\\A p \\in Procs : pc[p] = "waiting" <=> (\\E i \\in 1..Len(queue) : queue[i] = p)',
             "NoWaitersWhenFree": "owner = 0 => queue = <<>>",
             "TypeOK": ('owner \\in Procs \\cup {0} /\\ pc \\in [Procs -> {"idle", "waiting", "cs"}] '
                        "/\\ Len(queue) <= Cardinality(Procs)")},
            bound="Len(queue) <= Cardinality(Procs) + 1"),
        "ringbuffer": System(
            "ringbuffer", "RingBuffer",
            "A bounded single-producer single-consumer ring buffer of Cap slots (0 marks an empty slot): the "
            "producer writes a value at tail when not full; the consumer takes the value at head when not empty "
            "and records it in last.",
            {"Cap": str(capacity), "Values": "{" + ", ".join(str(i) for i in range(1, n_values + 1)) + "}"},
            RINGBUFFER.variables, ("Produce", "Consume"),
            {"TypeOK": ("count \\in 0..Cap /\\ head \\in 0..(Cap - 1) /\\ tail \\in 0..(Cap - 1) "
                        "/\\ buf \\in [0..(Cap - 1) -> Values \\cup {0}] /\\ last \\in Values \\cup {0}"),
             "TailFollowsHead": "tail = (head + count) % Cap",
             "OccupiedSlots": "\\A k \\in 0..(Cap - 1) : (buf[(head + k) % Cap] # 0) <=> k < count"},
            bound="count + 1 \\in 0..(Cap + 2)"),
        "election": System(
            "election", "Election",
            "Leader election among nodes 1..N, the highest id wins: a down node joins as a candidate; a candidate "
            "defers (a follower waiting for a leader) while a node with a higher id is up, else it declares itself "
            "leader and every live node follows it; a live node may crash: it goes down, and the nodes that "
            "followed it or waited for a leader become candidates again. leader[k] is the leader node k knows "
            "(0: none); live counts the nodes that are up.",
            {"Nodes": procs}, ELECTION.variables, ("Join", "Defer", "Declare", "Crash"),
            {"AtMostOneLeader": '\\A p, q \\in Nodes : (role[p] = "leading" /\\ role[q] = "leading") => p = q',
             "KnownLeaderLeads": '\\A k \\in Nodes : leader[k] # 0 => (role[leader[k]] = "leading" /\\ leader[k] >= k)',
             "LeaderKnowsItself": '\\A k \\in Nodes : role[k] = "leading" => leader[k] = k',
             "OnlyFollowersHaveALeader": '\\A k \\in Nodes : role[k] \\in {"down", "candidate"} => leader[k] = 0',
             "WaitingFollowerHasAHigherNode": ('\\A k \\in Nodes : (role[k] = "follower" /\\ leader[k] = 0) => '
                                               '(\\E m \\in Nodes : m > k /\\ role[m] # "down")'),
             "LiveCount": 'live = Cardinality({k \\in Nodes : role[k] # "down"})',
             "TypeOK": ('role \\in [Nodes -> {"down", "candidate", "follower", "leading"}] '
                        "/\\ leader \\in [Nodes -> Nodes \\cup {0}] /\\ live \\in 0..Cardinality(Nodes)")},
            bound="live + 1 \\in 0..(Cardinality(Nodes) + 2)"),
    }


# a consistent renaming of every variable of the systems (names a modeller might choose instead)
RENAMING = {"locked": "lockWord", "pc": "where", "owner": "holder", "queue": "waiters", "buf": "slots",
            "head": "rd", "tail": "wr", "count": "used", "last": "taken", "role": "status", "leader": "chief",
            "live": "upCount"}


def rename_in(text: str, mapping: dict[str, str]) -> str:
    """Every whole-word use of a mapped name replaced at once (no chained renames)."""
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def rename_variables(spec: Spec, mapping: dict[str, str]) -> Spec:
    """The spec with its variables consistently renamed (the same behaviour under other names)."""
    def actions() -> tuple[Action, ...]:
        return tuple(dataclasses.replace(a, guards=tuple(rename_in(g, mapping) for g in a.guards),
                                         updates=tuple((mapping.get(v, v), rename_in(e, mapping))
                                                       for v, e in a.updates)) for a in spec.actions)
    return dataclasses.replace(spec, variables=tuple(mapping.get(v, v) for v in spec.variables),
                               init=tuple((mapping.get(v, v), rename_in(e, mapping)) for v, e in spec.init),
                               actions=actions())


def rename_system(system: System, mapping: dict[str, str]) -> System:
    """The system's interface, invariant templates and bound under a variable renaming (the trace mapping and
    templates follow the candidate's names)."""
    return dataclasses.replace(system, variables=tuple(mapping.get(v, v) for v in system.variables),
                               invariants={k: rename_in(v, mapping) for k, v in system.invariants.items()},
                               bound=rename_in(system.bound, mapping))


def _shuffled(items: tuple, rng: np.random.Generator) -> tuple:
    return tuple(items[i] for i in rng.permutation(len(items)))


def reorder(spec: Spec, rng: np.random.Generator) -> Spec:
    """The spec with the disjuncts of Next and the guard and update conjuncts of each action in a seeded new
    order (guards stay before updates, so no update is evaluated outside its enabling condition)."""
    for _ in range(100):
        out = dataclasses.replace(
            spec, in_next=_shuffled(spec.in_next, rng),
            actions=tuple(dataclasses.replace(a, guards=_shuffled(a.guards, rng), updates=_shuffled(a.updates, rng))
                          for a in spec.actions))
        if render(out) != render(spec):
            return out
    raise ValueError(f"{spec.module}: no other order of its conjuncts and disjuncts")
