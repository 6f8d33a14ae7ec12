"""The four metrics with the real SANY and TLC: the reference passes, each mistake is caught by its metric,
trace validation accepts a real trace and rejects a corrupted one, an endless state space is stopped and scored."""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from stages.assets.loaders import load_tla_tools
from stages.sysmobench import metrics, mutation, specs, tla
from stages.sysmobench.implementations import execute
from stages.sysmobench.tla import Tools

SIM = metrics.Simulation(traces=20, depth=12, seed=7)


@pytest.fixture(scope="module")
def tools(tla_tools_asset):
    return Tools(load_tla_tools(tla_tools_asset), "java", 256, 20, 120.0)


@pytest.fixture(scope="module")
def spinlock():
    return specs.systems(2, 2, 2)["spinlock"]


def real_traces(system: str, n: int = 2, steps: int = 8) -> list[list[dict[str, str]]]:
    gen = np.random.default_rng(3)
    return [[s["state"] for s in execute(system, steps, gen, 2, 2, 2)] for _ in range(n)]


def mutant(spec: specs.Spec, operator: str, site: str) -> str:
    return specs.render(next(m.spec for m in mutation.SITES[operator](spec) if m.site == site))


@pytest.mark.parametrize("name", ["spinlock", "mutex", "ringbuffer", "election"])
def test_reference_scores_one_on_every_metric(tools, name):
    system = specs.systems(2, 2, 2)[name]
    scores = metrics.score(tools, system, specs.render(specs.REFERENCE[name]), real_traces(name), SIM)
    assert scores.as_dict() == {"syntax": 1.0, "runtime": 1.0, "conformance": 1.0, "invariants": 1.0}
    assert scores.whole_module_parses


@pytest.mark.parametrize("name", ["spinlock", "mutex", "ringbuffer", "election"])
def test_the_reference_renamed_or_reordered_scores_one_on_every_metric(tools, name):
    ref = specs.REFERENCE[name]
    mapping = {v: specs.RENAMING[v] for v in ref.variables}
    system = specs.systems(2, 2, 2)[name]
    traces = real_traces(name)
    renamed_traces = [[{mapping[k]: v for k, v in s.items()} for s in tr] for tr in traces]
    renamed = metrics.score(tools, specs.rename_system(system, mapping),
                            specs.render(specs.rename_variables(ref, mapping)), renamed_traces, SIM)
    assert renamed.as_dict() == {"syntax": 1.0, "runtime": 1.0, "conformance": 1.0, "invariants": 1.0}
    reordered = metrics.score(tools, system, specs.render(specs.reorder(ref, np.random.default_rng(4))), traces, SIM)
    assert reordered.as_dict() == {"syntax": 1.0, "runtime": 1.0, "conformance": 1.0, "invariants": 1.0}


@pytest.mark.parametrize("site", ["Produce: without count < Cap", "Consume: count > 0 weakened to count >= 0"])
def test_bounded_ring_buffer_drop_guard_is_violated_within_the_limit(tla_tools_asset, site):
    # without the state bound these mutants' counters grow without end and TLC runs into its limit
    tools = Tools(load_tla_tools(tla_tools_asset), "java", 256, 10, 60.0)
    ring = specs.systems(3, 3, 2)["ringbuffer"]
    start = time.monotonic()
    invariants, outcome = metrics.invariants_score(tools, ring, mutant(specs.RINGBUFFER, "drop_guard", site))
    # TypeOK (the count leaves 0..Cap) and OccupiedSlots fail; TailFollowsHead still holds
    assert outcome == "violated" and invariants == pytest.approx(1 / 3)
    assert time.monotonic() - start < 10


def test_rename_variable_is_caught_by_syntax_per_action(tools, spinlock):
    text = mutant(specs.SPINLOCK, "rename_variable", "Release: pc in guard 1")
    syntax, whole = metrics.syntax_score(tools, spinlock, text)
    assert not whole and syntax == 0.5           # Acquire still parses alone, Release does not


def test_type_error_is_caught_by_runtime(tools, spinlock):
    text = mutant(specs.SPINLOCK, "type_error", "Release: locked' = \"undefined\"")
    runtime, outcome = metrics.runtime_score(tools, spinlock, text, SIM)
    assert outcome == "error" and runtime == 0.5  # Acquire ran; the Release step produced the bad state


def test_remove_action_is_caught_by_runtime(tools, spinlock):
    text = mutant(specs.SPINLOCK, "remove_action", "Release not in Next")
    runtime, outcome = metrics.runtime_score(tools, spinlock, text, SIM)
    assert outcome == "ok" and runtime == 0.5


def test_swap_update_is_caught_by_conformance(tools, spinlock):
    text = mutant(specs.SPINLOCK, "swap_update", "Release: locked' as in Acquire")
    traces = real_traces("spinlock")
    conformance, _ = metrics.conformance_score(tools, spinlock, text, traces)
    # every trace starts with an Acquire then a Release, which the mutant cannot take: one step of each
    assert conformance == pytest.approx(len(traces) / sum(len(t) - 1 for t in traces))


