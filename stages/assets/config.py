"""Typed params of the asset stages (params/assets.yaml)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, model_validator

from stages.core.config import Section, load_section

SECTION = "assets"
S = TypeVar("S", bound=Section)


class SmolLMConfig(Section):
    """SmolLM2-135M-Instruct: the GGUF to dequantise and the checks the float32 copy must pass."""

    gguf_file: str = Field(min_length=1, pattern=r"\.gguf$")
    quantisation: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    expected_continuation: str = Field(min_length=1)
    max_new_tokens: int = Field(ge=1, le=256)
    perplexity_docs: int = Field(ge=1)
    perplexity_max_tokens: int = Field(ge=8, le=8192)
    max_perplexity: float = Field(gt=1.0)
    batch_size: int = Field(ge=1)


class WikipediaConfig(Section):
    """The vital-articles lead extracts; English is checked with langdetect on each text's head."""

    language: str = Field(pattern=r"^[a-z]{2}-[a-z]{2}$")
    max_docs: int | None = Field(default=None, ge=10)
    detect_chars: int = Field(ge=20)
    min_english_fraction: float = Field(gt=0.5, le=1.0)


class EnwikiConfig(Section):
    """gensim's shortened enwiki dump: articles (no redirects) with at least ``min_chars`` of text."""

    min_chars: int = Field(ge=1)
    max_docs: int | None = Field(default=None, ge=1)


class MiniLMConfig(Section):
    """all-MiniLM-L6-v2: a paraphrase must be closer than an unrelated sentence by ``min_margin``."""

    dimension: int = Field(ge=1)
    min_margin: float = Field(gt=0.0, lt=2.0)


class RetrievalConfig(Section):
    """Token chunks of the Wikipedia corpus, MiniLM embeddings, an exact inner-product faiss index."""

    chunk_tokens: int = Field(ge=8, le=254)
    chunk_overlap: int = Field(ge=0)
    max_docs: int | None = Field(default=None, ge=1)
    batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> RetrievalConfig:
        if self.chunk_overlap >= self.chunk_tokens:
            raise ValueError("chunk_overlap must be smaller than chunk_tokens")
        return self


class FashionMNISTConfig(Section):
    """Where the Debian package ``dataset-fashion-mnist`` puts its IDX files."""

    source_dir: str = Field(min_length=1)
    debian_package: str = Field(min_length=1)


class DigitsConfig(Section):
    """sklearn's 8x8 digits, split into train/test (stratified, seeded)."""

    test_fraction: float = Field(gt=0.0, lt=1.0)


class TimeSeriesConfig(Section):
    """UEA/UCR classification sets bundled with aeon."""

    dataset: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_]+$")
    n_channels: int = Field(ge=1)
    n_classes: int = Field(ge=2)


class CorpusSource(Section):
    """Where a paper's text comes from: the offline asset (default), a hub data set, or local files.

    ``hub`` calls ``datasets.load_dataset(name, config_name, split=split)``; stages run with
    ``HF_DATASETS_OFFLINE=1`` (stages/core/env.py), so on a machine with hub access set it to 0.
    ``files`` loads local ``format`` files through the same library.
    """

    kind: Literal["asset", "hub", "files"] = "asset"
    name: str | None = None
    config_name: str | None = None
    files: list[str] = Field(default_factory=list)
    format: Literal["parquet", "json", "csv", "text"] = "parquet"
    split: str = "train"
    text_column: str = "text"
    id_column: str | None = None
    title_column: str | None = None
    max_docs: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> CorpusSource:
        if self.kind == "hub" and not self.name:
            raise ValueError("kind 'hub' needs a data set name")
        if self.kind == "files" and not self.files:
            raise ValueError("kind 'files' needs at least one file")
        return self


class TlaToolsConfig(Section):
    """The TLA+ tools jar: the Java to run it with, and the limits of the asset's own check."""

    java: str = Field(min_length=1)
    heap_mb: int = Field(ge=64, le=8192)
    check_wall_s: float = Field(gt=0, le=600)


def _loader(model: type[S], name: str) -> Callable[[Path], S]:
    """A ``load_<asset>(params_path)`` for section ``assets.<name>``."""

    def load(params: Path) -> S:
        return load_section(model, f"{SECTION}.{name}", params)

    load.__doc__ = f"``{SECTION}.{name}``."
    return load


load_smollm2 = _loader(SmolLMConfig, "smollm2-135m")
load_wikipedia = _loader(WikipediaConfig, "wikipedia")
load_enwiki = _loader(EnwikiConfig, "enwiki")
load_minilm = _loader(MiniLMConfig, "minilm-l6-v2")
load_retrieval = _loader(RetrievalConfig, "wikipedia-index")
load_fashion_mnist = _loader(FashionMNISTConfig, "fashion-mnist")
load_digits = _loader(DigitsConfig, "digits")
load_japanese_vowels = _loader(TimeSeriesConfig, "japanese-vowels")
load_tla_tools = _loader(TlaToolsConfig, "tla2tools")
