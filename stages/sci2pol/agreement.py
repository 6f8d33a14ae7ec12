"""Judge agreement (Sci2Pol-Bench, Sec. 4.3): rank correlation of each scorer with the quality labels.

Reference-based metrics (ROUGE-L, BERTScore) compare a candidate brief with the gold brief;
judges read the paper and the candidate. The claim: the LM judge ranks briefs closer to
the ground-truth quality than the reference-based metrics do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.sci2pol.data import Brief, Paper, candidate_briefs, gold_brief, make_papers
from stages.sci2pol.judges import Judge, greedy_bertscore, rouge_l, spearman, token_embeddings

RefMetric = Callable[[Sequence[str], Sequence[str]], np.ndarray]


def rouge_metric(refs: Sequence[str], cands: Sequence[str]) -> np.ndarray:
    """ROUGE-L F of each candidate against its reference."""
    return np.array([rouge_l(r, c) for r, c in zip(refs, cands, strict=True)])


def bertscore_metric(encoder: Any) -> RefMetric:
    """Greedy token-level BERTScore F1 on the encoder's contextual token embeddings."""
    def metric(refs: Sequence[str], cands: Sequence[str]) -> np.ndarray:
        er, ec = token_embeddings(encoder, refs), token_embeddings(encoder, cands)
        return np.array([greedy_bertscore(a, b) for a, b in zip(er, ec, strict=True)])
    return metric


def agreement_set(n_papers: int, seed: int) -> tuple[list[Paper], list[Brief]]:
    """Benchmark papers and their candidate briefs (gold + each degradation) for one seed."""
    papers = make_papers("bench", n_papers, seed)
    return papers, candidate_briefs(papers, seed)


def score_all(papers: Sequence[Paper], briefs: Sequence[Brief], judges: dict[str, Judge],
              metrics: dict[str, RefMetric]) -> dict[str, np.ndarray]:
    """Every judge's and metric's score of every candidate brief."""
    by_id = {p.pid: p for p in papers}
    ps = [by_id[b.pid] for b in briefs]
    texts = [b.text for b in briefs]
    refs = [gold_brief(p).text for p in ps]
    out = {name: np.asarray(j.score(ps, texts), dtype=float) for name, j in judges.items()}
    out.update({name: np.asarray(m(refs, texts), dtype=float) for name, m in metrics.items()})
    return out


def correlations(scores: dict[str, np.ndarray], labels: Sequence[int]) -> dict[str, float]:
    """Spearman correlation of each scorer with the quality labels."""
    return {name: spearman(s, labels) for name, s in scores.items()}
