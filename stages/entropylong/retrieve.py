"""Step ``retrieve``: the query window of every selected position → top-K Wikipedia chunks (§3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.loaders import load_retrieval_index, load_sentence_encoder
from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, RetrieveConfig, load_retrieve
from stages.entropylong.contexts import top_k_candidates
from stages.entropylong.expectations import candidates_suite

COLUMNS = ["doc_id", "pos", "rank", "chunk_id", "article_id", "title", "score", "text", "self_retrieval",
           "n_excluded"]


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents from the entropy step")
    positions: Path = inp("selected positions with queries")
    index: Path = inp("Wikipedia retrieval index asset")
    encoder: Path = inp("MiniLM sentence-encoder asset")
    candidates: Path = out("top-K candidate contexts per position")


def retrieve(queries: pd.DataFrame, docs: pd.DataFrame, embeddings: np.ndarray, index: Any, chunks: pd.DataFrame,
             cfg: RetrieveConfig) -> pd.DataFrame:
    """Search ``search_k`` hits per query, drop self-retrievals, keep the first ``top_k``."""
    scores, ids = index.search(embeddings.astype(np.float32), min(cfg.search_k, len(chunks)))
    by_id = docs.set_index("doc_id")
    rows = []
    for q, (doc_id, pos) in enumerate(zip(queries.doc_id, queries.pos, strict=True)):
        doc = by_id.loc[doc_id].copy()
        doc["doc_id"] = doc_id
        kept = top_k_candidates(scores[q], ids[q], chunks, doc, cfg.top_k, cfg.duplicate_ngram,
                                cfg.max_duplicate_overlap)
        searched = int((ids[q] >= 0).sum())
        last_rank = int(np.flatnonzero(ids[q] == kept[-1][0])[0]) + 1 if kept else searched
        for rank, (cid, score) in enumerate(kept):
            row = chunks.iloc[cid]
            rows.append({"doc_id": doc_id, "pos": int(pos), "rank": rank, "chunk_id": cid,
                         "article_id": str(row.article_id), "title": str(row.title), "score": score,
                         "text": str(row.text), "self_retrieval": False, "n_excluded": last_rank - len(kept)})
    return pd.DataFrame(rows, columns=COLUMNS)


def run(cfg: RetrieveConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Embed every query with the index's encoder, search, filter, validate, write."""
    docs = read_parquet(paths.documents, columns=["doc_id", "article_id", "title", "text"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "query"])
    index = load_retrieval_index(paths.index)
    if not index.chunks.chunk_id.tolist() == list(range(len(index.chunks))):
        raise ValueError("the index's chunk table must be ordered by chunk_id (row i = vector i)")
    encoder = load_sentence_encoder(paths.encoder)
    emb = encoder.encode(positions["query"].tolist(), batch_size=cfg.encode_batch_size, normalize_embeddings=True,
                         convert_to_numpy=True, show_progress_bar=True)
    cands = retrieve(positions, docs, emb, index.index, index.chunks, cfg)
    if cands.empty:
        raise ValueError("retrieval returned no candidate for any position")
    validate_table(cands, f"{PAPER}.candidates", candidates_suite(cfg.top_k))
    write_parquet(cands, paths.candidates)
    return {"queries": len(positions), "candidates": len(cands), "distinct_chunks": int(cands.chunk_id.nunique()),
            "excluded_self_retrievals": int(cands.groupby(["doc_id", "pos"]).n_excluded.first().sum())}


main = Step(PAPER, "retrieve", run, load_retrieve, Paths)


if __name__ == "__main__":
    main()
