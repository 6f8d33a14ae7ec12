"""Great Expectations suites for the m3cotbench tables."""

from __future__ import annotations

from typing import Any

from stages.m3cotbench.scene import LOCATIONS, MODALITIES, RADII, SHAPES, TASKS

MODELS = ["rule_based", "unfaithful", "shortcut", "direct", "cot", "cot_shuffled"]


def scenes_suite(n_rows: int) -> list[Any]:
    """``scenes``: one row per scan: split, the true scene, the row of its image."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["scan", "split", "modality", "shape", "radius", "location",
                                                     "level"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="scan"),
        gxe.ExpectColumnValuesToBeBetween(column="scan", min_value=0, max_value=n_rows - 1),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
        gxe.ExpectColumnValuesToBeInSet(column="modality", value_set=list(MODALITIES)),
        gxe.ExpectColumnValuesToBeInSet(column="shape", value_set=list(SHAPES)),
        gxe.ExpectColumnValuesToBeInSet(column="radius", value_set=list(RADII)),
        gxe.ExpectColumnValuesToBeInSet(column="location", value_set=list(LOCATIONS)),
        gxe.ExpectColumnValuesToBeInSet(column="level", value_set=[1, 2, 3]),
    ]


def outputs_suite(n_rows: int) -> list[Any]:
    """``outputs``: one text per (seed, model, scan, task, sample); sample 0 greedy, the rest sampled."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "model", "scan", "task", "sample", "text"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="model", value_set=MODELS),
        gxe.ExpectColumnValuesToBeInSet(column="task", value_set=list(TASKS)),
        gxe.ExpectColumnValuesToNotBeNull(column="text"),
        gxe.ExpectColumnValuesToBeBetween(column="sample", min_value=0, max_value=16),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "model", "scan", "task", "sample"]),
    ]


def scores_suite(n_rows: int) -> list[Any]:
    """``scores``: per (seed, model, scan, task): correctness, step P/R/F1, tokens, matched steps, consistency."""
    import great_expectations.expectations as gxe

    cols = ["seed_index", "model", "scan", "task", "level", "correct", "precision", "recall", "f1", "n_steps",
            "n_matched", "tokens", "consistency"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="model", value_set=MODELS),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("correct", "precision", "recall", "f1", "consistency")],
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("f1", "consistency", "correct")],
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "model", "scan", "task"]),
    ]
