"""Great Expectations suites for the sci2pol tables."""

from __future__ import annotations

from typing import Any

PAIR_COLUMNS = ["set", "did", "pid", "text", "is_long", "kind", "source_pid", "paper_text"]
KINDS = ["gold", "missing_section", "unsupported_number", "reversed_finding", "off_topic", "verbatim_copy"]


def pairs_suite(n_rows: int) -> list[Any]:
    """``pairs``: curated (funnel output) and unfiltered (linked only, same count) training pairs, and the
    held-out gold briefs (``val``)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=PAIR_COLUMNS, exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="set", value_set=["curated", "unfiltered", "val"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["set", "did", "pid"]),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=KINDS),
        gxe.ExpectColumnValuesToMatchRegex(column="pid", regex=r"^(corpus|val)-[0-9]{4}$"),
        gxe.ExpectColumnValuesToNotBeNull(column="text"),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
    ]


def scores_suite(n_rows: int, scorers: list[str]) -> list[Any]:
    """``judge_scores``: every scorer's score of every candidate brief, with its quality label."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed", "pid", "kind", "quality", *scorers], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed", "pid", "kind"]),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=KINDS),
        gxe.ExpectColumnValuesToBeBetween(column="quality", min_value=0, max_value=5),
        gxe.ExpectColumnValuesToMatchRegex(column="pid", regex=r"^bench-[0-9]{4}$"),
        *[gxe.ExpectColumnValuesToBeBetween(column=s, min_value=-1e-6, max_value=5 + 1e-6) for s in scorers],
    ]


VARIANTS = ["none", "unfiltered", "curated"]


def task_scores_suite(n_rows: int) -> list[Any]:
    """``bench_scores``: one row per (variant, seed, task), scores on 0-100 with a bootstrap SE."""
    import great_expectations.expectations as gxe

    from stages.sci2pol.tasks import STAGES, TASK_BY_NAME

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["variant", "seed", "task", "stage", "kind", "score", "se",
                                                     "n_items"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="variant", value_set=VARIANTS),
        gxe.ExpectColumnValuesToBeInSet(column="task", value_set=list(TASK_BY_NAME)),
        gxe.ExpectColumnValuesToBeInSet(column="stage", value_set=list(STAGES)),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=["choice", "open"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["variant", "seed", "task"]),
        gxe.ExpectColumnValuesToBeBetween(column="score", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToBeBetween(column="se", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToBeBetween(column="n_items", min_value=1),
    ]


def answers_suite(n_rows: int) -> list[Any]:
    """``bench_answers``: every item's answer (picked option or generated line) and its score."""
    import great_expectations.expectations as gxe

    from stages.sci2pol.tasks import TASK_BY_NAME

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["variant", "seed", "task", "item", "pid", "answer",
                                                     "item_score", "picked", "correct"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="variant", value_set=VARIANTS),
        gxe.ExpectColumnValuesToBeInSet(column="task", value_set=list(TASK_BY_NAME)),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["variant", "seed", "task", "item"]),
        gxe.ExpectColumnValuesToMatchRegex(column="pid", regex=r"^bench-[0-9]{4}$"),
        gxe.ExpectColumnValuesToNotBeNull(column="answer"),
        gxe.ExpectColumnValuesToBeBetween(column="item_score", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToBeBetween(column="picked", min_value=-1),  # -1: an open item
        gxe.ExpectColumnValuesToBeBetween(column="correct", min_value=-1),
    ]


def losses_suite(n_rows: int) -> list[Any]:
    """``lora_losses``: training loss per step and held-out loss per evaluation of every LoRA run."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["variant", "seed", "lr", "split", "step", "loss"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="variant", value_set=["unfiltered", "curated"]),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["variant", "seed", "lr", "split", "step"]),
        gxe.ExpectColumnValuesToBeBetween(column="step", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="lr", min_value=0, max_value=1, strict_min=True),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
    ]


def runs_suite(n_rows: int) -> list[Any]:
    """``lora_runs``: one row per LoRA run, with the step kept by early stopping; one run used per set and seed."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["variant", "seed", "lr", "best_step", "best_val", "steps_run",
                                                     "used", "n_train"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="variant", value_set=["unfiltered", "curated"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["variant", "seed", "lr"]),
        gxe.ExpectColumnValuesToBeBetween(column="best_step", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="steps_run", min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="best_val", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToBeInSet(column="used", value_set=[True, False]),
        gxe.ExpectColumnValuesToBeBetween(column="n_train", min_value=1),
    ]
