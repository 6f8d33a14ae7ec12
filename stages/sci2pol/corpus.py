"""Step ``corpus``: generate corpus papers and policy documents, run the funnel, write training pairs.

Writes the curated pairs (funnel output), as many unfiltered pairs (drawn from the
linked pairs, before any screening) and the held-out gold briefs that choose the LoRA
learning rate and steps (``val``: corpus-topic papers of their own stream, which no
training pair is about), with the funnel counts and the ground-truth purity of each set
(share of pairs whose document really is about the paper and is a gold brief).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.sci2pol.config import PAPER, CorpusInputs, load_corpus
from stages.sci2pol.data import gold_brief, make_documents, make_papers, render, sections
from stages.sci2pol.expectations import pairs_suite
from stages.sci2pol.finetune import unfiltered_sample
from stages.sci2pol.funnel import Pair, bow_cosine, link, run_funnel
from stages.sci2pol.judges import RubricJudge

EXEMPLAR_SEED_KEY = 7919  # the three style exemplars come from their own stream
VAL_SEED_KEY = 104729  # so do the held-out papers of the LoRA validation briefs


@dataclass(frozen=True)
class Paths:
    pairs: Path = out("curated and unfiltered training pairs (Parquet)")
    funnel: Path = out("funnel counts and purity of each set (JSON)")


def purity(pairs: list[Pair]) -> float:
    """Share of pairs whose document is a gold brief of the linked paper (ground truth)."""
    return sum(p.kind == "gold" and p.pid == p.source_pid for p in pairs) / len(pairs) if pairs else float("nan")


def build(cfg: CorpusInputs, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pairs table and the funnel summary."""
    d, f = cfg.data, cfg.funnel
    papers = make_papers("corpus", d.n_corpus_papers, seed)
    docs = make_documents(papers, d.n_documents, seed, d.p_bad, d.p_long, d.p_many, d.p_false)
    exemplars = [gold_brief(p).text for p in make_papers("corpus", 3, seed + EXEMPLAR_SEED_KEY)]
    curated, counts = run_funnel(docs, papers, RubricJudge().score, bow_cosine, exemplars, min_ratio=f.min_ratio,
                                 max_cited=f.max_cited, min_score=f.min_score, max_words=f.max_words,
                                 min_sim=f.min_sim, max_sim=f.max_sim)
    linked = link(docs, papers, f.min_ratio, f.max_cited)
    unfiltered = unfiltered_sample(linked, len(curated), seed)
    by_id = {p.pid: p for p in papers}
    true_links = {(doc.did, pid) for doc in docs for pid in doc.true_links}
    val_papers = [replace(p, pid=f"val-{i:04d}") for i, p in
                  enumerate(make_papers("corpus", d.n_val_briefs, seed + VAL_SEED_KEY))]
    g = rng(seed, "val-briefs")
    val = [Pair(f"val-{i:05d}", p.pid, render(sections(p, g)), False, "gold", p.pid) for i, p in enumerate(val_papers)]
    by_id |= {p.pid: p for p in val_papers}
    rows = [{"set": name, **asdict(p), "paper_text": by_id[p.pid].body}
            for name, ps in (("curated", curated), ("unfiltered", unfiltered), ("val", val)) for p in ps]
    # the funnel as an ordered list (write_json sorts mapping keys)
    summary = {"funnel": [{"step": k, "count": v} for k, v in counts.items()],
               "purity": {"curated": purity(curated), "unfiltered": purity(unfiltered), "linked": purity(linked)},
               "link_precision": sum((p.did, p.pid) in true_links for p in linked) / max(len(linked), 1)}
    return pd.DataFrame(rows, columns=["set", "did", "pid", "text", "is_long", "kind", "source_pid",
                                       "paper_text"]), summary


def run(cfg: CorpusInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Generate, run the funnel, validate and write."""
    df, summary = build(cfg, ctx.seed)
    validate_table(df, f"{PAPER}.pairs", pairs_suite(len(df)))
    write_parquet(df, paths.pairs)
    write_json(summary, paths.funnel)
    return summary


main = Step(PAPER, "corpus", run, load_corpus, Paths)


if __name__ == "__main__":
    main()
