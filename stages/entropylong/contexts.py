"""Retrieving candidate contexts for high-entropy positions (§3.2), with self-retrieval excluded.

The query is the text of a window of ``w`` tokens on each side of the position. The
retrieval pool is a dense index of Wikipedia chunks; a document's own article and any
chunk that nearly duplicates the document are removed from its candidates, otherwise
retrieval would find the document's continuation in the document itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

_WORD = re.compile(r"\w+")
_ENTITY = re.compile(r"\b[A-Z][a-zA-Z]{2,}\b")
# capitalised words that start sentences or are function words, not entities
_NOT_ENTITIES = frozenset("""The This That These Those There Their They Then When Where While Which What Who
Its His Her Our And But For From With Within Without After Before During Since Until Into Over Under About
Also However Although Because Many Most Some Such Other Each Every Both All Any One Two Three First Second
Following According Between Among Today Later Early Late Several Further Here""".split())


def query_window(token_ids: Sequence[int], position: int, width: int) -> tuple[int, int]:
    """The token span [position − w, position + w] (clipped) used as the retrieval query (§3.2)."""
    return max(0, position - width), min(len(token_ids), position + width + 1)


def word_ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """The set of lower-cased word n-grams of ``text``."""
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def ngram_overlap(chunk: str, document: str, n: int) -> float:
    """Fraction of the chunk's word n-grams that also occur in the document (0 if the chunk has none)."""
    grams = word_ngrams(chunk, n)
    return len(grams & word_ngrams(document, n)) / len(grams) if grams else 0.0


def is_self_retrieval(chunk_article: str, chunk_title: str, chunk_text: str, doc_article: str, doc_title: str,
                      doc_text: str, n: int, max_overlap: float) -> bool:
    """A chunk of the document's own article (same id or title) or a near-duplicate of the document."""
    if chunk_article == doc_article or chunk_title.strip().lower() == doc_title.strip().lower():
        return True
    return ngram_overlap(chunk_text, doc_text, n) > max_overlap


def top_k_candidates(scores: np.ndarray, ids: np.ndarray, chunks: pd.DataFrame, doc: pd.Series, k: int, n: int,
                     max_overlap: float) -> list[tuple[int, float]]:
    """The first ``k`` hits (chunk id, cosine) of one query that are not self-retrievals of ``doc``."""
    kept: list[tuple[int, float]] = []
    for score, cid in zip(scores, ids, strict=True):
        if cid < 0:
            continue
        row = chunks.iloc[int(cid)]
        if is_self_retrieval(str(row.article_id), str(row.title), str(row.text), str(doc.article_id),
                             str(doc.title), str(doc.text), n, max_overlap):
            continue
        kept.append((int(row.chunk_id), float(score)))
        if len(kept) == k:
            break
    return kept


def entities(text: str) -> set[str]:
    """Capitalised words that are not sentence-openers or function words: a cheap proxy for named entities."""
    return {w for w in _ENTITY.findall(text) if w not in _NOT_ENTITIES}


def shared_entities(context: str, document: str) -> int:
    """How many entity words a context and a document have in common."""
    return len(entities(context) & entities(document))


def title_in_text(title: str, text: str) -> bool:
    """Whether a chunk's article title (lower-cased, without a parenthesised qualifier) occurs in a text."""
    core = re.sub(r"\s*\(.*\)$", "", title).strip().lower()
    return len(core) >= 3 and core in text.lower()


def target_in_context(target: str, context: str) -> bool:
    """Whether the predicted token (≥ 4 characters, some letter) starts a word of the context: a copy dependency."""
    word = target.strip()
    if len(word) < 4 or not any(ch.isalpha() for ch in word):
        return False
    return re.search(r"(?<!\w)" + re.escape(word), context, flags=re.IGNORECASE) is not None
