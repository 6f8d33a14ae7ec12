"""Great Expectations suites for the mtd_mirror_descent tables."""

from __future__ import annotations

from typing import Any

# columns of the tables read by more than one step (readers ask for them by name)
PI_COLUMNS = ("from_token", "to_token", "prob")
TRAIN_LOG_COLUMNS = ("model", "seed_index", "step", "loss")


def transition_suite(q: int) -> list[Any]:
    """``pi``: q × q strictly positive transition probabilities."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=list(PI_COLUMNS), exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=q * q),
        gxe.ExpectColumnValuesToBeBetween(column="from_token", min_value=0, max_value=q - 1),
        gxe.ExpectColumnValuesToBeBetween(column="to_token", min_value=0, max_value=q - 1),
        gxe.ExpectColumnValuesToBeBetween(column="prob", min_value=0, strict_min=True, max_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["from_token", "to_token"]),
    ]


def sequences_suite(m: int, n_rows: int) -> list[Any]:
    """``sequences``: one row per sequence with its true mixture weights λ."""
    import great_expectations.expectations as gxe

    lam = [f"lambda_{g}" for g in range(1, m + 1)]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "seq_id", *lam], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "seq_id"]),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1) for c in lam],
    ]


def tokens_suite(q: int, seq_len: int, n_rows: int) -> list[Any]:
    """``tokens``: long format (split, seq_id, pos, token); every sequence has seq_len tokens."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "seq_id", "pos", "token"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="token", min_value=0, max_value=q - 1),
        gxe.ExpectColumnValuesToBeBetween(column="pos", min_value=0, max_value=seq_len - 1),
        gxe.ExpectColumnValuesToNotBeNull(column="token"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "seq_id", "pos"]),
    ]
