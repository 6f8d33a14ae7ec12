"""Step ``verify``: model-in-the-loop verification of every candidate (§3.3).

For each (document, candidate) the candidate is prepended to the document and ONE forward
pass of the entropy model gives H′ at all of the document's selected positions (exact by
causality: the document is cut after its last selected position). ΔI = (H − H′)/H; a
candidate is kept for the position it was retrieved for when ΔI > ε.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, VerifyConfig, load_verify
from stages.entropylong.contexts import shared_entities, target_in_context, title_in_text
from stages.entropylong.expectations import kept_suite, verification_suite
from stages.entropylong.uncertainty import entropies_at_positions, information_gain, keep_context


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents from the entropy step")
    positions: Path = inp("selected positions")
    candidates: Path = inp("retrieved candidates")
    entropy_model: Path = inp("SmolLM2-135M asset")
    verification: Path = out("H, H′ and ΔI for every (document, candidate, selected position)")
    kept: Path = out("the verified contexts of the main construction (ΔI > ε at main-α positions)")


@dataclass(frozen=True)
class Job:
    """One forward pass: a candidate prepended to a document prefix."""

    doc_id: str
    chunk_id: int
    tokens: list[int]
    offset: int
    positions: list[int]


def verification_jobs(docs: pd.DataFrame, positions: pd.DataFrame, cands: pd.DataFrame, tokenizer: Any,
                      max_context_tokens: int, separator: str) -> list[Job]:
    """One job per distinct (document, candidate): context + separator + the document up to its last position."""
    jobs = []
    doc_ids = docs.set_index("doc_id").token_ids
    for (doc_id, chunk_id), group in cands.groupby(["doc_id", "chunk_id"], sort=True):
        pos = sorted(positions.loc[positions.doc_id == doc_id, "pos"].astype(int).tolist())
        context = tokenizer(group.text.iloc[0], add_special_tokens=False)["input_ids"][:max_context_tokens]
        context = context + tokenizer(separator, add_special_tokens=False)["input_ids"]
        doc = list(doc_ids.loc[doc_id])[:pos[-1] + 1]
        jobs.append(Job(doc_id=str(doc_id), chunk_id=int(chunk_id), tokens=[*context, *doc], offset=len(context),
                        positions=pos))
    return jobs


def verification_table(jobs: list[Job], h_ctx: list[Any], positions: pd.DataFrame, cands: pd.DataFrame,
                       docs: pd.DataFrame) -> pd.DataFrame:
    """ΔI of every (document, candidate, position), marking the position each candidate was retrieved for."""
    pos_info = positions.set_index(["doc_id", "pos"])
    retrieved = cands.set_index(["doc_id", "chunk_id", "pos"])
    texts = docs.set_index("doc_id").text
    rows = []
    for job, ent in zip(jobs, h_ctx, strict=True):
        chunk = cands[(cands.doc_id == job.doc_id) & (cands.chunk_id == job.chunk_id)].iloc[0]
        for pos, h2 in zip(job.positions, ent, strict=True):
            info = pos_info.loc[(job.doc_id, pos)]
            key = (job.doc_id, job.chunk_id, pos)
            hit = retrieved.loc[key] if key in retrieved.index else None
            rows.append({"doc_id": job.doc_id, "chunk_id": job.chunk_id, "pos": pos,
                         "retrieved_for": hit is not None, "rank": int(hit["rank"]) if hit is not None else -1,
                         "score": float(hit["score"]) if hit is not None else float("nan"),
                         "z": float(info.z), "main": bool(info.main), "rel_pos": float(info.rel_pos),
                         "h": float(info.entropy), "h_ctx": float(h2),
                         "delta_i": float(information_gain(info.entropy, h2)),
                         "title": str(chunk.title), "title_in_doc": title_in_text(str(chunk.title), texts[job.doc_id]),
                         "shared_entities": shared_entities(str(chunk.text), texts[job.doc_id]),
                         "target_in_context": target_in_context(str(info.target), str(chunk.text))})
    return pd.DataFrame(rows)


def run(cfg: VerifyConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """One forward pass per (document, candidate); ΔI at every selected position; the kept set at ε."""
    v = cfg
    docs = read_parquet(paths.documents, columns=["doc_id", "token_ids", "text"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "entropy", "z", "main", "rel_pos", "target"])
    cands = read_parquet(paths.candidates, columns=["doc_id", "pos", "rank", "chunk_id", "title", "score", "text"])
    model, tokenizer = load_causal_lm(paths.entropy_model)
    jobs = verification_jobs(docs, positions, cands, tokenizer, v.max_context_tokens, v.separator)
    h_ctx = entropies_at_positions(model, [j.tokens for j in jobs], [[p + j.offset for p in j.positions]
                                                                     for j in jobs],
                                   batch_size=v.batch_size, progress=True)
    table = verification_table(jobs, h_ctx, positions, cands, docs)
    validate_table(table, f"{PAPER}.verification", verification_suite())
    main = table[table.retrieved_for & table.main]
    kept = main[keep_context(main.delta_i.to_numpy(), v.epsilon)].merge(
        cands[["doc_id", "pos", "chunk_id", "text"]], on=["doc_id", "pos", "chunk_id"], how="left")
    validate_table(kept, f"{PAPER}.kept", kept_suite(v.epsilon))
    write_parquet(table, paths.verification)
    write_parquet(kept, paths.kept)
    return {"forward_passes": len(jobs), "forward_tokens": sum(len(j.tokens) for j in jobs),
            "main_candidates": len(main), "kept": len(kept),
            "acceptance": float(len(kept) / len(main)) if len(main) else float("nan")}


main = Step(PAPER, "verify", run, load_verify, Paths)


if __name__ == "__main__":
    main()
