"""Building long training sequences (§3.4): verified contexts, shuffled, then the document last.

Every variant fills a sequence of exactly ``target_len`` tokens the same way, so the three
training sets have equal token counts and differ only in which contexts precede each
document: EntropyLong (the verified contexts), no verification (every retrieved
candidate) and random concatenation (none). Whatever room is left in front is filled
with randomly drawn pool chunks; the sequence is cut from the left to the target length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

VARIANTS = ("entropylong", "no_verification", "concatenation")


@dataclass(frozen=True)
class BuiltSequence:
    """One training sequence and where its document starts."""

    tokens: list[int]
    doc_start: int
    n_contexts: int


def truncate_document(doc: Sequence[int], target_len: int, min_context_tokens: int) -> list[int]:
    """The document's first tokens, leaving ``min_context_tokens`` (and one separator) for contexts."""
    room = target_len - min_context_tokens - 1
    if room < 1:
        raise ValueError(f"target_len {target_len} leaves no room for a document after {min_context_tokens} "
                         "context tokens")
    return list(doc[:room])


def assemble(doc: Sequence[int], contexts: Sequence[Sequence[int]], filler: Sequence[Sequence[int]],
             target_len: int, sep: int, gen: np.random.Generator) -> BuiltSequence:
    """[filler …] + shuffled contexts + document, each piece ending in ``sep``, cut from the left to ``target_len``."""
    doc_piece = [*doc, sep]
    if len(doc_piece) > target_len:
        raise ValueError(f"document of {len(doc)} tokens does not fit a sequence of {target_len}")
    pieces = [[*contexts[i], sep] for i in gen.permutation(len(contexts))]
    total = len(doc_piece) + sum(len(p) for p in pieces)
    front: list[list[int]] = []
    for chunk in filler:
        if total >= target_len:
            break
        front.append([*chunk, sep])
        total += len(front[-1])
    if total < target_len:
        raise ValueError(f"filler pool too small to fill {target_len} tokens (have {total})")
    tokens = [t for p in [*front, *pieces, doc_piece] for t in p][-target_len:]
    return BuiltSequence(tokens=tokens, doc_start=target_len - len(doc_piece), n_contexts=len(contexts))


def with_and_without_context(doc: Sequence[int], contexts: Sequence[Sequence[int]], filler: Sequence[Sequence[int]],
                             target_len: int, sep: int, gen: np.random.Generator
                             ) -> tuple[BuiltSequence, BuiltSequence, BuiltSequence]:
    """The held-out triple: shuffled contexts + document (cut from the left); the document alone after ``sep``;
    and a control with as many tokens of random pool chunks in place of the contexts (same document position)."""
    pieces = [[*contexts[i], sep] for i in gen.permutation(len(contexts))]
    doc_piece = [*doc, sep]
    tokens = [t for p in [*pieces, doc_piece] for t in p][-target_len:]
    with_ctx = BuiltSequence(tokens=tokens, doc_start=len(tokens) - len(doc_piece), n_contexts=len(contexts))
    room = with_ctx.doc_start
    front = [t for chunk in filler for t in [*chunk, sep]]
    if len(front) < room:
        raise ValueError(f"filler pool too small for a {room}-token control context")
    control = BuiltSequence(tokens=[*front[-room:], *doc_piece], doc_start=room, n_contexts=0)
    return with_ctx, BuiltSequence(tokens=[sep, *doc_piece], doc_start=1, n_contexts=0), control
