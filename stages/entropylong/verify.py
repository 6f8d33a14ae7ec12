"""Step ``verify``: model-in-the-loop verification of every candidate (§3.3).

For each (training document, candidate) the candidate is prepended to the document and ONE
forward pass of the entropy model gives H′ at all of the document's selected positions (exact
by causality: the document is cut after its last selected position). ΔI = (H − H′)/H. The
same is done for ``null_chunks`` random pool chunks per document (not retrieved for it): their
ΔI at each position is the null, the ΔI that any text of that length gives there. A candidate
is kept for the position it was retrieved for when ΔI > ε AND ΔI exceeds the null's
``null_quantile`` at that position, and only at main positions (z > α, outside the start band).
Held-out documents are not verified: the evaluation prepends their retrieved contexts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.assets.loaders import load_causal_lm, load_retrieval_index
from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, VerifyConfig, load_verify
from stages.entropylong.contexts import shared_entities, target_in_context, title_in_text
from stages.entropylong.expectations import kept_suite, verification_suite
from stages.entropylong.uncertainty import entropies_at_positions, information_gain, keep_verified, null_threshold


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents from the entropy step")
    positions: Path = inp("selected positions")
    candidates: Path = inp("retrieved candidates")
    entropy_model: Path = inp("SmolLM2-135M asset")
    index: Path = inp("Wikipedia retrieval index asset (its chunks are the null's random texts)")
    verification: Path = out("H, H′ and ΔI for every (training document, candidate or null chunk, position)")
    kept: Path = out("the verified contexts of the main construction (ΔI > ε and > the null, main positions)")


@dataclass(frozen=True)
class Job:
    """One forward pass: a candidate (or a random null chunk) prepended to a document prefix."""

    doc_id: str
    chunk_id: int
    tokens: list[int]
    offset: int
    positions: list[int]
    null: bool = False


def null_chunks(doc_id: str, article_id: str, cands: pd.DataFrame, chunks: pd.DataFrame, n: int,
                seed: int) -> pd.DataFrame:
    """``n`` seeded random pool chunks for one document: not its own article, not one of its candidates."""
    mine = set(cands.loc[cands.doc_id == doc_id, "chunk_id"].astype(int))
    pool = chunks[(chunks.article_id.astype(str) != article_id) & ~chunks.chunk_id.isin(mine)]
    if len(pool) < n:
        raise ValueError(f"only {len(pool)} pool chunks available for the ΔI null of {doc_id}, need {n}")
    return pool.iloc[rng(seed, PAPER, "null", doc_id).permutation(len(pool))[:n]]


def verification_jobs(docs: pd.DataFrame, positions: pd.DataFrame, cands: pd.DataFrame, chunks: pd.DataFrame,
                      tokenizer: Any, cfg: VerifyConfig, seed: int) -> list[Job]:
    """One job per distinct (document, candidate) and per null chunk: context + separator + the document up to its
    last selected position."""
    jobs = []
    by_doc = docs.set_index("doc_id")
    sep = tokenizer(cfg.separator, add_special_tokens=False)["input_ids"]

    def job(doc_id: str, chunk_id: int, text: str, null: bool) -> Job:
        pos = sorted(positions.loc[positions.doc_id == doc_id, "pos"].astype(int).tolist())
        context = tokenizer(text, add_special_tokens=False)["input_ids"][:cfg.max_context_tokens] + sep
        doc = list(by_doc.token_ids.loc[doc_id])[:pos[-1] + 1]
        return Job(doc_id=str(doc_id), chunk_id=int(chunk_id), tokens=[*context, *doc], offset=len(context),
                   positions=pos, null=null)

    for (doc_id, chunk_id), group in cands.groupby(["doc_id", "chunk_id"], sort=True):
        jobs.append(job(str(doc_id), int(chunk_id), str(group.text.iloc[0]), False))
    for doc_id in sorted(cands.doc_id.unique()):
        for r in null_chunks(str(doc_id), str(by_doc.article_id.loc[doc_id]), cands, chunks, cfg.null_chunks,
                             seed).itertuples(index=False):
            jobs.append(job(str(doc_id), int(r.chunk_id), str(r.text), True))
    return jobs


def verification_table(jobs: list[Job], h_ctx: list[Any], positions: pd.DataFrame, cands: pd.DataFrame,
                       docs: pd.DataFrame, chunks: pd.DataFrame, null_quantile: float) -> pd.DataFrame:
    """ΔI of every (document, candidate or null chunk, position); the position each candidate was retrieved for;
    the null level (``null_quantile`` of the null chunks' ΔI) at every position."""
    pos_info = positions.set_index(["doc_id", "pos"])
    retrieved = cands.set_index(["doc_id", "chunk_id", "pos"])
    texts = docs.set_index("doc_id").text
    by_chunk = chunks.set_index("chunk_id")
    rows = []
    for job, ent in zip(jobs, h_ctx, strict=True):
        chunk = by_chunk.loc[job.chunk_id]
        for pos, h2 in zip(job.positions, ent, strict=True):
            info = pos_info.loc[(job.doc_id, pos)]
            key = (job.doc_id, job.chunk_id, pos)
            hit = retrieved.loc[key] if not job.null and key in retrieved.index else None
            rows.append({"doc_id": job.doc_id, "chunk_id": job.chunk_id, "pos": pos, "null": job.null,
                         "retrieved_for": hit is not None, "rank": int(hit["rank"]) if hit is not None else -1,
                         "score": float(hit["score"]) if hit is not None else float("nan"),
                         "z": float(info.z), "early": bool(info.early), "main": bool(info.main),
                         "rel_pos": float(info.rel_pos),
                         "h": float(info.entropy), "h_ctx": float(h2),
                         "delta_i": float(information_gain(info.entropy, h2)),
                         "title": str(chunk.title), "title_in_doc": title_in_text(str(chunk.title), texts[job.doc_id]),
                         "shared_entities": shared_entities(str(chunk.text), texts[job.doc_id]),
                         "target_in_context": target_in_context(str(info.target), str(chunk.text))})
    table = pd.DataFrame(rows)
    levels = table[table.null].groupby(["doc_id", "pos"]).delta_i.apply(
        lambda d: null_threshold(d.to_numpy(), null_quantile)).rename("null_level")
    return table.merge(levels.reset_index(), on=["doc_id", "pos"], how="left")


def run(cfg: VerifyConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """One forward pass per (training document, candidate or null chunk); ΔI at every selected position; the kept
    set (ΔI > ε and above the null level, at main positions)."""
    v = cfg
    docs = read_parquet(paths.documents, columns=["doc_id", "article_id", "split", "token_ids", "text"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "entropy", "z", "early", "main", "rel_pos",
                                                       "target"])
    cands = read_parquet(paths.candidates, columns=["doc_id", "pos", "rank", "chunk_id", "title", "score", "text"])
    train_ids = set(docs.doc_id[docs.split == "train"])
    cands = cands[cands.doc_id.isin(train_ids)]
    if cands.empty:
        raise ValueError("no training document has a retrieved candidate to verify")
    chunks = load_retrieval_index(paths.index).chunks
    model, tokenizer = load_causal_lm(paths.entropy_model)
    jobs = verification_jobs(docs, positions, cands, chunks, tokenizer, v, ctx.seed)
    h_ctx = entropies_at_positions(model, [j.tokens for j in jobs], [[p + j.offset for p in j.positions]
                                                                     for j in jobs],
                                   batch_size=v.batch_size, progress=True)
    table = verification_table(jobs, h_ctx, positions, cands, docs, chunks, v.null_quantile)
    validate_table(table, f"{PAPER}.verification", verification_suite())
    main = table[table.retrieved_for & table.main]
    kept = main[keep_verified(main.delta_i.to_numpy(), v.epsilon, main.null_level.to_numpy())].merge(
        cands[["doc_id", "pos", "chunk_id", "text"]], on=["doc_id", "pos", "chunk_id"], how="left")
    validate_table(kept, f"{PAPER}.kept", kept_suite(v.epsilon))
    write_parquet(table, paths.verification)
    write_parquet(kept, paths.kept)
    return {"forward_passes": len(jobs), "null_passes": sum(j.null for j in jobs),
            "forward_tokens": sum(len(j.tokens) for j in jobs),
            "main_candidates": len(main), "kept": len(kept),
            "acceptance": float(len(kept) / len(main)) if len(main) else float("nan")}


main = Step(PAPER, "verify", run, load_verify, Paths)


if __name__ == "__main__":
    main()
