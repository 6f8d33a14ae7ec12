"""Great Expectations suites for the asset tables."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def corpus_suite(min_english_fraction: float | None = None) -> list[Any]:
    """A text corpus: unique ids, non-empty text; optionally ``lang == 'en'`` on most rows."""
    import great_expectations.expectations as gxe

    suite = [
        gxe.ExpectColumnToExist(column="id"),
        gxe.ExpectColumnToExist(column="title"),
        gxe.ExpectColumnToExist(column="text"),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("id", "title", "text")],
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
        gxe.ExpectColumnValuesToMatchRegex(column="text", regex=r"\S"),
    ]
    if min_english_fraction is not None:
        suite.append(gxe.ExpectColumnValuesToBeInSet(column="lang", value_set=["en"], mostly=min_english_fraction))
    return suite


def chunks_suite(article_ids: Collection[Any], chunk_tokens: int) -> list[Any]:
    """Retrieval chunks: one row per index vector, each from a known article, at most ``chunk_tokens`` long."""
    import great_expectations.expectations as gxe

    cols = ["chunk_id", "article_id", "title", "start_token", "n_tokens", "text"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeUnique(column="chunk_id"),
        gxe.ExpectColumnValuesToBeInSet(column="article_id", value_set=sorted(article_ids)),
        gxe.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=1, max_value=chunk_tokens),
        gxe.ExpectColumnValuesToBeBetween(column="start_token", min_value=0),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
    ]


def image_labels_suite(n_classes: int, pixel_max: int) -> list[Any]:
    """Per-image summary (split, label, pixel range): labels in range, pixels in [0, pixel_max]."""
    import great_expectations.expectations as gxe

    cols = ["split", "label", "pixel_min", "pixel_max"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="label", min_value=0, max_value=n_classes - 1),
        gxe.ExpectColumnDistinctValuesToEqualSet(column="label", value_set=list(range(n_classes))),
        gxe.ExpectColumnValuesToBeBetween(column="pixel_min", min_value=0, max_value=pixel_max),
        gxe.ExpectColumnValuesToBeBetween(column="pixel_max", min_value=1, max_value=pixel_max),
    ]


def time_series_suite(n_channels: int, labels: Collection[str]) -> list[Any]:
    """Multivariate series in long form: one row per (split, case, t), no missing channel values."""
    import great_expectations.expectations as gxe

    channels = [f"c{i}" for i in range(n_channels)]
    cols = ["split", "case", "t", "label", *channels]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "test"]),
        gxe.ExpectColumnValuesToBeInSet(column="label", value_set=sorted(labels)),
        gxe.ExpectColumnValuesToBeBetween(column="t", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["split", "case", "t"]),
        *[gxe.ExpectColumnValuesToBeBetween(column=c, min_value=-1e3, max_value=1e3) for c in channels],
    ]
