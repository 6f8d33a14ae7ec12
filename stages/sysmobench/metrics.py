"""SysMoBench's four automated metrics of a candidate spec (§4 of the paper), each a fraction in [0, 1].

- syntax: 1 if SANY accepts the whole module, else the fraction of the system's actions that SANY accepts in a
  module holding only the action and the definitions it depends on (the paper's per-action syntax score);
- runtime: the fraction of the system's actions that TLC's random simulation covers without an error;
- conformance: trace validation, the fraction of logged code actions (steps of the instrumented runs) the
  spec accepts, each trace replayed from its first state until the spec cannot take its next logged step;
- invariants: the fraction of the system's invariant templates TLC confirms by exhaustive model checking,
  the state space bounded by the system's state constraint (one step beyond its legal range, the same for every
  candidate) so that the check ends.

Plus :func:`equivalent`, which decides whether a mutant has the reference's behaviour (the same reachable
non-stuttering transitions under TLC), so that equivalent mutants are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from stages.sysmobench.specs import System
from stages.sysmobench.tla import (
    COVERAGE,
    STATE_LABEL,
    VIOLATED,
    Tools,
    definitions,
    dump_states,
    header,
    rename_module,
    sany,
    sany_ok,
    tlc,
    tlc_error,
)

CHECK_EXTENDS = "Naturals, Sequences, FiniteSets, TLC"
METRIC_NAMES = ("syntax", "runtime", "conformance", "invariants")


@dataclass(frozen=True)
class Simulation:
    """TLC's random simulation: behaviours, their depth and the seed."""

    traces: int
    depth: int
    seed: int


@dataclass(frozen=True)
class Scores:
    """A candidate's four metrics and what the tools said."""

    syntax: float
    runtime: float
    conformance: float
    invariants: float
    whole_module_parses: bool
    outcomes: str  # the sandbox outcome of each run, e.g. "sany=ok runtime=ok conformance=ok invariants=timeout"

    def as_dict(self) -> dict[str, float]:
        """The four metrics by name."""
        return {m: getattr(self, m) for m in METRIC_NAMES}


def constants_cfg(system: System) -> str:
    """The CONSTANT lines of a TLC config."""
    return "".join(f"CONSTANT {k} = {v}\n" for k, v in system.constants.items())


def _depends(name: str, defs: dict[str, str], actions: Sequence[str]) -> list[str]:
    """``name`` and the non-action definitions it uses, transitively, in module order."""
    keep, todo = {name}, [name]
    while todo:
        body = defs[todo.pop()]
        for other in defs:
            if other not in keep and other not in actions and other not in ("Next", "Spec") and \
                    re.search(rf"\b{re.escape(other)}\b", body.split("==", 1)[1]):
                keep.add(other)
                todo.append(other)
    return [d for d in defs if d in keep]


def syntax_score(tools: Tools, system: System, text: str) -> tuple[float, bool]:
    """(syntax score, whether SANY accepts the whole module) — SysMoBench's syntax metric."""
    text = rename_module(text, system.module)
    if sany_ok(sany(tools, {system.module: text}, system.module)):
        return 1.0, True
    defs, head = definitions(text), header(text)
    passed = 0
    for action in system.actions:
        if action not in defs:
            continue
        body = "\n".join(defs[d] for d in _depends(action, defs, system.actions))
        module = rename_module(f"{head}\n{body}\n====\n", system.module)
        passed += sany_ok(sany(tools, {system.module: module}, system.module))
    return passed / len(system.actions), False


def runtime_score(tools: Tools, system: System, text: str, sim: Simulation) -> tuple[float, str]:
    """(fraction of actions TLC's simulation covers without an error, the run's outcome).

    A clean run counts the actions with generated states in TLC's coverage report. A run that stops on an
    error counts the actions in its error trace before the last step (the step that produced the state TLC
    could not evaluate); a run stopped by a limit counts nothing.
    """
    cfg = constants_cfg(system) + "INIT Init\nNEXT Next\n"
    done, _ = tlc(tools, {system.module: rename_module(text, system.module)}, system.module, cfg,
                  ["-simulate", f"num={sim.traces}", "-depth", str(sim.depth), "-seed", str(sim.seed),
                   "-coverage", "1"])
    if done.outcome in ("timeout", "memory", "output", "cpu"):
        return 0.0, done.outcome
    if tlc_error(done):
        labels = STATE_LABEL.findall(done.stdout)
        covered = set(labels[:-1]) if labels else set()
        return len(covered & set(system.actions)) / len(system.actions), "error"
    covered = {name for name, _, generated in COVERAGE.findall(done.stdout) if int(generated) > 0}
    return len(covered & set(system.actions)) / len(system.actions), "ok"


def trace_module(system: System, traces: Sequence[Sequence[dict[str, str]]]) -> str:
    """A module replaying the logged traces through the candidate's Init and Next (trace validation).

    ``tv_t`` picks a trace, ``tv_i`` is the position in it; a step is taken only if Next allows a
    transition to exactly the next logged state.
    """
    seqs = ",\n  ".join("<<" + ", ".join("[" + ", ".join(f"{v} |-> {s[v]}" for v in system.variables) + "]"
                                         for s in trace) + ">>" for trace in traces)
    match_init = " /\\ ".join(f"{v} = TVTraces[tv_t][1].{v}" for v in system.variables)
    match_next = " /\\ ".join(f"{v}' = TVTraces[tv_t][tv_i + 1].{v}" for v in system.variables)
    return (f"---- MODULE TraceCheck ----\nEXTENDS {system.module}, {CHECK_EXTENDS}\n"
            f"VARIABLES tv_t, tv_i\n"
            f"TVTraces == <<\n  {seqs}\n>>\n"
            f"TVInit == tv_t \\in 1..Len(TVTraces) /\\ tv_i = 1 /\\ Init /\\ {match_init}\n"
            f"TVNext == tv_i < Len(TVTraces[tv_t]) /\\ tv_t' = tv_t /\\ tv_i' = tv_i + 1 /\\ Next /\\ {match_next}\n"
            "====\n")


