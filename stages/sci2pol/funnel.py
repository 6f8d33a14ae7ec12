"""The Sci2Pol-Corpus funnel (Sec. 5): link, screen, split, filter, polish.

Each step takes the surviving pairs and returns fewer or as many; ``funnel_counts``
reports the count after each step (the paper's 140k → 1,407 → 1,011 → 639), starting
from the candidate (document, citation) pairs, so the counts never increase.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from stages.sci2pol.data import SECTIONS, Paper, PolicyDocument

ScoreFn = Callable[[Sequence[Paper], Sequence[str]], np.ndarray]
SimFn = Callable[[str, str], float]


@dataclass(frozen=True)
class Pair:
    """A (paper, policy text) candidate pair; ``kind`` and ``source_pid`` are ground truth, never read by steps."""

    did: str
    pid: str
    text: str
    is_long: bool
    kind: str
    source_pid: str | None


def normalise_title(s: str) -> str:
    """Lower case, punctuation to spaces, single spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", s.lower()).split())


class Linker:
    """Resolves a citation string to a paper id: DOI exact, then title exact, then fuzzy title."""

    def __init__(self, papers: Sequence[Paper], min_ratio: float) -> None:
        self.by_doi = {p.doi.lower(): p.pid for p in papers}
        self.by_title = {normalise_title(p.title): p.pid for p in papers}
        self.titles = list(self.by_title)
        self.min_ratio = min_ratio

    def resolve(self, citation: str) -> str | None:
        """The linked paper id, or None when nothing matches closely enough."""
        c = citation.strip().lower()
        if c in self.by_doi:
            return self.by_doi[c]
        t = normalise_title(citation)
        if t in self.by_title:
            return self.by_title[t]
        best, best_ratio = None, 0.0
        for cand in difflib.get_close_matches(t, self.titles, n=3, cutoff=self.min_ratio):
            r = difflib.SequenceMatcher(None, t, cand).ratio()
            if r > best_ratio:
                best, best_ratio = cand, r
        return self.by_title[best] if best is not None else None


def link(docs: Sequence[PolicyDocument], papers: Sequence[Paper], min_ratio: float,
         max_cited: int = 3) -> list[Pair]:
    """Pairs (document, linked paper) for documents that link to 1..``max_cited`` distinct papers."""
    linker = Linker(papers, min_ratio)
    pairs = []
    for d in docs:
        linked = list(dict.fromkeys(x for x in (linker.resolve(c) for c in d.citations) if x is not None))
        if not 1 <= len(linked) <= max_cited:
            continue
        pairs.extend(Pair(d.did, pid, d.text, d.is_long, d.kind, d.source_pid) for pid in linked)
    return pairs


def n_words(text: str) -> int:
    """Whitespace word count."""
    return len(text.split())


def screen(pairs: Sequence[Pair], papers: dict[str, Paper], judge: ScoreFn, min_score: float,
           max_words: int) -> list[Pair]:
    """Keep pairs the judge scores at least ``min_score``; documents longer than the judge's context
    (``max_words``) pass unjudged to ``split``."""
    short = [p for p in pairs if n_words(p.text) <= max_words]
    scores = judge([papers[p.pid] for p in short], [p.text for p in short]) if short else np.zeros(0)
    keep = {id(p) for p, s in zip(short, scores, strict=True) if s >= min_score}
    return [p for p in pairs if id(p) in keep or n_words(p.text) > max_words]


def split(pairs: Sequence[Pair], papers: dict[str, Paper], judge: ScoreFn, min_score: float,
          max_words: int) -> list[Pair]:
    """Recover long documents: cut into paragraphs, keep the best-judged paragraph if it passes."""
    out = []
    for p in pairs:
        if n_words(p.text) <= max_words:
            out.append(p)
            continue
        parts = [s for s in p.text.split("\n\n") if s.strip() and n_words(s) <= max_words]
        if not parts:
            continue
        scores = judge([papers[p.pid]] * len(parts), parts)
        best = int(np.argmax(scores))
        if scores[best] >= min_score:
            out.append(replace(p, text=parts[best]))
    return out


def bow_cosine(a: str, b: str) -> float:
    """Cosine similarity of bag-of-words counts."""
    ca, cb = Counter(re.findall(r"[a-z0-9]+", a.lower())), Counter(re.findall(r"[a-z0-9]+", b.lower()))
    dot = sum(ca[w] * cb[w] for w in ca)
    na, nb = np.sqrt(sum(v * v for v in ca.values())), np.sqrt(sum(v * v for v in cb.values()))
    return float(dot / (na * nb)) if na and nb else 0.0


def filter_pairs(pairs: Sequence[Pair], papers: dict[str, Paper], sim: SimFn, min_sim: float,
                 max_sim: float) -> list[Pair]:
    """Keep pairs whose paper/text similarity is in [min_sim, max_sim] (off-topic below, copies above)."""
    return [p for p in pairs if min_sim <= sim(papers[p.pid].text, p.text) <= max_sim]


def exemplar_headings(exemplars: Sequence[str]) -> list[str]:
    """Section headings in the order the (three) style exemplars use them."""
    order: list[str] = []
    for ex in exemplars:
        for h in re.findall(r"(?:^|\n)([A-Z][a-z]+):", ex):
            if h not in order:
                order.append(h)
    return order


def polish_text(text: str, headings: Sequence[str]) -> str:
    """Style normalisation: sections in the exemplars' order, one per line, single spaces."""
    parts = {}
    for m in re.finditer(r"(?:^|\n)([A-Z][a-z]+):\s*(.*?)(?=\n[A-Z][a-z]+:|\Z)", text, flags=re.S):
        parts[m.group(1)] = " ".join(m.group(2).split())
    if not parts:
        return " ".join(text.split())
    ordered = [h for h in headings if h in parts] + [h for h in parts if h not in headings]
    return "\n".join(f"{h}: {parts[h]}" for h in ordered)


def polish(pairs: Sequence[Pair], exemplars: Sequence[str]) -> list[Pair]:
    """In-context style normalisation with exemplars (deterministic stand-in for the LM rewrite)."""
    if len(exemplars) != 3:
        raise ValueError(f"polish uses three exemplars, got {len(exemplars)}")
    headings = exemplar_headings(exemplars) or list(SECTIONS)
    return [replace(p, text=polish_text(p.text, headings)) for p in pairs]


def funnel_counts(stages: dict[str, Sequence[object]]) -> dict[str, int]:
    """Count after each step, in order."""
    return {k: len(v) for k, v in stages.items()}


def run_funnel(docs: Sequence[PolicyDocument], papers: Sequence[Paper], judge: ScoreFn, sim: SimFn,
               exemplars: Sequence[str], *, min_ratio: float, max_cited: int, min_score: float,
               max_words: int, min_sim: float, max_sim: float) -> tuple[list[Pair], dict[str, int]]:
    """The whole funnel; returns the polished pairs and the count after each step."""
    by_id = {p.pid: p for p in papers}
    linked = link(docs, papers, min_ratio, max_cited)
    screened = screen(linked, by_id, judge, min_score, max_words)
    recovered = split(screened, by_id, judge, min_score, max_words)
    filtered = filter_pairs(recovered, by_id, sim, min_sim, max_sim)
    polished = polish(filtered, exemplars)
    citations = [c for d in docs for c in d.citations]
    counts = funnel_counts({"citations": citations, "link": linked, "screen": screened, "split": recovered,
                            "filter": filtered, "polish": polished})
    return polished, counts
