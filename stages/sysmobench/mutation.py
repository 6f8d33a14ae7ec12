"""Seeded mutation operators on a reference spec: each makes one small, typical modelling mistake.

| operator        | the mistake                                                   | the metric meant to catch it |
|-----------------|---------------------------------------------------------------|------------------------------|
| rename_variable | one use of a variable in an action misspelt (undeclared name) | syntax                       |
| type_error      | one update gives a variable a value of another type           | runtime                      |
| remove_action   | an action left out of Next                                    | runtime (never covered)      |
| swap_update     | an action updates a variable as another action does           | conformance                  |
| drop_guard      | one enabling condition of an action dropped, or a strict bound | invariants                   |
|                 | in it weakened (``<`` to ``<=``, ``>`` to ``>=``)             |                              |

The sites of an operator are every place it applies. One seeded order of each operator's sites per system is
dealt out to the seeds in turn (:func:`deal_sites`), so seeds get different sites wherever there are enough.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from stages.sysmobench.specs import Spec

OPERATORS = ("rename_variable", "type_error", "remove_action", "swap_update", "drop_guard")
TARGET_METRIC = {"rename_variable": "syntax", "type_error": "runtime", "remove_action": "runtime",
                 "swap_update": "conformance", "drop_guard": "invariants"}
MISTYPED = '"undefined"'  # a string where every variable of the systems holds a boolean, number, sequence or function


@dataclass(frozen=True)
class Mutant:
    """A mutated spec and where the mutation is."""

    operator: str
    site: str
    spec: Spec


def _rename_first(text: str, var: str) -> str | None:
    new, n = re.subn(rf"\b{re.escape(var)}\b", f"{var}_x", text, count=1)
    return new if n else None


def rename_variable(spec: Spec) -> list[Mutant]:
    """Each (action, variable it mentions): the variable's first use in the action renamed to an undeclared name."""
    out = []
    for a in spec.actions:
        for var in spec.variables:
            for gi, g in enumerate(a.guards):
                new = _rename_first(g, var)
                if new is not None:
                    guards = (*a.guards[:gi], new, *a.guards[gi + 1:])
                    out.append(Mutant("rename_variable", f"{a.name}: {var} in guard {gi + 1}",
                                      spec.replace_action(dataclasses.replace(a, guards=guards))))
                    break
            else:
                for ui, (v, e) in enumerate(a.updates):
                    new = _rename_first(e, var)
                    if new is not None:
                        updates = (*a.updates[:ui], (v, new), *a.updates[ui + 1:])
                        out.append(Mutant("rename_variable", f"{a.name}: {var} in the update of {v}",
                                          spec.replace_action(dataclasses.replace(a, updates=updates))))
                        break
    return out


def type_error(spec: Spec) -> list[Mutant]:
    """Each update ``v' = e``: ``v' = "undefined"``."""
    out = []
    for a in spec.actions:
        for ui, (v, _) in enumerate(a.updates):
            updates = (*a.updates[:ui], (v, MISTYPED), *a.updates[ui + 1:])
            out.append(Mutant("type_error", f"{a.name}: {v}' = {MISTYPED}",
                              spec.replace_action(dataclasses.replace(a, updates=updates))))
    return out


def remove_action(spec: Spec) -> list[Mutant]:
    """Each action of Next: left out of Next (its definition stays)."""
    return [Mutant("remove_action", f"{name} not in Next",
                   dataclasses.replace(spec, in_next=tuple(n for n in spec.in_next if n != name)))
            for name in spec.in_next]


def swap_update(spec: Spec) -> list[Mutant]:
    """Each (action A, variable v, action B) where both update v differently: A takes B's update of v.

    Only where B's expression uses no parameter A lacks (else the mutant would not parse: a syntax mistake).
    """
    out = []
    for a in spec.actions:
        params = {p for p, _ in a.params}
        for ui, (v, e) in enumerate(a.updates):
            for b in spec.actions:
                other = dict(b.updates).get(v)
                if b.name == a.name or other is None or other == e:
                    continue
                if {p for p, _ in b.params} - params & set(re.findall(r"\b\w+\b", other)):
                    continue
                updates = (*a.updates[:ui], (v, other), *a.updates[ui + 1:])
                out.append(Mutant("swap_update", f"{a.name}: {v}' as in {b.name}",
                                  spec.replace_action(dataclasses.replace(a, updates=updates))))
    return out


WEAKER = {"<": "<=", ">": ">="}


def drop_guard(spec: Spec) -> list[Mutant]:
    """Each guard of each action: dropped; and each strict bound ``a < b`` / ``a > b`` of a guard: weakened."""
    out = []
    for a in spec.actions:
        for gi, g in enumerate(a.guards):
            guards = a.guards[:gi] + a.guards[gi + 1:]
            out.append(Mutant("drop_guard", f"{a.name}: without {g}",
                              spec.replace_action(dataclasses.replace(a, guards=guards))))
        for gi, g in enumerate(a.guards):
            strict = re.fullmatch(r"(.+?) ([<>]) (.+)", g)
            if strict:
                weak = f"{strict.group(1)} {WEAKER[strict.group(2)]} {strict.group(3)}"
                guards = (*a.guards[:gi], weak, *a.guards[gi + 1:])
                out.append(Mutant("drop_guard", f"{a.name}: {g} weakened to {weak}",
                                  spec.replace_action(dataclasses.replace(a, guards=guards))))
    return out


SITES: dict[str, Callable[[Spec], list[Mutant]]] = {
    "rename_variable": rename_variable, "type_error": type_error, "remove_action": remove_action,
    "swap_update": swap_update, "drop_guard": drop_guard,
}


def deal_sites(n_sites: int, k: int, seed_index: int, order: np.ndarray) -> list[int]:
    """The sites seed ``seed_index`` gets: ``k`` consecutive places (cyclically) of one seeded ``order`` of the
    ``n_sites`` sites, seed s starting at place s·k, so consecutive seeds get disjoint sites while
    n_sites >= (number of seeds)·k, and never one site twice (all sites if fewer than ``k``)."""
    if n_sites <= k:
        return list(range(n_sites))
    return sorted(int(order[(seed_index * k + j) % n_sites]) for j in range(k))


def draw_mutants(spec: Spec, operator: str, k: int, seed_index: int, rng: np.random.Generator) -> list[Mutant]:
    """Up to ``k`` mutants of one operator for one seed: its share of the sites in an order drawn by ``rng``
    (the same generator state for every seed, so the seeds share one order and take different parts of it)."""
    sites = SITES[operator](spec)
    return [sites[i] for i in deal_sites(len(sites), k, seed_index, rng.permutation(len(sites)))]
