"""Great Expectations suites for the sysmobench tables."""

from __future__ import annotations

from typing import Any

ACTIONS = ["Init", "Acquire", "Release", "Lock", "Wait", "Unlock", "Handoff", "Produce", "Consume", "Join", "Defer",
           "Declare", "Crash"]
SYSTEMS = ["spinlock", "mutex", "ringbuffer", "election"]
KINDS = ["reference", "renamed", "reordered", "mutant", "generated"]
GENERATORS = ["smollm2-135m", "http-endpoint"]
OPERATORS = ["none", "rename_variable", "type_error", "remove_action", "swap_update", "drop_guard"]
METRICS = ["syntax", "runtime", "conformance", "invariants"]


def traces_suite(n_rows: int) -> list[Any]:
    """``traces``: one row per logged step (step 0 is the initial state) of each seeded execution."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "system", "trace", "step", "action", "args",
                                                     "state"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="system", value_set=SYSTEMS),
        gxe.ExpectColumnValuesToBeInSet(column="action", value_set=ACTIONS),
        gxe.ExpectColumnValuesToBeBetween(column="step", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="seed_index", min_value=0),
        gxe.ExpectColumnValuesToNotBeNull(column="state"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "system", "trace", "step"]),
    ]


def scores_suite(n_rows: int) -> list[Any]:
    """``scores``: the four metrics in [0, 1] of every candidate spec, per seed and system."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "system", "candidate", "kind", "operator", "site",
                                                     "renaming", "equivalent", "whole_module_parses", *METRICS,
                                                     "outcomes", "spec"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="system", value_set=SYSTEMS),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=KINDS),
        gxe.ExpectColumnValuesToBeInSet(column="operator", value_set=OPERATORS),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "system", "candidate"]),
        *(gxe.ExpectColumnValuesToBeBetween(column=m, min_value=0, max_value=1) for m in METRICS),
        *(gxe.ExpectColumnValuesToNotBeNull(column=m) for m in METRICS),
        gxe.ExpectColumnValuesToNotBeNull(column="renaming"),
    ]


def generated_suite(n_rows: int) -> list[Any]:
    """``generated``: one spec per generator, seed and system, with the prompt it answered."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "system", "generator", "prompt", "reply", "spec"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="system", value_set=SYSTEMS),
        gxe.ExpectColumnValuesToBeInSet(column="generator", value_set=GENERATORS),
        gxe.ExpectColumnValuesToNotBeNull(column="spec"),
        gxe.ExpectColumnValuesToNotBeNull(column="prompt"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "system", "generator"]),
    ]
