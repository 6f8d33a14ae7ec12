"""Tiny stand-ins for the entropylong assets (no 500 MB model): corpora, a random causal LM, an encoder, an index.

Each folder has the asset's name and a manifest, so the real loaders (with their checksum
checks) read it exactly as they read the prepared assets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stages.assets.manifest import write_manifest
from stages.core.io import write_parquet
from stages.core.tokenizer import SmallTokenizer

TOWNS = ["Aldren", "Bexmoor", "Corvath", "Dunmere", "Elstow", "Farrowby", "Glenquay", "Hollinrook"]
RIVERS = ["Tamsel", "Orrin", "Weald", "Carrow"]
FOUNDERS = ["Maren Holt", "Ivo Drace", "Petra Lune", "Osric Vale"]


def town_article(i: int) -> str:
    """A short fictional encyclopedia article; neighbouring towns share rivers and founders (shared entities)."""
    t, r, f = TOWNS[i], RIVERS[i % len(RIVERS)], FOUNDERS[(i // 2) % len(FOUNDERS)]
    n = TOWNS[(i + 1) % len(TOWNS)]
    return (f"{t} is a market town on the river {r}. It was founded by {f} in the old kingdom. "
            f"The town of {t} lies upstream of {n}, and traders from {n} sell wool and salt in {t}. "
            f"The river {r} floods each spring, so the people of {t} built high stone walls. "
            f"{f} is buried in the chapel of {t}, beside the bridge over the {r}. "
            f"Today {t} is known for its bells, its fairs and its long history of weaving.")


def _corpus(prefix: str, n: int) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"{prefix}-{i:05d}" for i in range(n)], "title": TOWNS[:n],
                         "text": [town_article(i) for i in range(n)]})


def _asset(folder: Path, name: str) -> None:
    write_manifest(folder, name, {"kind": "test fixture"}, "test fixture")


def make_corpus(root: Path, name: str, prefix: str, n: int) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    write_parquet(_corpus(prefix, n), folder / "corpus.parquet")
    _asset(folder, name)
    return folder


def make_causal_lm(root: Path, texts: list[str]) -> Path:
    """A randomly initialised tiny Llama and a small BPE tokenizer in the SmolLM2 asset's layout."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = SmallTokenizer.train(texts, vocab_size=300)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok.backend, bos_token="<bos>", eos_token="<eos>",
                                     pad_token="<pad>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      tie_word_embeddings=True, initializer_range=0.5)  # a sharp, context-sensitive random LM
    folder = root / "smollm2-135m"
    LlamaForCausalLM(cfg).save_pretrained(folder)
    hf_tok.save_pretrained(folder)
    _asset(folder, "smollm2-135m")
    return folder


def make_encoder(root: Path, texts: list[str]) -> Path:
    """A tiny random BERT + mean pooling saved as a sentence-transformers folder."""
    import re

    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = sorted({w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)})
    work = root / "_bert"
    work.mkdir(parents=True)
    (work / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    BertTokenizerFast(vocab_file=str(work / "vocab.txt")).save_pretrained(work)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=256,
                         initializer_range=0.5)).save_pretrained(work)
    encoder = SentenceTransformer(modules=[models.Transformer(str(work), max_seq_length=128),
                                           models.Pooling(16, "mean")], device="cpu")
    folder = root / "minilm-l6-v2"
    encoder.save(str(folder))
    _asset(folder, "minilm-l6-v2")
    return folder


def make_index(root: Path, corpus: pd.DataFrame, encoder_path: Path) -> Path:
    """Chunks of the corpus (the asset's own chunker) in an exact inner-product faiss index."""
    import faiss

    from stages.assets.loaders import load_sentence_encoder
    from stages.assets.retrieval import token_chunks

    encoder = load_sentence_encoder(encoder_path)
    chunks = token_chunks(encoder.tokenizer, corpus, 24, 4)
    emb = encoder.encode(chunks.text.tolist(), normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    folder = root / "wikipedia-index"
    folder.mkdir(parents=True)
    faiss.write_index(index, str(folder / "index.faiss"))
    write_parquet(chunks, folder / "chunks.parquet")
    _asset(folder, "wikipedia-index")
    return folder


@pytest.fixture(scope="session")
def tiny_assets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every asset entropylong reads, tiny."""
    root = tmp_path_factory.mktemp("entropylong_assets")
    wiki = make_corpus(root, "wikipedia", "wiki", len(TOWNS))
    enwiki = make_corpus(root, "enwiki", "enwiki", 3)
    texts = [town_article(i) for i in range(len(TOWNS))]
    lm = make_causal_lm(root, texts)
    encoder = make_encoder(root, texts)
    index = make_index(root, _corpus("wiki", len(TOWNS)), encoder)
    return {"wikipedia": wiki, "enwiki": enwiki, "entropy_model": lm, "encoder": encoder, "index": index}
