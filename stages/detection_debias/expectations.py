"""Great Expectations suites for the detection_debias tables."""

from __future__ import annotations

from typing import Any

from stages.detection_debias.scenes import CLASSES

SPLITS = ["train", "val", "test"]
SYNTHETIC_ARMS = ["reused", "inverse_frequency", "rs"]
ALL_ARMS = ["none", *SYNTHETIC_ARMS, "rs_procedural"]


def _box_columns(image_size: int) -> list[Any]:
    import great_expectations.expectations as gxe

    return [*[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=image_size - 1) for c in ("x0", "y0")],
            *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=1, max_value=image_size) for c in ("x1", "y1")],
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="x1", column_B="x0"),
            gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="y1", column_B="y0"),
            gxe.ExpectColumnValuesToBeBetween(column="cls", min_value=0, max_value=len(CLASSES) - 1)]


def objects_suite(n_rows: int, n_images: int, image_size: int, n_groups: int) -> list[Any]:
    """``objects``: one row per object (COCO-style boxes in pixels, x1/y1 exclusive) with its image, split, group."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["image", "split", "cls", "x0", "y0", "x1", "y1", "group"],
                                         exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="image", min_value=0, max_value=n_images - 1),
        gxe.ExpectColumnUniqueValueCountToBeBetween(column="image", min_value=n_images, max_value=n_images),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=SPLITS),
        gxe.ExpectColumnValuesToBeBetween(column="group", min_value=0, max_value=n_groups - 1),
        *_box_columns(image_size),
    ]


def layouts_suite(n_rows: int, image_size: int, n_groups: int, n_seeds: int) -> list[Any]:
    """``layouts``: the synthetic layouts, one row per object, per (seed, arm, synthetic image)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "arm", "image", "cls", "x0", "y0", "x1", "y1",
                                                     "group"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="seed_index", min_value=0, max_value=n_seeds - 1),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=SYNTHETIC_ARMS),
        gxe.ExpectColumnValuesToBeBetween(column="image", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="group", min_value=0, max_value=n_groups - 1),
        *_box_columns(image_size),
    ]


def groups_suite(n_rows: int, n_groups: int) -> list[Any]:
    """``groups``: per (seed, group): count, frequency term, diversities, RS and both samplers' probabilities."""
    import great_expectations.expectations as gxe

    cols = ["seed_index", "group", "count", "frequency", "d_vis", "d_ctx", "d_vis_norm", "d_ctx_norm", "rs",
            "p_inverse_frequency", "p_rs"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeBetween(column="group", min_value=0, max_value=n_groups - 1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "group"]),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, max_value=1)
          for c in ("frequency", "p_inverse_frequency", "p_rs")],
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0) for c in ("count", "d_vis", "d_ctx", "rs")],
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
    ]


def ap_suite(n_rows: int, n_groups: int) -> list[Any]:
    """``ap``: COCO AP per (seed, arm, split, group); group -1 is the overall mAP (mean over classes)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["seed_index", "arm", "split", "group", "ap"], exact_match=True),
        gxe.ExpectTableRowCountToEqual(value=n_rows),
        gxe.ExpectColumnValuesToBeInSet(column="arm", value_set=ALL_ARMS),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["val", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="group", min_value=-1, max_value=n_groups - 1),
        gxe.ExpectColumnValuesToBeBetween(column="ap", min_value=0, max_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="ap"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed_index", "arm", "split", "group"]),
    ]
