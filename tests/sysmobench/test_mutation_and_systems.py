"""Mutation operators, the rendered specs, and the instrumented implementations (no TLA+ tools needed)."""

from __future__ import annotations

import numpy as np

from stages.sysmobench import mutation, specs
from stages.sysmobench.implementations import execute, tla_value, zero_based
from stages.sysmobench.tla import definitions, header, rename_module


def test_render_writes_one_definition_per_line_with_unchanged():
    text = specs.render(specs.SPINLOCK)
    assert 'Release(p) == pc[p] = "cs" /\\ locked\' = FALSE /\\ pc\' = [pc EXCEPT ![p] = "idle"]' in text
    assert "Next == (\\E p \\in Procs : Acquire(p)) \\/ (\\E p \\in Procs : Release(p))" in text
    ring = specs.render(specs.RINGBUFFER)
    assert "Produce(v) == count < Cap /\\ " in ring and ring.count("UNCHANGED <<head, last>>") == 1
    assert "Consume == count > 0" in ring and "\\/ Consume" in ring


def test_sites_of_each_operator_on_the_spinlock_by_hand():
    sites = {op: [m.site for m in mutation.SITES[op](specs.SPINLOCK)] for op in mutation.OPERATORS}
    assert sites["drop_guard"] == ['Acquire: without pc[p] = "idle"', "Acquire: without locked = FALSE",
                                   'Release: without pc[p] = "cs"']
    assert sites["remove_action"] == ["Acquire not in Next", "Release not in Next"]
    assert len(sites["type_error"]) == 4                      # two updates in each of two actions
    assert len(sites["swap_update"]) == 4                     # locked and pc, each way
    assert sites["rename_variable"] == ["Acquire: locked in guard 2", "Acquire: pc in guard 1",
                                        "Release: pc in guard 1"]  # Release reads no `locked` (it only sets it)


def test_each_mutant_changes_exactly_one_line():
    reference = specs.render(specs.MUTEX).splitlines()
    for op in mutation.OPERATORS:
        for m in mutation.SITES[op](specs.MUTEX):
            changed = [a for a, b in zip(reference, specs.render(m.spec).splitlines(), strict=True) if a != b]
            assert len(changed) == 1, (op, m.site)


def test_swap_update_never_borrows_a_parameter_the_action_lacks():
    # Produce(v) writes v into the buffer; Consume has no v, so it never takes Produce's buffer update
    sites = [m.site for m in mutation.swap_update(specs.RINGBUFFER)]
    assert "Produce: buf' as in Consume" in sites and "Consume: buf' as in Produce" not in sites


def test_draw_mutants_is_seeded_and_without_replacement():
    a = mutation.draw_mutants(specs.MUTEX, "swap_update", 3, np.random.default_rng(1))
    b = mutation.draw_mutants(specs.MUTEX, "swap_update", 3, np.random.default_rng(1))
    assert [m.site for m in a] == [m.site for m in b] and len({m.site for m in a}) == 3
    assert len(mutation.draw_mutants(specs.SPINLOCK, "remove_action", 5, np.random.default_rng(1))) == 2


def test_definitions_and_header_split_a_module():
    text = specs.render(specs.SPINLOCK)
    defs = definitions(text)
    assert list(defs) == ["vars", "Init", "Acquire", "Release", "Next", "Spec"]
    assert header(text).splitlines()[-1] == "VARIABLES locked, pc"
    assert rename_module(text, "Other").startswith("---- MODULE Other ----")


def test_tla_literals():
    assert tla_value([True, 2, "cs"]) == '<<TRUE, 2, "cs">>'
    assert zero_based([1, 0]) == "[i \\in 0..1 |-> <<1, 0>>[i + 1]]"


def test_executions_are_seeded_and_keep_the_systems_properties():
    for system in ("spinlock", "mutex", "ringbuffer"):
        a = execute(system, 40, np.random.default_rng(5), 3, 3, 2)
        b = execute(system, 40, np.random.default_rng(5), 3, 3, 2)
        assert a == b and len(a) == 41 and a[0]["action"] == "Init"
    for step in execute("mutex", 60, np.random.default_rng(2), 3, 3, 2):
        assert step["state"]["pc"].count('"cs"') <= 1            # mutual exclusion in the implementation
    actions = {s["action"] for s in execute("mutex", 200, np.random.default_rng(2), 3, 3, 2)}
    assert actions == {"Init", "Lock", "Wait", "Unlock", "Handoff"}
    ring = execute("ringbuffer", 60, np.random.default_rng(2), 2, 2, 2)
    assert all(0 <= int(s["state"]["count"]) <= 2 for s in ring)
