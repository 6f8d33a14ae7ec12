"""Great Expectations suites for the mvcustom tables."""

from __future__ import annotations

from typing import Any

SPLITS = ["pretrain", "val", "test"]
ROLES = ["view", "ref", "target", "grid"]


def views_suite(n_rows: int) -> list[Any]:
    """``views``: one row per rendered view: split, scene, role, index, camera pose, row of the render tensors."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "scene", "role", "view", "azimuth", "elevation", "row"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeInSet(column="role", value_set=ROLES),
        gxe.ExpectColumnValuesToBeBetween(column="azimuth", min_value=0, max_value=360),
        gxe.ExpectColumnValuesToBeBetween(column="elevation", min_value=5, max_value=80),
        gxe.ExpectColumnValuesToBeUnique(column="row"),
        gxe.ExpectColumnValuesToBeBetween(column="row", min_value=0, max_value=max(n_rows - 1, 0)),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "scene", "role", "view"]),
    ]


def train_log_suite(n_rows: int) -> list[Any]:
    """``train_log``: finite non-negative denoising losses per logged step."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["step", "loss"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="step"),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=1e3),
    ]


def results_suite(n_rows: int, arms: list[str]) -> list[Any]:
    """``results``: per (split, subject, window, arm) the five measures, finite and in range."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "subject", "window", "arm", "gt_mse", "reproj_error",
                                                     "pose_accuracy", "pose_specificity", "identity"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["val", "test"]),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=arms),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "subject", "window", "arm"]),
        gxe.ExpectColumnValuesToBeBetween(column="gt_mse", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="reproj_error", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="pose_accuracy", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="pose_specificity", min_value=0, max_value=100),
        gxe.ExpectColumnValuesToNotBeNull(column="pose_specificity"),
        gxe.ExpectColumnValuesToBeBetween(column="identity", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="gt_mse"),
        gxe.ExpectColumnValuesToNotBeNull(column="reproj_error"),
    ]
