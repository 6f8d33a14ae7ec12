"""Great Expectations suites for the espo tables."""

from __future__ import annotations

from typing import Any


def sudoku_suite(n_rows: int) -> list[Any]:
    """``sudoku``: puzzles of 16 digits (0 = blank) with their 16-digit solution grid."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "grid_id", "puzzle_id", "puzzle", "solution",
                                                     "n_blanks"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
        gxe.ExpectColumnValuesToMatchRegex(column="puzzle", regex=r"^[0-4]{16}$"),
        gxe.ExpectColumnValuesToMatchRegex(column="solution", regex=r"^[1-4]{16}$"),
        gxe.ExpectColumnValuesToBeBetween(column="grid_id", min_value=0, max_value=287),
        gxe.ExpectColumnValuesToBeBetween(column="n_blanks", min_value=1, max_value=12),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "puzzle_id"]),
    ]


def countdown_suite(n_rows: int, max_number: int, max_target: int) -> list[Any]:
    """``countdown``: three numbers, a reachable target and one solving equation."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "triple_id", "example_id", "a", "b", "c", "target",
                                                     "solution"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=1, max_value=max_number) for c in "abc"],
        gxe.ExpectColumnValuesToBeBetween(column="target", min_value=1, max_value=max_target),
        gxe.ExpectColumnValuesToMatchRegex(column="solution", regex=r"^\(\d+[-+*/]\d+\)[-+*/]\d+$"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "example_id"]),
    ]


# the columns rl writes to ``rl_log``; its readers ask for them by name, so a table without one is refused
RL_LOG_COLUMNS = ("iteration", "reward", "success", "loss", "clip_fraction", "log_ratio_std", "kl", "log_ratio_max",
                  "last_clip_fraction", "last_log_ratio_std", "logp_minus_ref", "run", "task", "variant",
                  "seed_index")


def rl_log_suite(n_rows: int) -> list[Any]:
    """``rl_log``: one row per (run, iteration): mean reward in [0, 1], clip fractions in [0, 1], ratio spread ≥ 0."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=list(RL_LOG_COLUMNS), exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="reward", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="iteration", min_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectColumnValuesToBeBetween(column="clip_fraction", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="last_clip_fraction", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="log_ratio_std", min_value=0),
        gxe.ExpectColumnValuesToNotBeNull(column="kl"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["run", "iteration"]),
    ]
