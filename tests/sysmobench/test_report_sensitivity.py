"""The report's sensitivity tables: invariant catches split by TLC's ending, violations-only shares, the mutants
passing checks by construction, and Student-t intervals, on made-up score tables."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.sysmobench.report import by_construction, invariant_split, t_intervals, violation_only_share


def mutant(seed: int, op: str, invariants: float, outcome: str, parses: bool = True, syntax: float = 1.0,
           runtime: float = 1.0, conformance: float = 1.0) -> dict:
    return {"seed_index": seed, "system": "ringbuffer", "kind": "mutant", "operator": op, "equivalent": False,
            "whole_module_parses": parses, "syntax": syntax, "runtime": runtime, "conformance": conformance,
            "invariants": invariants, "outcomes": outcome}


MUTANTS = pd.DataFrame([
    mutant(0, "drop_guard", 0.5, "sany=ok runtime=ok conformance=ok invariants=violated"),
    mutant(0, "drop_guard", 0.0, "sany=ok runtime=ok conformance=ok invariants=timeout"),
    mutant(0, "drop_guard", 0.0, "sany=ok runtime=ok conformance=ok invariants=error"),
    mutant(0, "drop_guard", 1.0, "sany=ok runtime=ok conformance=ok invariants=ok"),
    mutant(1, "drop_guard", 0.2, "sany=ok runtime=ok conformance=ok invariants=violated"),
    mutant(1, "rename_variable", 0.0, "sany=error", parses=False, syntax=0.5, runtime=0.0, conformance=0.0),
    mutant(1, "remove_action", 1.0, "sany=ok runtime=ok conformance=ok invariants=ok", runtime=0.75),
])


def test_invariant_split_counts_each_ending():
    rows = {(r["operator"], r["seed"]): r for r in invariant_split(MUTANTS)}
    assert rows[("drop_guard", 0)] == {"operator": "drop_guard", "seed": 0, "mutants": 4, "caught": 3,
                                       "violated": 1, "limit/error": 2, "not run (SANY failed)": 0}
    assert rows[("rename_variable", 1)]["not run (SANY failed)"] == 1
    assert rows[("remove_action", 1)]["caught"] == 0


def test_violation_only_share_per_seed():
    assert violation_only_share(MUTANTS, "drop_guard") == pytest.approx([0.25, 1.0])


def test_by_construction_counts():
    assert by_construction(MUTANTS) == {"rename_variable": 1, "remove_action": 1, "ordering_caught": 6,
                                        "ordering_sany_fails": 1}


def test_t_intervals_hand_computed():
    rows = t_intervals({"m": [0.9, 1.0, 0.95], "single": [1.0]}, {"check": "m", "one seed": "single"})
    assert len(rows) == 1  # one seed has no interval
    # mean 0.95, sd 0.05, t(0.975, 2) = 4.3027, half width 4.3027 * 0.05 / sqrt(3) = 0.1242
    assert rows[0]["95% t-interval"] == "[0.826, 1.074]"
