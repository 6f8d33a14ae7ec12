"""Great Expectations suites for the denots tables (observations in long form, one row per case)."""

from __future__ import annotations

from typing import Any

SPLITS = ["train", "val", "test"]
FLOAT32_MAX = 3.4e38


def observations_suite(n_channels: int, max_obs: int, max_time: float, n_rows: int) -> list[Any]:
    """``<dataset>_obs``: (split, case, obs, t, c0..) with strictly ordered, bounded times."""
    import great_expectations.expectations as gxe

    channels = [f"c{i}" for i in range(n_channels)]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "case", "obs", "t", *channels], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeBetween(column="obs", min_value=0, max_value=max_obs - 1),
        gxe.ExpectColumnValuesToBeBetween(column="t", min_value=0, max_value=max_time),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "case", "obs"]),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in channels],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=-100, max_value=100) for c in channels],
    ]


def cases_suite(n_rows: int, min_obs: int, max_obs: int, target_min: float, target_max: float) -> list[Any]:
    """``<dataset>_cases``: one row per sequence with its length and target (ℓ, or the class index)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "case", "n_obs", "target"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "case"]),
        gxe.ExpectColumnValuesToBeBetween(column="n_obs", min_value=min_obs, max_value=max_obs),
        gxe.ExpectColumnValuesToBeBetween(column="target", min_value=target_min, max_value=target_max),
        gxe.ExpectColumnValuesToNotBeNull(column="target"),
    ]


def vowels_source_suite(n_channels: int, n_classes: int) -> list[Any]:
    """The JapaneseVowels asset as read: one row per utterance (split, length, label, channels)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "length", "label", "channels"], exact_match=True),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="length", min_value=2, max_value=64),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=n_classes - 1),
        gxe.ExpectColumnValuesToBeInSet(column="channels", value_set=[n_channels]),
        gxe.ExpectColumnDistinctValuesToEqualSet(column="label", value_set=list(range(n_classes))),
    ]


def runs_suite(n_rows: int) -> list[Any]:
    """``runs`` (train): one row per run; a run that did not diverge took at least one step."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="run_id"),
        gxe.ExpectColumnValuesToBeInSet(column="dataset", value_set=["pendulum", "vowels"]),
        gxe.ExpectColumnValuesToBeInSet(column="group", value_set=["horizon", "tolerance", "baseline", "perturbed"]),
        gxe.ExpectColumnValuesToBeBetween(column="horizon", min_value=1, max_value=1e4),
        gxe.ExpectColumnValuesToBeBetween(column="n_params", min_value=1, max_value=1e8),
        gxe.ExpectColumnValuesToBeBetween(column="steps", min_value=0, max_value=1e7),
        gxe.ExpectColumnValuesToBeInSet(column="diverged", value_set=[True, False]),
    ]


def results_suite(n_rows: int) -> list[Any]:
    """``results`` (evaluate): scores are R² ≤ 1 or accuracies in [0, 1]; NFE non-negative."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="run_id"),
        gxe.ExpectColumnValuesToBeBetween(column="test_score", max_value=1.0),
        gxe.ExpectColumnValuesToBeBetween(column="val_score", max_value=1.0),
        gxe.ExpectColumnValuesToBeBetween(column="test_nfe", min_value=0, max_value=1e9),
        gxe.ExpectColumnValuesToBeInSet(column="diverged", value_set=[True, False]),
    ]


def train_log_suite(n_rows: int) -> list[Any]:
    """``train_log``: a finite, non-negative loss (no-feedback fields reach 1e16) and NFE per training step."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["run_id", "step", "loss", "nfe"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="step", min_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=FLOAT32_MAX),
        gxe.ExpectColumnValuesToBeBetween(column="nfe", min_value=0, max_value=1e9),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
    ]
