"""Great Expectations suites for the biocap tables."""

from __future__ import annotations

from typing import Any

from stages.biocap.specimens import BACKGROUNDS, COLOURS, GENERA, PATTERNS, SIZES

SPLITS = ["train", "seen_test", "val", "test"]
ROLES = ["train", "val", "test"]
TEXT_KINDS = ["scientific", "common", "taxonomy", "mixed", "caption", "hallucinated", "shuffled", "query"]


def taxa_suite(n_taxa: int) -> list[Any]:
    """``taxa``: one row per species with its role and names."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["species_id", "genus", "family", "shape", "colour", "pattern",
                                                     "role", "scientific", "common", "taxonomy", "wiki"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_taxa),
        gxe.ExpectColumnValuesToBeUnique(column="species_id"),
        gxe.ExpectColumnValuesToBeUnique(column="scientific"),
        gxe.ExpectColumnValuesToBeInSet(column="genus", value_set=list(GENERA)),
        gxe.ExpectColumnValuesToBeInSet(column="colour", value_set=list(COLOURS)),
        gxe.ExpectColumnValuesToBeInSet(column="pattern", value_set=list(PATTERNS)),
        gxe.ExpectColumnValuesToBeInSet(column="role", value_set=ROLES),
    ]


def specimens_suite(n_rows: int, n_taxa: int) -> list[Any]:
    """``specimens``: one row per image: split, shift, taxon, background and the measured traits."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["row", "split", "shifted", "species_id", "background",
                                                     "shape", "colour", "pattern", "size", "posture", "position",
                                                     "drawn_pattern", "drawn_length"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="row"),
        gxe.ExpectColumnValuesToBeBetween(column="row", min_value=0, max_value=n_rows - 1),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeBetween(column="species_id", min_value=0, max_value=n_taxa - 1),
        gxe.ExpectColumnValuesToBeInSet(column="background", value_set=list(BACKGROUNDS)),
        gxe.ExpectColumnValuesToBeInSet(column="shape", value_set=[g[1] for g in GENERA.values()]),
        gxe.ExpectColumnValuesToBeInSet(column="colour", value_set=list(COLOURS)),
        gxe.ExpectColumnValuesToBeInSet(column="pattern", value_set=list(PATTERNS)),
        gxe.ExpectColumnValuesToBeInSet(column="size", value_set=list(SIZES)),
        gxe.ExpectColumnValuesToBeInSet(column="position", value_set=["left", "centre", "right"]),
        gxe.ExpectColumnValuesToBeBetween(column="drawn_length", min_value=10, max_value=100),
    ]


def texts_suite(n_rows: int) -> list[Any]:
    """``texts``: one row per text: kind, the taxon or image it belongs to, a non-empty string."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["text_id", "kind", "species_id", "row", "text"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeUnique(column="text_id"),
        gxe.ExpectColumnValuesToBeInSet(column="kind", value_set=TEXT_KINDS),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=3, max_value=400),
        gxe.ExpectColumnValuesToBeBetween(column="row", min_value=-1),
        gxe.ExpectColumnValuesToBeBetween(column="species_id", min_value=0),
    ]


def train_log_suite(n_rows: int, arms: list[str]) -> list[Any]:
    """``train_log``: finite, non-negative losses per (arm, seed, step)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["arm", "seed_index", "step", "loss", "taxonomy_loss",
                                                     "caption_loss"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=arms),
        gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0, max_value=1e4),
        gxe.ExpectColumnValuesToNotBeNull(column="loss"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["arm", "seed_index", "step"]),
    ]


def results_suite(n_rows: int, arms: list[str]) -> list[Any]:
    """``results``: one value in [0, 1] per (arm, seed, metric)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["arm", "seed_index", "metric", "value"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=arms),
        gxe.ExpectColumnValuesToBeBetween(column="value", min_value=0, max_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["arm", "seed_index", "metric"]),
    ]
