"""The programmatic annotator: a critique with its good and poor spans, as the paper's JSON (§3.1).

The official pipeline asks a strong model for ``{"critique", "good_spans", "poor_spans"}``
with at most two spans of each kind, every span quoted from the output and backed by
the critique. Here a program that knows the facts writes it exactly. Word labels
follow: +1 inside a good span, −1 inside a poor span, 0 elsewhere (stops included).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from stages.text2grad.task import STOP, Example

MAX_SPANS = 2
POOR_KINDS = ("unconfirmed", "invented", "repeated")
SCORE_WORDS = {1: "pos", 0: "zero", -1: "neg"}


@dataclass(frozen=True)
class Annotation:
    """The critic's verdict on one output."""

    critique: str
    good_spans: list[str]
    poor_spans: list[str]
    word_labels: list[int]

    def to_json(self) -> str:
        """The paper's annotation JSON (critique, good spans, poor spans)."""
        return json.dumps({"critique": self.critique, "good_spans": self.good_spans,
                           "poor_spans": self.poor_spans})


def output_sentences(words: list[str]) -> list[tuple[int, int]]:
    """Word index ranges [start, end) of each sentence of an output, stops excluded."""
    ranges, start = [], 0
    for i, w in enumerate(words):
        if w == STOP:
            if i > start:
                ranges.append((start, i))
            start = i + 1
    if start < len(words):
        ranges.append((start, len(words)))
    return ranges


def classify(claim: tuple[str, ...], ex: Example, stated: set[tuple[str, ...]]) -> str:
    """``good`` for a new fact; else why it is poor: unconfirmed, invented, repeated."""
    if claim in set(ex.facts):
        return "repeated" if claim in stated else "good"
    if claim in set(ex.distractors):
        return "unconfirmed"
    return "invented"


def annotate(output: str, ex: Example) -> Annotation:
    """Critique ``output`` against the source; keep the first two good and first two poor spans."""
    words = output.split()
    labels = [0] * len(words)
    stated: set[tuple[str, ...]] = set()
    good: list[str] = []
    poor: dict[str, list[str]] = {k: [] for k in POOR_KINDS}
    n_poor = 0
    for start, end in output_sentences(words):
        claim = tuple(words[start:end])
        kind = classify(claim, ex, stated)
        stated.add(claim)
        span = " ".join(claim)
        if kind == "good" and len(good) < MAX_SPANS:
            good.append(span)
            labels[start:end] = [1] * (end - start)
        elif kind != "good" and n_poor < MAX_SPANS:
            poor[kind].append(span)
            n_poor += 1
            labels[start:end] = [-1] * (end - start)
    missing = len(set(ex.facts) - stated)
    parts = [f"correct : {' ; '.join(good)} {STOP}"] if good else []
    parts += [f"{kind} : {' ; '.join(spans)} {STOP}" for kind, spans in poor.items() if spans]
    parts.append(f"missing {missing} {STOP}")
    poor_spans = [s for kind in POOR_KINDS for s in poor[kind]]
    return Annotation(critique=" ".join(parts), good_spans=good, poor_spans=poor_spans, word_labels=labels)


def scores_text(labels: list[int]) -> str:
    """Per-word scores as words, the reward model's second output (``pos zero neg ...``)."""
    return " ".join(SCORE_WORDS[v] for v in labels)


def parse_scores(text: str) -> list[int]:
    """Stored word scores ``"1 0 -1"`` → [1, 0, −1]."""
    return [int(v) for v in text.split()]
