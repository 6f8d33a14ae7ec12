"""The contact-hypergraph asset's params, table suites and loader (``assets-hypergraphs``).

Kept in one module of its own so that the other assets' shared modules (and so their stages)
are untouched by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import Field, model_validator

from stages.assets.manifest import verify_files
from stages.core.config import Section, load_section
from stages.core.io import read_parquet

HYPERGRAPH_FILES = {"contacts": "contacts.parquet", "node_classes": "node_classes.parquet",
                    "hyperedges": "hyperedges.parquet"}


class HypergraphsConfig(Section):
    """Which of hypergraphx's bundled contact hypergraphs to prepare."""

    datasets: list[Literal["high_school", "workplace"]] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> HypergraphsConfig:
        if len(set(self.datasets)) != len(self.datasets):
            raise ValueError("datasets must be distinct")
        return self


def load_hypergraphs_config(params: Path) -> HypergraphsConfig:
    """``assets.hypergraphs``."""
    return load_section(HypergraphsConfig, "assets.hypergraphs", params)


def contacts_suite() -> list[Any]:
    """Time-stamped pairwise contacts: (dataset, t, i, j), two distinct people, non-negative time."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "t", "i", "j"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeBetween(column="t", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="i", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="j", min_value=0),
        gxe.ExpectColumnValuesToBeOfType(column="t", type_="int64"),
    ]


def node_classes_suite() -> list[Any]:
    """One class per (dataset, node)."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "node", "cls"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToBeBetween(min_value=2),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["dataset", "node"]),
        gxe.ExpectColumnValueLengthsToBeBetween(column="cls", min_value=1),
    ]


def hyperedges_suite() -> list[Any]:
    """A package's hyperedge list: space-separated node ids (at least two), positive weights, no duplicates."""
    import great_expectations.expectations as gxe

    cols = ["dataset", "members", "weight"]
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToMatchRegex(column="members", regex=r"^\d+( \d+)+$"),
        gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["dataset", "members"]),
    ]


@dataclass(frozen=True)
class ContactHypergraphs:
    """Time-stamped contacts (dataset, t, i, j), node classes (dataset, node, cls) and the package's hyperedges."""

    contacts: pd.DataFrame
    node_classes: pd.DataFrame
    hyperedges: pd.DataFrame


def load_hypergraphs(path: Path | str) -> ContactHypergraphs:
    """The tables of a prepared contact-hypergraph asset folder, checksum-verified."""
    path = Path(path)
    verify_files(path, path.name, list(HYPERGRAPH_FILES.values()))
    return ContactHypergraphs(**{k: read_parquet(path / f) for k, f in HYPERGRAPH_FILES.items()})
