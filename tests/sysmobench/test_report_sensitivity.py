"""The report's definitions and tables on made-up score tables: what counts as a catch (a limit does not), the
ordering on mutants SANY accepts, specificity, the invariant endings, mutants per seed, the earlier rule's
outcome, and Student-t intervals."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.sysmobench.config import load_report
from stages.sysmobench.report import (
    by_construction,
    caught_by,
    evaluation_budget,
    invariant_split,
    mutant_draws,
    ordering_share,
    rule_history,
    specificity,
    t_intervals,
    verdict_metrics,
)
from tests.conftest import ROOT

OK = "sany=ok runtime=ok conformance=ok invariants={}"


def cand(seed: int, op: str, invariants: float, outcome: str, parses: bool = True, syntax: float = 1.0,
         runtime: float = 1.0, conformance: float = 1.0, kind: str = "mutant", site: str = "s",
         equivalent: bool = False, system: str = "ringbuffer") -> dict:
    return {"seed_index": seed, "system": system, "candidate": 0, "kind": kind, "operator": op, "site": site,
            "renaming": "{}", "equivalent": equivalent, "whole_module_parses": parses, "syntax": syntax,
            "runtime": runtime, "conformance": conformance, "invariants": invariants, "outcomes": outcome,
            "spec": ""}


MUTANTS = pd.DataFrame([
    cand(0, "drop_guard", 0.5, OK.format("violated"), site="a"),
    cand(0, "drop_guard", 0.0, OK.format("timeout"), site="b"),
    cand(0, "drop_guard", 0.0, OK.format("error"), site="c"),
    cand(0, "drop_guard", 1.0, OK.format("ok"), site="d"),
    cand(1, "drop_guard", 0.2, OK.format("violated"), site="a"),
    cand(1, "rename_variable", 0.0, "sany=error", parses=False, syntax=0.5, runtime=0.0, conformance=0.0),
    cand(1, "remove_action", 1.0, OK.format("ok"), runtime=0.75, conformance=0.8),
])


def test_only_a_decided_run_is_a_catch():
    assert caught_by(0.5, OK.format("violated"), "invariants")
    assert not caught_by(0.0, OK.format("timeout"), "invariants")     # a limit hit is unclear, not a catch
    assert not caught_by(0.0, OK.format("error"), "invariants")       # an evaluation error is no violation
    assert not caught_by(1.0, OK.format("ok"), "invariants")
    assert caught_by(0.5, "sany=error", "syntax")
    assert not caught_by(0.0, "sany=error", "runtime")                # never ran
    assert caught_by(0.5, "sany=ok runtime=error conformance=ok invariants=ok", "runtime")
    assert not caught_by(0.0, "sany=ok runtime=timeout conformance=ok invariants=ok", "runtime")


def test_drop_guard_share_counts_violations_only():
    per_seed = verdict_metrics(pd.concat([MUTANTS, pd.DataFrame([cand(s, "none", 1.0, OK.format("ok"),
                                                                      kind="reference") for s in (0, 1)])]),
                               ["drop_guard"])
    assert per_seed["caught_drop_guard"] == pytest.approx([0.25, 1.0])


def test_ordering_leaves_out_mutants_sany_rejects():
    # seed 1: the drop_guard mutant is in order, the remove_action one is not (runtime 0.75 < conformance 0.8);
    # the SANY failure would be in order by construction (2 of 3) and is not counted
    assert ordering_share(MUTANTS[MUTANTS.seed_index == 1]) == 0.5


def test_specificity_is_the_share_scored_one():
    neutral = pd.DataFrame([cand(0, "none", 1.0, OK.format("ok"), kind="renamed"),
                            cand(0, "none", 1.0, OK.format("ok"), kind="reordered", runtime=0.5),
                            cand(0, "drop_guard", 1.0, OK.format("ok"), equivalent=True)])
    assert specificity(neutral, "runtime") == pytest.approx(2 / 3) and specificity(neutral, "syntax") == 1.0


def test_invariant_split_counts_each_ending():
    rows = {(r["operator"], r["seed"]): r for r in invariant_split(MUTANTS)}
    assert rows[("drop_guard", 0)] == {"operator": "drop_guard", "seed": 0, "mutants": 4, "violated (caught)": 1,
                                       "all confirmed": 1, "limit (unclear)": 1, "evaluation error": 1,
                                       "not run (SANY failed)": 0}
    assert rows[("rename_variable", 1)]["not run (SANY failed)"] == 1


def test_mutant_draws_count_distinct_and_shared_sites():
    assert mutant_draws(MUTANTS) == [
        {"seed": 0, "drawn": 4, "distinct": 4, "also on another seed": 1},     # site a is on seed 1 too
        {"seed": 1, "drawn": 3, "distinct": 3, "also on another seed": 1}]


def test_by_construction_counts():
    assert by_construction(MUTANTS) == {"rename_variable": 1, "remove_action": 1, "ordering_caught": 6,
                                        "ordering_sany_fails": 1}


def test_the_earlier_rule_counts_a_time_limit_as_a_catch():
    # three seeds where every drop_guard mutant hits its limit: the earlier rule calls it caught, the new one not
    rows = []
    for s in range(3):
        rows.append(cand(s, "none", 1.0, OK.format("ok"), kind="reference"))
        rows += [cand(s, "none", 1.0, OK.format("ok"), kind=k) for k in ("renamed", "reordered")]
        rows.append(cand(s, "rename_variable", 0.0, "sany=error", parses=False, syntax=0.5, runtime=0.0,
                         conformance=0.0))
        rows.append(cand(s, "type_error", 0.0, "sany=ok runtime=error conformance=error invariants=error",
                         runtime=0.5, conformance=0.1))
        rows.append(cand(s, "remove_action", 1.0, OK.format("ok"), runtime=0.5, conformance=0.1))
        rows.append(cand(s, "swap_update", 1.0, OK.format("ok"), runtime=1.0, conformance=0.1))
        rows.append(cand(s, "drop_guard", 0.0, OK.format("timeout")))
    scores = pd.DataFrame(rows)
    cfg = load_report(ROOT / "params.yaml")
    ops = ["rename_variable", "type_error", "remove_action", "swap_update", "drop_guard"]
    [old] = rule_history(scores, ops, cfg.previous_rules, cfg.gates)
    assert old["outcome_now"] == "reproduced"
    assert verdict_metrics(scores, ops)["caught_drop_guard"] == [0.0, 0.0, 0.0]


def test_t_intervals_hand_computed():
    rows = t_intervals({"m": [0.9, 1.0, 0.95], "single": [1.0]}, {"check": "m", "one seed": "single"})
    assert len(rows) == 1  # one seed has no interval
    # mean 0.95, sd 0.05, t(0.975, 2) = 4.3027, half width 4.3027 * 0.05 / sqrt(3) = 0.1242
    assert rows[0]["95% t-interval"] == "[0.826, 1.074]"


def test_evaluation_budget_by_hand():
    half = "---- MODULE Spinlock ----\nVARIABLES locked, pc\nAcquire(p) == locked' = TRUE\nRelease(p) == \n===="
    scores = pd.DataFrame([
        cand(0, "none", 1.0, OK.format("ok"), kind="reference", system="spinlock"),        # SANY + 3 TLC: 4
        cand(0, "none", 1.0, OK.format("ok"), kind="renamed", system="spinlock"),          # 4
        cand(0, "drop_guard", 0.5, OK.format("violated"), system="spinlock"),              # + equivalence: 5
        {**cand(0, "rename_variable", 0.0, "sany=error", parses=False, system="spinlock"), "spec": half},  # 1 + 2
        cand(0, "none", 0.0, "sany=error", parses=False, kind="generated", system="spinlock"),  # no action: 1
        cand(0, "swap_update", 1.0, OK.format("ok"), system="ringbuffer"),                 # 5
    ])
    budget = evaluation_budget(scores, cpu_s=10, workers=2)
    # 4 + 4 + 5 + 3 + 1 + 5 = 22 candidate runs, plus one reference exploration per system (2): 24 runs
    assert budget == {"runs": 24, "cpu_s": 10, "workers": 2, "bound_s": 120.0}
