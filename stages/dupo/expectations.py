"""Great Expectations suites for the dupo tables."""

from __future__ import annotations

from typing import Any

SPLITS = ["sft", "rl", "val", "test"]


def problems_suite(n_rows: int) -> list[Any]:
    """``problems``: one row per word problem, its worked solution and its answer."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "problem_id", "signature", "numbers", "text",
                                                     "solution", "answer"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeUnique(column="problem_id"),
        gxe.ExpectColumnValuesToMatchRegex(column="signature", regex=r"^start(-(add|sub|mul|fdiv|mod))+$"),
        gxe.ExpectColumnValuesToMatchRegex(column="numbers", regex=r"^\d+(,\d+)+$"),
        gxe.ExpectColumnValuesToMatchRegex(column="solution", regex=r"^(\d+[-+*/%]\d+=\d+)(,\d+[-+*/%]\d+=\d+)*#\d+$"),
        gxe.ExpectColumnValuesToBeBetween(column="answer", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["signature", "numbers"]),
    ]


def duals_suite(n_rows: int, max_pass_share: float) -> list[Any]:
    """``duals``: one row per (problem, masked number); the filter must reject at least the configured share."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "problem_id", "mask_index", "op", "hidden",
                                                     "masked_text", "n_solutions", "passes_filter", "solution"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeBetween(column="n_solutions", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="passes_filter", value_set=[0, 1]),
        gxe.ExpectColumnMeanToBeBetween(column="passes_filter", min_value=0, max_value=max_pass_share),
        gxe.ExpectColumnValuesToMatchRegex(column="masked_text", regex=r"\?"),
        gxe.ExpectColumnValuesToMatchRegex(column="solution", regex=r"#\d+$"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["problem_id", "mask_index"]),
    ]


def sft_log_suite(n_rows: int) -> list[Any]:
    """``sft_log``: one row per SFT step with a finite loss."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0),
    ]


def rl_log_suite(n_rows: int) -> list[Any]:
    """``rl_log``: one row per (run, step): rewards and accuracies in [0, 1], clip fraction in [0, 1]."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("reward", "oracle_accuracy", "dual_reward", "parsed", "clip_fraction")],
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectColumnValuesToNotBeNull(column="kl"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["run", "step"]),
    ]
