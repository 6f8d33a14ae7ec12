"""The leader election (the ``paper`` profile's fourth system): its implementation keeps its invariants, its
reference spec scores 1 with the real SANY and TLC, one mutant of each operator is caught by its metric, every
dropped guard is an invariant violation and no mutant is equivalent, and trace validation accepts a real
election and rejects a corrupted one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stages.assets.loaders import load_tla_tools
from stages.sysmobench import metrics, mutation, specs
from stages.sysmobench.config import load_evaluate, load_traces
from stages.sysmobench.generators import CLASSES, EXAMPLE_OF, spec_prompt
from stages.sysmobench.implementations import LeaderElection, execute
from stages.sysmobench.tla import Tools
from tests.conftest import write_params

SIM = metrics.Simulation(traces=20, depth=12, seed=7)
NODES = 3


@pytest.fixture(scope="module")
def tools(tla_tools_asset):
    return Tools(load_tla_tools(tla_tools_asset), "java", 256, 20, 120.0)


@pytest.fixture(scope="module")
def election():
    return specs.systems(NODES, 2, 2)["election"]


def election_traces(n: int = 2, steps: int = 12, seed: int = 3) -> list[list[dict[str, str]]]:
    gen = np.random.default_rng(seed)
    return [[s["state"] for s in execute("election", steps, gen, NODES, 2, 2)] for _ in range(n)]


def mutant(operator: str, site: str) -> str:
    return specs.render(next(m.spec for m in mutation.SITES[operator](specs.ELECTION) if m.site == site))


def as_python(literal: str) -> list:
    """A logged TLA+ sequence of strings or numbers as a Python list."""
    return json.loads(literal.replace("<<", "[").replace(">>", "]"))


def test_the_election_is_registered_like_the_other_systems():
    assert specs.REFERENCE["election"] is specs.ELECTION and CLASSES["election"] is LeaderElection
    system = specs.systems(NODES, 2, 2)["election"]
    assert system.constants == {"Nodes": "{1, 2, 3}"} and system.actions == specs.ELECTION.in_next
    assert system.bound == "live + 1 \\in 0..(Cardinality(Nodes) + 2)"    # live one step beyond 0..N
    assert set(specs.ELECTION.variables) <= set(specs.RENAMING) and EXAMPLE_OF["election"] != "election"
    prompt = spec_prompt(system, specs.systems(NODES, 2, 2)[EXAMPLE_OF["election"]])
    assert "class LeaderElection" in prompt and "Declare(n)" in prompt and "MODULE Election" not in prompt


def test_each_operator_has_sites_on_the_election():
    made = {op: len(mutation.SITES[op](specs.ELECTION)) for op in mutation.OPERATORS}
    # 4 actions of 1 parameter; 8 updates; role updated by all 4 actions (12 swaps), leader and live by 2 each
    assert made == {"rename_variable": 7, "type_error": 8, "remove_action": 4, "swap_update": 16, "drop_guard": 7}


def test_executions_are_seeded_and_keep_the_election_invariants():
    a = execute("election", 200, np.random.default_rng(5), NODES, 2, 2)
    assert a == execute("election", 200, np.random.default_rng(5), NODES, 2, 2) and a[0]["action"] == "Init"
    assert {s["action"] for s in a} == {"Init", "Join", "Defer", "Declare", "Crash"}
    for step in a:
        role, leader, live = (as_python(step["state"][v]) for v in ("role", "leader", "live"))
        assert role.count("leading") <= 1                                       # AtMostOneLeader
        assert live == sum(r != "down" for r in role)                           # LiveCount
        for k, (r, known) in enumerate(zip(role, leader, strict=True), start=1):
            assert known == 0 or (role[known - 1] == "leading" and known >= k)  # KnownLeaderLeads
            assert r != "leading" or known == k                                 # LeaderKnowsItself
            assert r not in ("down", "candidate") or known == 0                 # OnlyFollowersHaveALeader
            if r == "follower" and known == 0:                                  # WaitingFollowerHasAHigherNode
                assert any(x != "down" for x in role[k:])


def test_reference_scores_one_on_every_metric_with_three_nodes(tools, election):
    scores = metrics.score(tools, election, specs.render(specs.ELECTION), election_traces(), SIM)
    assert scores.as_dict() == {"syntax": 1.0, "runtime": 1.0, "conformance": 1.0, "invariants": 1.0}
    reference, _ = metrics.transitions(tools, election, specs.render(specs.ELECTION))
    assert reference is not None and len(reference) == 169


def test_rename_variable_is_caught_by_syntax(tools, election):
    text = mutant("rename_variable", "Crash: leader in the update of role")
    syntax, whole = metrics.syntax_score(tools, election, text)
    assert not whole and syntax == 0.75                                         # Join, Defer, Declare parse alone


def test_type_error_is_caught_by_runtime(tools, election):
    runtime, outcome = metrics.runtime_score(tools, election, mutant("type_error", "Crash: leader' = \"undefined\""),
                                             SIM)
    # the next Crash reads every node's known leader from a string; the error trace before it holds 2 actions
    assert outcome == "error" and runtime == 0.5


def test_remove_action_is_caught_by_runtime(tools, election):
    runtime, outcome = metrics.runtime_score(tools, election, mutant("remove_action", "Declare not in Next"), SIM)
    assert outcome == "ok" and runtime == 0.75


def test_swap_update_is_caught_by_conformance(tools, election):
    # a crash that makes the crashed node every live node's leader: each trace is accepted up to its first crash
    text = mutant("swap_update", "Crash: leader' as in Declare")
    conformance, outcome = metrics.conformance_score(tools, election, text, election_traces())
    assert outcome == "ok" and conformance == 0.25


def test_drop_guard_is_caught_by_invariants(tools, election):
    text = mutant("drop_guard", 'Declare: without (\\A m \\in Nodes : role[m] # "down" => m <= n)')
    invariants, outcome = metrics.invariants_score(tools, election, text)
    # a node declares while a higher one is up and follows it: KnownLeaderLeads (a leader below its follower)
    assert outcome == "violated" and invariants == pytest.approx(6 / 7)


def test_every_dropped_guard_is_a_violation_and_no_mutant_is_equivalent(tools, election):
    reference, _ = metrics.transitions(tools, election, specs.render(specs.ELECTION))
    for m in mutation.SITES["drop_guard"](specs.ELECTION):
        invariants, outcome = metrics.invariants_score(tools, election, specs.render(m.spec))
        assert outcome == "violated" and invariants < 1.0, m.site
        assert metrics.transitions(tools, election, specs.render(m.spec))[0] != reference, m.site


def test_trace_validation_accepts_a_real_election_and_rejects_a_corrupted_one(tools, election):
    reference = specs.render(specs.ELECTION)
    trace = election_traces(n=1, steps=8)[0]
    assert metrics.conformance_score(tools, election, reference, [trace])[0] == 1.0
    bad = [dict(s) for s in trace]
    bad[5]["live"] = str(int(bad[5]["live"]) + 1)             # the live count logged wrongly at step 5
    score, _ = metrics.conformance_score(tools, election, reference, [bad])
    assert score == pytest.approx(4 / 8)                      # steps 1..4 accepted, step 5 is not, nothing after it


def test_the_paper_profile_adds_the_election_and_the_default_keeps_three_systems(tmp_path):
    paper = load_traces(write_params(tmp_path, profile="paper"))
    assert paper.systems == ["spinlock", "mutex", "ringbuffer", "election"] and paper.n_seeds >= 3
    default = load_evaluate(write_params(tmp_path, profile="default"))
    assert default.traces.systems == ["spinlock", "mutex", "ringbuffer"]
