"""Great Expectations suites for the refinestat tables (the bundled inputs and what the steps write)."""

from __future__ import annotations

from typing import Any

ROLES = ["fit", "heldout"]
ARMS = ["unconstrained", "syntax", "refinestat", "expert", "misspecified", "null", "scripted_unconstrained",
        "scripted_syntax", "scripted_refinestat"]
OUTCOMES = ["ok", "error", "cpu", "timeout", "memory", "crash", "none"]


def eight_schools_suite() -> list[Any]:
    """The bundled Eight Schools table: 8 schools, an effect and a positive standard error each."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableColumnsToMatchSet(column_set=["school", "y", "sigma"], exact_match=True),
            gxe.ExpectTableRowCountToEqual(value=8),
            gxe.ExpectColumnValuesToBeUnique(column="school"),
            gxe.ExpectColumnValuesToBeBetween(column="y", min_value=-50, max_value=100),
            gxe.ExpectColumnValuesToBeBetween(column="sigma", min_value=1, max_value=50)]


def dugongs_suite() -> list[Any]:
    """The bundled Dugongs table: 27 animals, age in years and length in metres."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableColumnsToMatchSet(column_set=["age", "length"], exact_match=True),
            gxe.ExpectTableRowCountToEqual(value=27),
            gxe.ExpectColumnValuesToBeBetween(column="age", min_value=0.5, max_value=40),
            gxe.ExpectColumnValuesToBeBetween(column="length", min_value=1.0, max_value=3.5)]


def diabetes_suite() -> list[Any]:
    """scikit-learn's bundled diabetes table (the two columns used): 442 patients, raw BMI and progression."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableRowCountToEqual(value=442),
            gxe.ExpectColumnValuesToBeBetween(column="bmi", min_value=15, max_value=50),
            gxe.ExpectColumnValuesToBeBetween(column="target", min_value=20, max_value=400)]


def tasks_suite(n_rows: int, tasks: list[str]) -> list[Any]:
    """``tasks``: long format, one value per (task, split, role, row, variable)."""
    import great_expectations.expectations as gxe

    cols = ["task", "split", "role", "row", "variable", "value"]
    return [gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
            gxe.ExpectTableRowCountToEqual(value=n_rows),
            gxe.ExpectColumnValuesToBeInSet(column="task", value_set=tasks),
            gxe.ExpectColumnValuesToBeInSet(column="role", value_set=ROLES),
            gxe.ExpectColumnValuesToBeBetween(column="split", min_value=0, max_value=19),
            gxe.ExpectColumnValuesToBeBetween(column="value", min_value=-1000, max_value=1000),
            *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["task", "split", "role", "row", "variable"])]


def programs_suite(n_rows: int) -> list[Any]:
    """``programs``: one row per (seed, task, arm, attempt): the returned program and how it fared."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableRowCountToEqual(value=n_rows),
            gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=ARMS),
            gxe.ExpectColumnValuesToBeInSet(column="outcome", value_set=OUTCOMES),
            gxe.ExpectColumnValuesToBeBetween(column="score", min_value=-1, max_value=7),
            gxe.ExpectColumnValuesToBeBetween(column="tokens", min_value=0, max_value=20000),
            gxe.ExpectColumnValuesToBeInSet(column="runnable", value_set=[True, False]),
            gxe.ExpectColumnValuesToNotBeNull(column="program"),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "task", "arm", "attempt"])]


def versions_suite(n_rows: int) -> list[Any]:
    """``versions``: one row per sandbox run (every draft and refinement of every attempt)."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableRowCountToEqual(value=n_rows),
            gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=ARMS),
            gxe.ExpectColumnValuesToBeInSet(column="outcome", value_set=OUTCOMES),
            gxe.ExpectColumnValuesToBeBetween(column="score", min_value=-1, max_value=7),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "task", "arm", "attempt", "version"])]
