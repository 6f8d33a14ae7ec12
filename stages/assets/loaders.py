"""Asset loaders: how papers (and later asset steps) read a prepared asset, checksum-verified.

Every loader takes the folder dvc.yaml passes, checks the bytes against the asset's
manifest and raises ``AssetError`` naming ``dvc repro assets-<name>`` when the asset is
missing or corrupt. The asset steps write these folders; nothing here runs a step.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.config import CorpusSource
from stages.assets.expectations import corpus_suite
from stages.assets.manifest import AssetError, verify_files
from stages.core.gx import validate_table
from stages.core.io import read_parquet

CORPUS_FILE = "corpus.parquet"
INDEX_FILE = "index.faiss"
CHUNKS_FILE = "chunks.parquet"
SERIES_FILE = "series.parquet"
IMAGE_SPLITS = ("train", "test")


def image_files(split: str) -> tuple[str, str]:
    """The two array files of one split of an image asset."""
    return f"{split}_images.npy", f"{split}_labels.npy"


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


def load_causal_lm(path: Path | str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a prepared causal-LM asset folder, every file checksum-verified."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    verify_files(path, path.name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    return model, tokenizer


def load_sentence_encoder(path: Path | str) -> Any:
    """A ``SentenceTransformer`` on CPU from a prepared asset folder, every file checksum-verified."""
    from sentence_transformers import SentenceTransformer

    path = Path(path)
    verify_files(path, path.name)
    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


@dataclass(frozen=True)
class RetrievalIndex:
    """A faiss index and its chunk table (row i = vector i)."""

    index: Any
    chunks: pd.DataFrame

    def search(self, encoder: Any, queries: list[str], k: int = 5) -> pd.DataFrame:
        """Top-``k`` chunks per query: query index, rank, cosine score and the chunk's columns."""
        emb = encoder.encode(queries, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
        scores, ids = self.index.search(emb, k)
        rows = [{"query": q, "rank": r, "score": float(scores[q, r]), **self.chunks.iloc[int(ids[q, r])].to_dict()}
                for q in range(len(queries)) for r in range(k) if ids[q, r] >= 0]
        return pd.DataFrame(rows)


def load_retrieval_index(path: Path | str) -> RetrievalIndex:
    """The index and chunk table of a prepared index folder, checksum-verified."""
    import faiss

    path = Path(path)
    verify_files(path, path.name, [INDEX_FILE, CHUNKS_FILE])
    return RetrievalIndex(index=faiss.read_index(str(path / INDEX_FILE)), chunks=read_parquet(path / CHUNKS_FILE))


@dataclass(frozen=True)
class TimeSeriesSplit:
    """Variable-length multivariate series ``(n_channels, length)`` and their string labels."""

    series: list[np.ndarray]
    labels: np.ndarray


def load_time_series(path: Path | str) -> dict[str, TimeSeriesSplit]:
    """``{"train": ..., "test": ...}`` from a prepared time-series asset folder, checksum-verified."""
    path = Path(path)
    verify_files(path, path.name, [SERIES_FILE])
    df = read_parquet(path / SERIES_FILE)
    channels = [c for c in df.columns if c.startswith("c") and c[1:].isdigit()]
    out_splits = {}
    for split, part in df.groupby("split", sort=False):
        cases = [g.sort_values("t") for _, g in part.groupby("case", sort=True)]
        out_splits[str(split)] = TimeSeriesSplit(series=[g[channels].to_numpy(np.float64).T for g in cases],
                                                 labels=np.array([g["label"].iloc[0] for g in cases]))
    return out_splits


@dataclass(frozen=True)
class ImageSplits:
    """Images ``(n, h, w)`` uint8 and labels ``(n,)`` int64 per split, with class names."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: list[str]
    pixel_max: int


def load_images(path: Path | str) -> ImageSplits:
    """The train/test arrays of a prepared image asset folder, checksum-verified."""
    path = Path(path)
    names = [n for s in IMAGE_SPLITS for n in image_files(s)]
    manifest = verify_files(path, path.name, names)
    arrays = {n: np.load(path / n, allow_pickle=False) for n in names}
    return ImageSplits(train_images=arrays["train_images.npy"], train_labels=arrays["train_labels.npy"],
                       test_images=arrays["test_images.npy"], test_labels=arrays["test_labels.npy"],
                       classes=list(manifest["details"]["classes"]), pixel_max=int(manifest["details"]["pixel_max"]))


def load_tla_tools(path: Path | str) -> Path:
    """The checksum-verified ``tla2tools.jar`` of a prepared TLA+ tools asset folder."""
    path = Path(path)
    verify_files(path, "tla2tools", ["tla2tools.jar"])
    return path / "tla2tools.jar"