def test_drop_guard_is_caught_by_invariants(tools, spinlock):
    text = mutant(specs.SPINLOCK, "drop_guard", "Acquire: without locked = FALSE")
    invariants, outcome = metrics.invariants_score(tools, spinlock, text)
    # two processes in the critical section (MutualExclusion), then one leaves and clears the lock word while
    # the other still holds it (LockWordMatchesHolder); only TypeOK survives
    assert outcome == "violated" and invariants == pytest.approx(1 / 3)


def test_trace_validation_accepts_a_real_trace_and_rejects_a_corrupted_one(tools, spinlock):
    reference = specs.render(specs.SPINLOCK)
    trace = real_traces("spinlock", n=1, steps=8)[0]
    assert metrics.conformance_score(tools, spinlock, reference, [trace])[0] == 1.0
    bad = [dict(s) for s in trace]
    bad[5]["locked"] = "FALSE" if bad[5]["locked"] == "TRUE" else "TRUE"  # the lock word logged wrongly at step 5
    score, _ = metrics.conformance_score(tools, spinlock, reference, [bad])
    assert score == pytest.approx(4 / 8)         # steps 1..4 accepted, step 5 is not, nothing after it


def test_an_endless_state_space_is_stopped_by_its_limit_and_scored(tla_tools_asset, spinlock):
    tools = Tools(load_tla_tools(tla_tools_asset), "java", 256, 4, 60.0)
    # the reference with an extra step counter that every action increments: no end to the state space
    endless = specs.Spec("Spinlock", ("Naturals",), ("Procs",), ("locked", "pc", "n"),
                         (*specs.SPINLOCK.init, ("n", "0")),
                         tuple(specs.Action(a.name, a.params, a.guards, (*a.updates, ("n", "n + 1")))
                               for a in specs.SPINLOCK.actions), ("Acquire", "Release"))
    start = time.monotonic()
    invariants, outcome = metrics.invariants_score(tools, spinlock, specs.render(endless))
    assert outcome == "cpu" and invariants == 0.0        # stopped by its CPU-time limit, not the wall clock
    assert time.monotonic() - start < 15
    assert metrics.transitions(tools, spinlock, specs.render(endless)) == (None, "cpu")


def test_equivalent_mutants_are_recognised(tools, spinlock):
    reference, _ = metrics.transitions(tools, spinlock, specs.render(specs.SPINLOCK))
    assert reference is not None and len(reference) == 5  # the initial state, 2 acquires, 2 releases
    redundant = mutant(specs.SPINLOCK, "drop_guard", 'Acquire: without pc[p] = "idle"')
    assert metrics.transitions(tools, spinlock, redundant)[0] == reference
    real = mutant(specs.SPINLOCK, "drop_guard", "Acquire: without locked = FALSE")
    assert metrics.transitions(tools, spinlock, real)[0] != reference


def test_a_module_that_does_not_parse_scores_zero_beyond_syntax(tools, spinlock):
    scores = metrics.score(tools, spinlock, "---- MODULE Spinlock ----\nVARIABLES locked, pc\nInit == \n====\n",
                           real_traces("spinlock"), SIM)
    assert scores.as_dict() == {"syntax": 0.0, "runtime": 0.0, "conformance": 0.0, "invariants": 0.0}


def test_each_tool_run_reads_the_standard_modules_from_its_own_folder(tools, spinlock):
    """TLC extracts Naturals.tla, TLC.tla, ... into java.io.tmpdir; with a shared /tmp two JVMs at once read
    each other's half-written copies ("Could not parse module TLC", a correct spec scored as failing)."""
    cfg = metrics.constants_cfg(spinlock) + "INIT Init\nNEXT Next\n"
    done, _ = tla.tlc(tools, {spinlock.module: specs.render(specs.SPINLOCK)}, spinlock.module, cfg,
                      ["-simulate", "num=2", "-depth", "3"])
    parsed = re.findall(r"^Parsing file (.+)$", done.stdout, re.MULTILINE)
    standard = [p for p in parsed if p.endswith(("/Naturals.tla", "/TLC.tla"))]
    assert standard, f"TLC did not say where it read its standard modules:\n{done.stdout[:1500]}"
    spec_folder = next(str(Path(p).parent) for p in parsed if p.endswith(f"/{spinlock.module}.tla"))
    assert all(str(Path(p).parent) == spec_folder for p in standard), parsed  # the run's own folder, not /tmp


def test_concurrent_tool_runs_all_parse(tools, spinlock):
    """Eight TLC runs of the reference, two at a time (as evaluate runs them), all end cleanly."""
    cfg = metrics.constants_cfg(spinlock) + "INIT Init\nNEXT Next\n"
    spec = {spinlock.module: specs.render(specs.SPINLOCK)}
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: tla.tlc(tools, spec, spinlock.module, cfg,
                                               ["-simulate", "num=2", "-depth", "3"])[0], range(8)))
    assert [r.outcome for r in runs] == ["ok"] * 8 and not any(tla.tlc_error(r) for r in runs), \
        [r.stdout[-800:] for r in runs if r.outcome != "ok" or tla.tlc_error(r)]
