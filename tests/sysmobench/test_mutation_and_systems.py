"""Mutation operators, the rendered specs, and the instrumented implementations (no TLA+ tools needed)."""

from __future__ import annotations

import re

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
    a = mutation.draw_mutants(specs.MUTEX, "swap_update", 3, 0, np.random.default_rng(1))
    b = mutation.draw_mutants(specs.MUTEX, "swap_update", 3, 0, np.random.default_rng(1))
    assert [m.site for m in a] == [m.site for m in b] and len({m.site for m in a}) == 3
    assert len(mutation.draw_mutants(specs.SPINLOCK, "remove_action", 5, 0, np.random.default_rng(1))) == 2


def test_deal_sites_by_hand():
    order = np.array([4, 0, 3, 1, 2])
    assert mutation.deal_sites(5, 2, 0, order) == [0, 4]      # places 0, 1
    assert mutation.deal_sites(5, 2, 1, order) == [1, 3]      # places 2, 3
    assert mutation.deal_sites(5, 2, 2, order) == [2, 4]      # places 4, 0 (the pool wraps)
    assert mutation.deal_sites(2, 3, 7, order) == [0, 1]      # fewer sites than asked: all of them


def test_seeds_draw_different_mutants_where_the_pool_allows():
    for op in ("type_error", "swap_update", "drop_guard"):
        drawn = [{m.site for m in mutation.draw_mutants(specs.MUTEX, op, 2, s, np.random.default_rng(9))}
                 for s in range(3)]
        assert len(mutation.SITES[op](specs.MUTEX)) >= 6
        assert drawn[0].isdisjoint(drawn[1]) and drawn[1].isdisjoint(drawn[2]) and drawn[0].isdisjoint(drawn[2])
    ring = [{m.site for m in mutation.draw_mutants(specs.RINGBUFFER, "drop_guard", 2, s, np.random.default_rng(9))}
            for s in range(2)]
    assert ring[0] != ring[1] and len(ring[0] | ring[1]) == 4  # 4 guard sites, dealt 2 and 2


def test_drop_guard_also_weakens_strict_bounds():
    sites = [m.site for m in mutation.drop_guard(specs.RINGBUFFER)]
    assert sites == ["Produce: without count < Cap", "Produce: count < Cap weakened to count <= Cap",
                     "Consume: without count > 0", "Consume: count > 0 weakened to count >= 0"]
    weak = next(m for m in mutation.drop_guard(specs.RINGBUFFER) if "<=" in m.site)
    assert "Produce(v) == count <= Cap /\\ " in specs.render(weak.spec)


def test_renaming_is_consistent_and_complete():
    mapping = {v: specs.RENAMING[v] for v in specs.MUTEX.variables}
    text = specs.render(specs.rename_variables(specs.MUTEX, mapping))
    assert "VARIABLES holder, waiters, where" in text
    assert "Head(waiters)" in text and "Tail(waiters)" in text          # operators keep their names
    for old in specs.MUTEX.variables:
        assert not re.search(rf"\b{old}\b", text.split("\n", 3)[3])    # no old name after the header lines
    system = specs.rename_system(specs.systems(2, 2, 2)["mutex"], mapping)
    assert system.variables == ("holder", "waiters", "where") and "Len(waiters)" in system.bound
    assert system.invariants["NoWaitersWhenFree"] == "holder = 0 => waiters = <<>>"
    assert specs.rename_in("count + counter", {"count": "used"}) == "used + counter"


def test_reorder_keeps_every_conjunct_and_disjunct_and_changes_the_text():
    for spec in specs.REFERENCE.values():
        new = specs.reorder(spec, np.random.default_rng(0))
        assert specs.render(new) != specs.render(spec) and sorted(new.in_next) == sorted(spec.in_next)
        for a in spec.actions:
            b = new.action(a.name)
            assert sorted(b.guards) == sorted(a.guards) and sorted(b.updates) == sorted(a.updates)


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
