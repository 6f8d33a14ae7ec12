"""Great Expectations suites for the relash tables."""

from __future__ import annotations

from typing import Any


def hyperlinks_suite() -> list[Any]:
    """``hyperlinks``: distinct node sets (≥ 2 members) per data set, attributes in range, a split label."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "members", "size", "first_t", "count", "first_day_count", "time_of_day", "log_duration", "split"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToBeBetween(min_value=30),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["dataset", "members"]),
        gxe.ExpectColumnValuesToMatchRegex(column="members", regex=r"^\d+( \d+)+$"),
        gxe.ExpectColumnValuesToBeBetween(column="size", min_value=2),
        gxe.ExpectColumnValuesToBeBetween(column="time_of_day", min_value=0, max_value=24),
        gxe.ExpectColumnValuesToBeBetween(column="log_duration", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="first_day_count", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
    ]


def nodes_suite() -> list[Any]:
    """``nodes``: one row per (data set, node index) with its class and fixed spectral features."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnToExist(column="f0"),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("dataset", "node", "index", "cls", "class_index")],
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["dataset", "index"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["dataset", "node"]),
        gxe.ExpectColumnValuesToBeBetween(column="index", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="class_index", min_value=0),
    ]


def train_log_suite() -> list[Any]:
    """Losses are finite numbers."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "seed_index", "model", "step", "loss"]
    return [gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
            *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
            gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=-1e6, max_value=1e6)]


def samples_suite() -> list[Any]:
    """``samples``: decoded hyperlinks have at least two members; sizes agree with the member lists."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "method", "members", "size", "time_of_day", "log_duration"]
    return [gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
            *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
            gxe.ExpectColumnValuesToMatchRegex(column="members", regex=r"^\d+( \d+)+$"),
            gxe.ExpectColumnValuesToBeBetween(column="size", min_value=2),
            gxe.ExpectColumnValuesToBeInSet(column="method", value_set=["null", "gaussian", "vae", "relash"])]
