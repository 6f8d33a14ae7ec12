"""Step ``construct``: the three training sets and the shared held-out triples, in SmolLM2 tokens (§3.4).

EntropyLong: a document's verified contexts (shuffled) then the document. No verification:
every retrieved candidate of the same main positions. Concatenation: no retrieved context.
All three use the same training documents (those with at least one verified context, so every
EntropyLong sequence holds one) and are filled to exactly ``target_len`` tokens with the same
random pool chunks in front, so their token counts are equal (asserted). Held-out documents are
scored after their retrieved contexts, after as many tokens of random pool text, and alone.
A validation split of ``val_docs`` training-split documents (those without a verified context
first, so training loses as few documents as possible) is kept out of training and built as
the held-out triples are: the learning rate is chosen on its documents' loss alone, and it
shows whether the adapters forget.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.loaders import load_causal_lm, load_retrieval_index
from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, ConstructConfig, load_construct
from stages.entropylong.expectations import heldout_suite, sequences_suite
from stages.entropylong.sequences import VARIANTS, assemble, truncate_document, with_and_without_context

FILLER_CHUNKS = 32


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents")
    positions: Path = inp("selected positions (which are main positions)")
    candidates: Path = inp("retrieved candidates")
    kept: Path = inp("verified contexts")
    index: Path = inp("Wikipedia retrieval index asset (its chunks are the filler pool)")
    entropy_model: Path = inp("SmolLM2-135M asset (its tokenizer)")
    sequences: Path = out("training sequences of every variant")
    heldout: Path = out("the shared held-out evaluation triples")
    validation: Path = out("validation triples like the held-out ones (training split, never trained on)")


def variant_contexts(doc_id: str, candidates: pd.DataFrame, kept: pd.DataFrame, main_pos: set[tuple[str, int]]
                     ) -> dict[str, list[int]]:
    """Chunk ids preceding a document in each variant (distinct, in retrieval order)."""
    mine = candidates[candidates.doc_id == doc_id]
    at_main = np.array([(doc_id, int(p)) in main_pos for p in mine.pos], dtype=bool)
    mine = mine.loc[at_main].sort_values(["pos", "rank"])
    verified = kept[kept.doc_id == doc_id].sort_values(["pos", "rank"])
    return {"entropylong": list(dict.fromkeys(verified.chunk_id.astype(int))),
            "no_verification": list(dict.fromkeys(mine.chunk_id.astype(int))), "concatenation": []}


def validation_split(docs: pd.DataFrame, kept_doc_ids: set[str], eligible: set[str], n: int,
                     gen: np.random.Generator) -> list[str]:
    """``n`` training-split documents with a retrieved context at a main position, kept out of training: those
    without a verified context first, random within."""
    train = docs[(docs.split == "train") & docs.doc_id.isin(eligible)]
    has_kept = train.doc_id.isin(kept_doc_ids).to_numpy()
    order = np.lexsort((gen.permutation(len(train)), has_kept))
    if len(train) <= n:
        raise ValueError(f"{PAPER}.construct.val_docs = {n} leaves no training document (have {len(train)})")
    return train.doc_id.to_numpy()[order[:n]].tolist()


def separator_id(tokenizer: Any, separator: str) -> int:
    """The one token id of the separator that ends every piece of a sequence."""
    ids = tokenizer(separator, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ValueError(f"{PAPER}.construct.separator {separator!r} must be one token, got {len(ids)}")
    return int(ids[0])


def run(cfg: ConstructConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build and validate every sequence of the documents with verified contexts; assert equal tokens."""
    docs = read_parquet(paths.documents, columns=["doc_id", "article_id", "title", "split", "token_ids"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "main"])
    cands = read_parquet(paths.candidates, columns=["doc_id", "pos", "rank", "chunk_id", "text"])
    kept = read_parquet(paths.kept, columns=["doc_id", "pos", "rank", "chunk_id"])
    chunks = load_retrieval_index(paths.index).chunks
    model, tokenizer = load_causal_lm(paths.entropy_model)
    vocab = int(model.config.vocab_size)
    del model
    sep = separator_id(tokenizer, cfg.separator)
    own = set(docs.article_id) | {t.lower() for t in docs.title}
    pool = chunks[~chunks.article_id.isin(own) & ~chunks.title.str.lower().isin(own)].reset_index(drop=True)

    def encode(texts: list[str]) -> list[list[int]]:
        return [ids[:cfg.max_context_tokens] for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]

    pool_ids = encode(pool.text.tolist())
    chunk_ids = dict(zip(chunks.chunk_id.astype(int), encode(chunks.text.tolist()), strict=True))
    main_rows = positions[positions.main]
    main_pos = {(d, int(p)) for d, p in zip(main_rows.doc_id, main_rows.pos, strict=True)}
    retrieved_at_main = {d for d, p in zip(cands.doc_id, cands.pos, strict=True) if (d, int(p)) in main_pos}
    val_ids = validation_split(docs, set(kept.doc_id), retrieved_at_main, cfg.val_docs,
                               rng(ctx.seed, PAPER, "validation"))
    train_docs = docs[(docs.split == "train") & docs.doc_id.isin(set(kept.doc_id)) & ~docs.doc_id.isin(val_ids)]
    if len(train_docs) < cfg.min_train_docs:
        raise ValueError(f"only {len(train_docs)} training documents have a verified context "
                         f"({PAPER}.construct.min_train_docs = {cfg.min_train_docs})")
    rows = []
    for doc in train_docs.itertuples(index=False):
        doc_tokens = truncate_document(list(doc.token_ids), cfg.target_len, cfg.min_context_tokens)
        contexts = variant_contexts(doc.doc_id, cands, kept, main_pos)
        for copy in range(cfg.sequences_per_doc):
            order = rng(ctx.seed, PAPER, "filler", doc.doc_id, copy).permutation(len(pool))[:FILLER_CHUNKS]
            filler = [pool_ids[i] for i in order]
            for variant in VARIANTS:
                built = assemble(doc_tokens, [chunk_ids[i] for i in contexts[variant]], filler, cfg.target_len, sep,
                                 rng(ctx.seed, PAPER, "shuffle", variant, doc.doc_id, copy))
                rows.append({"variant": variant, "doc_id": doc.doc_id, "copy": copy, "tokens": built.tokens,
                             "n_tokens": len(built.tokens), "doc_start": built.doc_start,
                             "n_contexts": built.n_contexts, "max_token": max(built.tokens)})
    sequences = pd.DataFrame(rows)
    totals = sequences.groupby("variant").n_tokens.sum()
    if totals.nunique() != 1:
        raise AssertionError(f"variants must have equal token counts, got {totals.to_dict()}")
    validate_table(sequences, f"{PAPER}.sequences", sequences_suite(cfg.target_len, vocab))

    def triples(split_docs: pd.DataFrame, name: str) -> pd.DataFrame:
        rows = []
        for doc in split_docs.itertuples(index=False):
            retrieved = variant_contexts(doc.doc_id, cands, kept, main_pos)["no_verification"]
            if not retrieved:
                continue
            doc_tokens = truncate_document(list(doc.token_ids), cfg.target_len, cfg.min_context_tokens)
            order = rng(ctx.seed, PAPER, f"{name}-filler", doc.doc_id).permutation(len(pool))[:FILLER_CHUNKS]
            with_ctx, without, control = with_and_without_context(
                doc_tokens, [chunk_ids[i] for i in retrieved], [pool_ids[i] for i in order], cfg.target_len, sep,
                rng(ctx.seed, PAPER, name, doc.doc_id))
            for condition, built in (("with_context", with_ctx), ("without_context", without),
                                     ("random_context", control)):
                rows.append({"doc_id": doc.doc_id, "condition": condition, "tokens": built.tokens,
                             "n_tokens": len(built.tokens), "doc_start": built.doc_start,
                             "n_contexts": built.n_contexts, "max_token": max(built.tokens)})
        table = pd.DataFrame(rows, columns=["doc_id", "condition", "tokens", "n_tokens", "doc_start", "n_contexts",
                                            "max_token"])
        if table.empty:
            raise ValueError(f"no {name} document has a retrieved context at a main position: nothing to evaluate")
        validate_table(table, f"{PAPER}.{name}", heldout_suite(cfg.target_len, vocab))
        return table

    heldout = triples(docs[docs.split == "heldout"], "heldout")
    validation = triples(docs.set_index("doc_id").loc[val_ids].reset_index(), "validation")
    write_parquet(sequences, paths.sequences)
    write_parquet(heldout, paths.heldout)
    write_parquet(validation, paths.validation)
    return {"train_docs": len(train_docs), "train_tokens_per_variant": int(totals.iloc[0]),
            "sequences_per_variant": int(len(sequences) // len(VARIANTS)),
            "heldout_docs": int(heldout.doc_id.nunique()), "validation_docs": int(validation.doc_id.nunique())}


main = Step(PAPER, "construct", run, load_construct, Paths)


if __name__ == "__main__":
    main()
