"""Stage ``assets-wikipedia-index``: a dense retrieval index over the Wikipedia corpus.

Each article is cut into windows of ``chunk_tokens`` MiniLM tokens (``chunk_overlap``
shared between neighbours; the chunk text is the original text span the window
covers), embedded with MiniLM, L2-normalised, and stored in an exact inner-product
faiss index (inner product = cosine similarity). Row ``i`` of the chunk table is
vector ``i`` of the index. The default profile indexes a seeded subset of articles
(``max_docs``) so that embedding stays within minutes on 2 cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.config import RetrievalConfig, load_retrieval
from stages.assets.expectations import chunks_suite
from stages.assets.loaders import CHUNKS_FILE, INDEX_FILE, load_corpus, load_sentence_encoder
from stages.assets.manifest import AssetError, verify_files, write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out

ASSET = "wikipedia-index"
LICENCE = "derived from the Wikipedia corpus (CC BY-SA 4.0 text) and all-MiniLM-L6-v2 (Apache-2.0)"


@dataclass(frozen=True)
class Paths:
    corpus: Path = inp("Wikipedia corpus asset")
    encoder: Path = inp("MiniLM asset")
    index: Path = out("asset folder: index.faiss, chunks.parquet, manifest.json")
    manifest: Path = out("committed copy of the manifest")


def token_chunks(tokenizer: Any, corpus: pd.DataFrame, size: int, overlap: int) -> pd.DataFrame:
    """Windows of ``size`` tokens (stride ``size - overlap``) over each article, as original-text spans."""
    from tqdm.auto import tqdm

    rows = []
    stride = size - overlap
    for article_id, title, text in tqdm(corpus[["id", "title", "text"]].itertuples(index=False),
                                        total=len(corpus), desc="chunking", unit="doc", mininterval=5):
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        for start in range(0, max(len(offsets) - overlap, 1), stride):
            window = offsets[start:start + size]
            if not window:
                break
            rows.append({"chunk_id": len(rows), "article_id": article_id, "title": title, "start_token": start,
                         "n_tokens": len(window), "text": text[window[0][0]:window[-1][1]]})
    return pd.DataFrame(rows)


def run(cfg: RetrievalConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Chunk, embed, index; validate the chunk table; write the folder and its manifest."""
    import faiss

    corpus = load_corpus(paths.corpus)
    if cfg.max_docs is not None and cfg.max_docs < len(corpus):
        keep = rng(ctx.seed, "assets", ASSET).choice(len(corpus), size=cfg.max_docs, replace=False)
        corpus = corpus.iloc[np.sort(keep)].reset_index(drop=True)
    encoder = load_sentence_encoder(paths.encoder)
    if cfg.chunk_tokens > encoder.max_seq_length - 2:
        raise AssetError(f"assets.{ASSET}.chunk_tokens {cfg.chunk_tokens} exceeds the encoder's "
                         f"{encoder.max_seq_length - 2} tokens")
    chunks = token_chunks(encoder.tokenizer, corpus, cfg.chunk_tokens, cfg.chunk_overlap)
    validate_table(chunks, "assets.wikipedia-index.chunks", chunks_suite(set(corpus["id"]), cfg.chunk_tokens))
    emb = encoder.encode(chunks["text"].tolist(), batch_size=cfg.batch_size, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=True).astype(np.float32)
    norms = np.linalg.norm(emb, axis=1)
    if not np.allclose(norms, 1.0, atol=1e-4):
        raise AssetError(f"asset '{ASSET}': embeddings are not unit-norm (range {norms.min()}..{norms.max()})")
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    # each chunk must retrieve itself first: checks the index, the table order and the normalisation
    probe = np.arange(0, len(emb), max(1, len(emb) // 50))
    _, top = index.search(emb[probe], 1)
    self_hit = float((top[:, 0] == probe).mean())
    if self_hit < 0.98:
        raise AssetError(f"asset '{ASSET}': only {self_hit:.0%} of probed chunks retrieve themselves first")
    with atomic_dir(paths.index) as tmp:
        faiss.write_index(index, str(tmp / INDEX_FILE))
        write_parquet(chunks, tmp / CHUNKS_FILE)
        write_manifest(tmp, ASSET, {"kind": "derived", "from": ["assets-wikipedia", "assets-minilm-l6-v2"],
                                    "corpus_sha256": verify_files(paths.corpus, paths.corpus.name)["files"]
                                    ["corpus.parquet"]["sha256"]},
                       LICENCE, report=paths.manifest,
                       details={"articles": len(corpus), "chunks": len(chunks), "dimension": int(emb.shape[1]),
                                "chunk_tokens": cfg.chunk_tokens, "chunk_overlap": cfg.chunk_overlap,
                                "faiss_index": "IndexFlatIP (exact; cosine on normalised vectors)",
                                "mean_chunk_tokens": round(float(chunks["n_tokens"].mean()), 1),
                                "check_self_retrieval": self_hit})
    return {"articles": len(corpus), "chunks": len(chunks)}


main = Step("assets", ASSET, run, load_retrieval, Paths)


if __name__ == "__main__":
    main()
