"""Judge agreement (Sci2Pol-Bench, Sec. 4.3): rank correlation of each scorer with the quality labels.

Reference-based metrics (ROUGE-L, BERTScore) compare a candidate brief with a reference gold
brief written in its own wording draw (so a gold candidate is not its own reference);
judges read the source paper and the candidate. The claim: the LM judge ranks briefs closer
to the ground-truth quality than the reference-based metrics do. The LM judge's competence
is gated first: its scores must separate gold from off-topic briefs (AUC).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.sci2pol.data import Brief, Paper, candidate_briefs, make_papers, reference_brief
from stages.sci2pol.judges import Judge, auc, greedy_bertscore, rouge_l, spearman, token_embeddings

RefMetric = Callable[[Sequence[str], Sequence[str]], np.ndarray]
GATE_KINDS = ("gold", "off_topic")  # the competence gate: gold briefs must outscore off-topic ones


def rouge_metric(refs: Sequence[str], cands: Sequence[str]) -> np.ndarray:
    """ROUGE-L F of each candidate against its reference."""
    return np.array([rouge_l(r, c) for r, c in zip(refs, cands, strict=True)])


def bertscore_metric(encoder: Any) -> RefMetric:
    """Greedy token-level BERTScore F1 on the encoder's contextual token embeddings."""
    def metric(refs: Sequence[str], cands: Sequence[str]) -> np.ndarray:
        er, ec = token_embeddings(encoder, refs), token_embeddings(encoder, cands)
        return np.array([greedy_bertscore(a, b) for a, b in zip(er, ec, strict=True)])
    return metric


def agreement_set(n_papers: int, seed: int, stream: str = "test") -> tuple[list[Paper], list[Brief]]:
    """Benchmark-pool papers and their candidate briefs (gold + each defect) for one seed; the validation
    stream (``stream="val"``) draws other papers."""
    papers = make_papers("bench", n_papers, seed if stream == "test" else 7_000_003 + seed)
    return papers, candidate_briefs(papers, seed)


def score_all(papers: Sequence[Paper], briefs: Sequence[Brief], judges: dict[str, Judge],
              metrics: dict[str, RefMetric], seed: int = 0) -> dict[str, np.ndarray]:
    """Every judge's and metric's score of every candidate brief (metrics against ``reference_brief``)."""
    by_id = {p.pid: p for p in papers}
    ps = [by_id[b.pid] for b in briefs]
    texts = [b.text for b in briefs]
    refs = [reference_brief(p, seed) for p in ps]
    out = {name: np.asarray(j.score(ps, texts), dtype=float) for name, j in judges.items()}
    out.update({name: np.asarray(m(refs, texts), dtype=float) for name, m in metrics.items()})
    return out


def correlations(scores: dict[str, np.ndarray], labels: Sequence[int]) -> dict[str, float]:
    """Spearman correlation of each scorer with the quality labels."""
    return {name: spearman(s, labels) for name, s in scores.items()}


def gate_auc(scores: Sequence[float], kinds: Sequence[str]) -> float:
    """AUC of the scores for gold against off-topic briefs (the competence gate)."""
    s, k = np.asarray(scores, float), np.asarray(kinds)
    return auc(s[k == GATE_KINDS[0]], s[k == GATE_KINDS[1]])


def choose_backend(val: dict[str, tuple[float, float]]) -> str:
    """The backend with the highest validation gate AUC, then the highest validation rho (listed order on ties)."""
    return max(val, key=lambda b: (np.nan_to_num(val[b][0], nan=-1.0), np.nan_to_num(val[b][1], nan=-2.0)))
