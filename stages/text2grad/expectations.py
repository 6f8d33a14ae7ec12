"""Great Expectations suites for the text2grad tables."""

from __future__ import annotations

from typing import Any

SOURCE_SPLITS = ["ppo", "test"]
OUTPUT_SPLITS = ["sft", "rm_train", "rm_test"]
SOURCE = r"^([a-z]+ ){4,5}\.( ([a-z]+ ){4,5}\.)*$"
SUMMARY = r"^([a-z]+ ){4}\.( ([a-z]+ ){4}\.)*$"


def sources_suite(n_rows: int) -> list[Any]:
    """``sources``: PPO and test prompts with their reference summaries."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "id", "source", "reference"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SOURCE_SPLITS),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "id"]),
        gxe.ExpectColumnValuesToMatchRegex(column="source", regex=SOURCE),
        gxe.ExpectColumnValuesToMatchRegex(column="reference", regex=SUMMARY),
    ]


def outputs_suite(n_rows: int) -> list[Any]:
    """``outputs``: noisy summaries with the critic's JSON and word scores (one per output word)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "id", "source", "reference", "output", "annotation",
                                                     "critique", "word_scores", "n_words"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=OUTPUT_SPLITS),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "id"]),
        gxe.ExpectColumnValuesToMatchRegex(column="source", regex=SOURCE),
        gxe.ExpectColumnValuesToMatchRegex(column="annotation", regex=r'^\{"critique": ".*", "good_spans": \[.*\], '
                                                                      r'"poor_spans": \[.*\]\}$'),
        gxe.ExpectColumnValuesToMatchRegex(column="critique", regex=r"missing [0-9] \.$"),
        gxe.ExpectColumnValuesToMatchRegex(column="word_scores", regex=r"^(-?[01]( -?[01])*)?$"),
        gxe.ExpectColumnValuesToBeBetween(column="n_words", min_value=0, max_value=60),
    ]


def curves_suite(n_rows: int) -> list[Any]:
    """``curves``: test metrics of every (scheme, seed) at every evaluation step."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["scheme", "seed", "step", "rouge_l", "rouge_p", "rouge_r",
                                                     "fact_f1", "reward", "kl", "length"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["scheme", "seed", "step"]),
        gxe.ExpectColumnValuesToBeBetween(column="rouge_l", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="rouge_p", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="rouge_r", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="fact_f1", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="kl"),
    ]
