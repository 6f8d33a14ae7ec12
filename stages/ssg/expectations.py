"""Great Expectations suites for the ssg tables."""

from __future__ import annotations

from typing import Any

SPLITS = ["train", "val", "test"]


def image_index_suite(n_rows: int, n_classes: int) -> list[Any]:
    """``images``: one row per stored image: split, row in the array, class label, mean pixel."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "row", "label", "pixel_mean"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeUnique(column="row"),
        gxe.ExpectColumnValuesToBeBetween(column="row", min_value=0, max_value=n_rows - 1),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=n_classes - 1),
        # an all-black or all-white image is a decoding error, not a garment
        gxe.ExpectColumnValuesToBeBetween(column="pixel_mean", min_value=0, max_value=255, strict_min=True,
                                          strict_max=True),
    ]


def tokens_suite(n_rows: int, codebook_size: int, seq_len: int, n_classes: int) -> list[Any]:
    """``tokens``: long format (split, image, label, pos, code) of every image's multi-scale token sequence."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "image", "label", "pos", "code"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeBetween(column="pos", min_value=0, max_value=seq_len - 1),
        gxe.ExpectColumnValuesToBeBetween(column="code", min_value=0, max_value=codebook_size - 1),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=n_classes - 1),
        gxe.ExpectColumnValuesToNotBeNull(column="code"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "image", "pos"]),
    ]


def train_log_suite(n_rows: int) -> list[Any]:
    """``train_log``: one finite, non-negative loss per (seed, step)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "step", "loss"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=1e6),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "step"]),
    ]


def results_suite(n_rows: int, arms: list[str]) -> list[Any]:
    """``results``: Fréchet distance, precision, recall per (seed, split, arm, prior, β, temperature)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "split", "arm", "prior", "beta", "temperature",
                                                     "fd", "precision", "recall"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["val", "test"]),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=arms),
        gxe.ExpectColumnValuesToBeBetween(column="fd", min_value=0, max_value=1e6),
        gxe.ExpectColumnValuesToBeBetween(column="precision", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="recall", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="temperature", min_value=0, max_value=100, strict_min=True),
    ]
