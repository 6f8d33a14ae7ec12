"""Text corpora (id, title, text): the prepared offline assets, or a hub data set / local files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stages.assets.config import CorpusSource
from stages.assets.expectations import corpus_suite
from stages.assets.manifest import AssetError, verify_files
from stages.core.gx import validate_table
from stages.core.io import read_parquet

CORPUS_FILE = "corpus.parquet"


def load_corpus(path: Path | str) -> Any:
    """The corpus table of a prepared asset folder (``data/assets/<name>``), checksum-verified."""
    path = Path(path)
    verify_files(path, path.name, [CORPUS_FILE])
    return read_parquet(path / CORPUS_FILE)


def _from_datasets(source: CorpusSource) -> Any:
    """A ``datasets.Dataset`` for a hub name or local files (the same call a hub run makes)."""
    import datasets

    if source.kind == "hub":
        return datasets.load_dataset(source.name, source.config_name, split=source.split)
    return datasets.load_dataset(source.format, data_files=list(source.files), split=source.split)


def load_text_corpus(source: CorpusSource, asset_path: Path | str | None = None) -> Any:
    """The corpus ``source`` names, as a validated (id, title, text) table."""
    import pandas as pd

    if source.kind == "asset":
        if asset_path is None:
            raise AssetError("corpus source kind 'asset' needs the asset path from dvc.yaml")
        df = load_corpus(asset_path)
        return df.head(source.max_docs) if source.max_docs else df
    ds = _from_datasets(source)
    if source.max_docs is not None:
        ds = ds.select(range(min(source.max_docs, len(ds))))
    missing = {c for c in (source.text_column, source.id_column, source.title_column) if c} - set(ds.column_names)
    if missing:
        raise ValueError(f"corpus source {source.name or source.files}: no column(s) {sorted(missing)}; "
                         f"it has {ds.column_names}")
    table = ds.to_pandas()
    ids = table[source.id_column].astype(str) if source.id_column else pd.Series(range(len(table))).astype(str)
    titles = table[source.title_column].astype(str) if source.title_column else ids
    df = pd.DataFrame({"id": ids.to_numpy(), "title": titles.to_numpy(),
                       "text": table[source.text_column].astype(str).to_numpy()})
    validate_table(df, f"corpus:{source.name or source.files[0]}", corpus_suite)
    return df
