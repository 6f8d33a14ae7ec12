"""Step ``entropy``: documents, per-token entropies under the entropy model, selected positions (§3.1)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.loaders import load_causal_lm, load_corpus
from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.lm_scoring import score_sequences
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, EntropyConfig, load_entropy
from stages.entropylong.contexts import query_window
from stages.entropylong.expectations import documents_suite, positions_suite, token_entropy_suite
from stages.entropylong.uncertainty import entropy_threshold, entropy_zscores, select_positions


@dataclass(frozen=True)
class Paths:
    wikipedia: Path = inp("Wikipedia lead extracts asset")
    enwiki: Path = inp("enwiki articles asset")
    entropy_model: Path = inp("SmolLM2-135M asset")
    documents: Path = out("documents (entropy-model token ids, split)")
    token_entropy: Path = out("entropy of every predicted token of every document")
    positions: Path = out("selected high-entropy positions with their retrieval queries")


def pick_documents(wiki: pd.DataFrame, enwiki: pd.DataFrame, cfg: EntropyConfig, tokenizer: Any,
                   seed: int) -> pd.DataFrame:
    """The longest Wikipedia extracts and the first enwiki articles, cut to ``doc_tokens``; a seeded held-out set."""
    longest = wiki.assign(n_chars=wiki.text.str.len()).sort_values(["n_chars", "id"], ascending=[False, True])
    picked = [("wikipedia", r) for r in longest.head(cfg.wiki_docs).itertuples(index=False)]
    picked += [("enwiki", r) for r in enwiki.head(cfg.enwiki_docs).itertuples(index=False)]
    rows = []
    for source, r in picked:
        ids = tokenizer(r.text, add_special_tokens=False)["input_ids"][:cfg.doc_tokens]
        if len(ids) < cfg.min_doc_tokens:
            continue
        rows.append({"doc_id": f"d{len(rows):03d}", "source": source, "article_id": str(r.id), "title": str(r.title),
                     "text": tokenizer.decode(ids), "token_ids": [int(t) for t in ids], "n_tokens": len(ids)})
    docs = pd.DataFrame(rows)
    if len(docs) < 2:
        raise ValueError(f"only {len(docs)} documents have at least {cfg.min_doc_tokens} tokens")
    if len(docs) <= cfg.heldout_docs:
        raise ValueError(f"{len(docs)} documents leave none for training after {cfg.heldout_docs} held out")
    n_held = cfg.heldout_docs
    held = set(rng(seed, PAPER, "split").permutation(len(docs))[:n_held].tolist())
    docs["split"] = ["heldout" if i in held else "train" for i in range(len(docs))]
    return docs[["doc_id", "source", "article_id", "title", "split", "text", "token_ids", "n_tokens"]]


def positions_of(doc: pd.Series, entropies: np.ndarray, cfg: EntropyConfig, tokenizer: Any) -> list[dict[str, Any]]:
    """The document's selected positions (at the smallest ablation α) with z-score, threshold and query text.

    ``early`` marks the start band (position < ``exclude_first``), where a context that names the topic completes
    the title; ``main`` (the construction's positions) needs z > α outside that band.
    """
    ids = list(doc.token_ids)
    z = entropy_zscores(entropies)
    picked = select_positions(entropies, cfg.selection_alpha, cfg.query_window, cfg.max_positions,
                              cfg.min_separation)
    rows = []
    for pos in picked:
        lo, hi = query_window(ids, pos, cfg.query_window)
        rows.append({"doc_id": doc.doc_id, "pos": pos, "entropy": float(entropies[pos - 1]), "z": float(z[pos - 1]),
                     "threshold": entropy_threshold(entropies, cfg.alpha), "early": pos < cfg.exclude_first,
                     "main": bool(z[pos - 1] > cfg.alpha) and pos >= cfg.exclude_first,
                     "rel_pos": pos / len(ids), "target": tokenizer.decode([ids[pos]]),
                     "query": tokenizer.decode(ids[lo:hi])})
    return rows


def run(cfg: EntropyConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every document once with the entropy model; select positions; write three tables."""
    model, tokenizer = load_causal_lm(paths.entropy_model)
    docs = pick_documents(load_corpus(paths.wikipedia), load_corpus(paths.enwiki), cfg, tokenizer, ctx.seed)
    validate_table(docs, f"{PAPER}.documents", documents_suite(cfg.doc_tokens, cfg.min_doc_tokens))
    scores = score_sequences(model, docs.token_ids.tolist(), start=1, batch_size=cfg.batch_size, progress=True)
    token_rows, position_rows = [], []
    for doc, s in zip(docs.itertuples(index=False), scores, strict=True):
        token_rows.append(pd.DataFrame({"doc_id": doc.doc_id, "pos": np.arange(1, doc.n_tokens),
                                        "token_id": s.token_ids.astype(int), "entropy": s.entropies.astype(float),
                                        "logprob": s.logprobs.astype(float), "z": entropy_zscores(s.entropies)}))
        position_rows += positions_of(pd.Series(doc._asdict()), s.entropies.astype(float), cfg, tokenizer)
    token_entropy = pd.concat(token_rows, ignore_index=True)
    positions = pd.DataFrame(position_rows, columns=["doc_id", "pos", "entropy", "z", "threshold", "early", "main",
                                                     "rel_pos", "target", "query"])
    if positions.empty:
        raise ValueError(f"no position passed α = {cfg.selection_alpha} in any document")
    max_h = math.log(model.config.vocab_size) + 1e-3
    validate_table(token_entropy, f"{PAPER}.token_entropy", token_entropy_suite(max_h))
    validate_table(positions, f"{PAPER}.positions", positions_suite(set(docs.doc_id), cfg.selection_alpha))
    write_parquet(docs, paths.documents)
    write_parquet(token_entropy, paths.token_entropy)
    write_parquet(positions, paths.positions)
    return {"documents": len(docs), "tokens": int(docs.n_tokens.sum()), "positions": len(positions),
            "main_positions": int(positions.main.sum())}


main = Step(PAPER, "entropy", run, load_entropy, Paths)


if __name__ == "__main__":
    main()
