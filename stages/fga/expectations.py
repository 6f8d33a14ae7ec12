"""Great Expectations suites for the fga tables."""

from __future__ import annotations

from typing import Any

ROLE_SET = ["clip", "pool", "val", "test"]
KINDS = ["clean", "blur", "noise", "invert", "pixelate", "occlude", "fog"]


def splits_suite(n_rows: int) -> list[Any]:
    """``splits``: one row per image used: role, asset split, index in it (unique per split), label."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["role", "source", "index", "label"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="role", value_set=ROLE_SET),
        gxe.ExpectColumnValuesToBeInSet(column="source", value_set=["train", "test"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["source", "index"]),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=9),
        gxe.ExpectColumnValuesToBeBetween(column="index", min_value=0),
    ]


def views_suite(n_rows: int) -> list[Any]:
    """``views``: one row per (image, condition) whose view embeddings are cached."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["tensor", "row", "role", "kind", "severity", "image", "label"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="tensor", value_set=["pool", "views"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["tensor", "row"]),
        gxe.ExpectColumnValuesToBeInSet(column="role", value_set=ROLE_SET),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=KINDS),
        gxe.ExpectColumnValuesToBeBetween(column="severity", min_value=0, max_value=3),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=9),
    ]


def clip_log_suite(n_rows: int) -> list[Any]:
    """``clip_log``: finite non-negative CLIP losses per logged step."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["step", "loss"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="step"),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=1e4),
    ]


def results_suite(n_rows: int, methods: list[str]) -> list[Any]:
    """``results``: one accuracy in [0, 1] per (seed, method, kind, severity) on the test or validation shifts."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "split", "method", "kind", "severity",
                                                     "accuracy", "n_images"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="method", value_set=methods),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["val", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="accuracy", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="accuracy"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "split", "method", "kind", "severity"]),
    ]