def conformance_score(tools: Tools, system: System, text: str,
                      traces: Sequence[Sequence[dict[str, str]]]) -> tuple[float, str]:
    """(fraction of logged steps the spec accepts, the run's outcome): per trace, the steps of its longest
    accepted prefix (a trace whose first state the spec's Init rejects contributes none).

    The replay of every trace is one TLC run (breadth-first, so all traces advance together); if TLC stops
    on an error, the steps accepted up to then count.
    """
    module = trace_module(system, traces)
    cfg = constants_cfg(system) + "INIT TVInit\nNEXT TVNext\n"
    done, dumped = tlc(tools, {system.module: rename_module(text, system.module), "TraceCheck": module},
                       "TraceCheck", cfg, [], dump=True)
    reached: dict[int, int] = {}
    for state in dump_states(dumped):
        t, i = re.search(r"tv_t = (\d+)", state), re.search(r"tv_i = (\d+)", state)
        if t and i:
            reached[int(t.group(1))] = max(reached.get(int(t.group(1)), 0), int(i.group(1)))
    total = sum(len(tr) - 1 for tr in traces)
    accepted = sum(max(reached.get(k + 1, 1) - 1, 0) for k in range(len(traces)))
    return (accepted / total if total else 0.0), ("error" if tlc_error(done) else done.outcome)


def invariant_module(system: System) -> str:
    """The invariant templates instantiated on the candidate (its variables and constants), and its bound."""
    defs = "\n".join(f"Inv_{name} == {pred}" for name, pred in system.invariants.items())
    return (f"---- MODULE InvariantCheck ----\nEXTENDS {system.module}, {CHECK_EXTENDS}\n{defs}\n"
            f"StateBound == {system.bound}\n====\n")


def invariants_score(tools: Tools, system: System, text: str) -> tuple[float, str]:
    """(fraction of invariant templates TLC confirms, the run's outcome).

    One exhaustive breadth-first run with ``-continue`` over the states within the system's bound reports every
    violated template; a template is confirmed only if the run reached the end of that state space without
    violating it. A run stopped by its limit or by an evaluation error confirms none.
    """
    cfg = constants_cfg(system) + "INIT Init\nNEXT Next\nCONSTRAINT StateBound\n" + \
        "".join(f"INVARIANT Inv_{n}\n" for n in system.invariants)
    done, _ = tlc(tools, {system.module: rename_module(text, system.module),
                          "InvariantCheck": invariant_module(system)}, "InvariantCheck", cfg, ["-continue"])
    out = done.stdout
    violated = {a or b for a, b in VIOLATED.findall(out)}
    finished = "Finished in" in out and done.outcome in ("ok", "error") and "unexpected exception" not in out \
        and "Parse Error" not in out and "Semantic errors" not in out and "distinct states found" in out
    if not finished:
        return 0.0, done.outcome if done.outcome != "ok" else "error"
    confirmed = [n for n in system.invariants if f"Inv_{n}" not in violated]
    return len(confirmed) / len(system.invariants), "ok" if not violated else "violated"


def score(tools: Tools, system: System, text: str, traces: Sequence[Sequence[dict[str, str]]],
          sim: Simulation) -> Scores:
    """All four metrics of one candidate (a module that does not parse runs nothing else and scores 0)."""
    syntax, whole = syntax_score(tools, system, text)
    if not whole:
        return Scores(syntax, 0.0, 0.0, 0.0, False, "sany=error")
    runtime, r_out = runtime_score(tools, system, text, sim)
    conformance, c_out = conformance_score(tools, system, text, traces)
    invariants, i_out = invariants_score(tools, system, text)
    return Scores(syntax, runtime, conformance, invariants, True,
                  f"sany=ok runtime={r_out} conformance={c_out} invariants={i_out}")


def tool_runs(text: str, module: str, actions: Sequence[str], parses: bool, mutant: bool) -> int:
    """How many SANY and TLC runs :func:`score` starts for a candidate, plus the equivalence check
    (:func:`transitions`) of a mutant SANY accepts: a module SANY accepts gets one SANY run and the three TLC runs;
    one it rejects gets one SANY run per action it defines (the per-action syntax score) and nothing else."""
    if parses:
        return 1 + 3 + int(mutant)
    defs = definitions(rename_module(text, module))
    return 1 + sum(a in defs for a in actions)


def transitions(tools: Tools, system: System, text: str) -> tuple[frozenset[str] | None, str]:
    """The spec's reachable non-stuttering transitions within the system's bound (canonical text), or None if TLC
    did not finish."""
    vars_ = ", ".join(system.variables)
    module = (f"---- MODULE EquivalenceCheck ----\nEXTENDS {system.module}, {CHECK_EXTENDS}\nVARIABLE eq_prev\n"
              f"EqInit == Init /\\ eq_prev = <<>>\n"
              f"EqNext == Next /\\ <<{vars_}>>' # <<{vars_}>> /\\ eq_prev' = <<{vars_}>>\n"
              f"StateBound == {system.bound}\n====\n")
    cfg = constants_cfg(system) + "INIT EqInit\nNEXT EqNext\nCONSTRAINT StateBound\n"
    done, dumped = tlc(tools, {system.module: rename_module(text, system.module), "EquivalenceCheck": module},
                       "EquivalenceCheck", cfg, [], dump=True)
    if not done.ok or tlc_error(done):
        return None, done.outcome
    return frozenset(dump_states(dumped)), "ok"
