"""Great Expectations suites for the purrception tables."""

from __future__ import annotations

from typing import Any


def image_index_suite(n_rows: int, n_classes: int) -> list[Any]:
    """``images``: one row per stored image: split, row in the array, class label, mean pixel."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "row", "label", "pixel_mean"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "test"]),
        gxe.ExpectColumnValuesToBeUnique(column="row"),
        gxe.ExpectColumnValuesToBeBetween(column="row", min_value=0, max_value=n_rows - 1),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=n_classes - 1),
        # an all-black or all-white image is a decoding error, not a garment
        gxe.ExpectColumnValuesToBeBetween(column="pixel_mean", min_value=0, max_value=255, strict_min=True,
                                          strict_max=True),
    ]


def codes_suite(n_rows: int, codebook_size: int, seq_len: int) -> list[Any]:
    """``codes``: long format (split, image, pos, code) of the tokenised images."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["split", "image", "pos", "code"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="pos", min_value=0, max_value=seq_len - 1),
        gxe.ExpectColumnValuesToBeBetween(column="code", min_value=0, max_value=codebook_size - 1),
        gxe.ExpectColumnValuesToNotBeNull(column="code"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "image", "pos"]),
    ]


def train_log_suite(methods: list[str], n_rows: int) -> list[Any]:
    """``train_log``: one finite, non-negative loss per (method, seed, step)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["method", "seed_index", "step", "loss"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="method", value_set=methods),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=1e6),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["method", "seed_index", "step"]),
    ]


def fid_curve_suite(n_rows: int) -> list[Any]:
    """``fid_curves``: Fréchet distance, precision, recall per (method, sampler, seed, step, temperature)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["method", "sampler", "seed_index", "step", "temperature", "fid",
                                                     "precision", "recall"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="sampler", value_set=["stochastic", "deterministic"]),
        gxe.ExpectColumnValuesToBeBetween(column="fid", min_value=0, max_value=1e6),
        gxe.ExpectColumnValuesToBeBetween(column="precision", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="recall", min_value=0, max_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["method", "sampler", "seed_index", "step", "temperature"]),
    ]
