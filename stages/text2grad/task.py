"""The fact-summarisation task: sources of facts and hedged distractors, noisy summaries, metrics.

A source is a shuffled list of short sentences ``NAME VERB ADJ NOUN .``; the facts are
stated plainly and the distractors are hedged (``maybe ...``). A good summary states
every fact once, in source order, and nothing else: no distractor, no invented detail.
This plays the role of SLF5K's summaries, with critiques a program can write exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NAMES = ("tom", "ann", "bob", "eve", "sam", "kim", "lena", "omar")
VERBS = ("saw", "has", "wants", "sold")
ADJECTIVES = ("red", "blue", "green", "big", "small", "old")
NOUNS = ("car", "dog", "hat", "boat", "cake", "lamp")
HEDGE = "maybe"
STOP = "."

Claim = tuple[str, str, str, str]


@dataclass(frozen=True)
class Example:
    """One source: its sentences in order and which of them are facts."""

    claims: tuple[Claim, ...]
    is_fact: tuple[bool, ...]

    @property
    def facts(self) -> tuple[Claim, ...]:
        """The facts in source order."""
        return tuple(c for c, f in zip(self.claims, self.is_fact, strict=True) if f)

    @property
    def distractors(self) -> tuple[Claim, ...]:
        """The hedged claims in source order."""
        return tuple(c for c, f in zip(self.claims, self.is_fact, strict=True) if not f)

    def source_text(self) -> str:
        """The source as text: facts plainly, distractors after ``maybe``."""
        return " ".join(sentence(c) if f else f"{HEDGE} {sentence(c)}"
                        for c, f in zip(self.claims, self.is_fact, strict=True))

    def reference(self) -> str:
        """The reference summary: every fact once, in source order."""
        return summary_text(self.facts)


def parse_source(text: str) -> Example:
    """Inverse of :meth:`Example.source_text`."""
    claims, is_fact = [], []
    for words in split_sentences(text):
        hedged = words[0] == HEDGE
        claim = words[1:] if hedged else words
        if len(claim) != 4:
            raise ValueError(f"not a source sentence: {' '.join(words)!r}")
        claims.append(tuple(claim))
        is_fact.append(not hedged)
    return Example(claims=tuple(claims), is_fact=tuple(is_fact))  # type: ignore[arg-type]


def sentence(claim: Sequence[str]) -> str:
    """``tom saw red car .``"""
    return " ".join(claim) + f" {STOP}"


def summary_text(claims: Sequence[Sequence[str]]) -> str:
    """Sentences joined by spaces (an empty summary is the empty string)."""
    return " ".join(sentence(c) for c in claims)


def random_claim(rng: np.random.Generator) -> Claim:
    """A uniformly random claim."""
    return (str(rng.choice(NAMES)), str(rng.choice(VERBS)), str(rng.choice(ADJECTIVES)), str(rng.choice(NOUNS)))


def sample_example(rng: np.random.Generator, n_facts: int, n_distractors: int) -> Example:
    """A source with distinct subjects (so a claim is identified by its name) in random order."""
    names = rng.choice(NAMES, size=n_facts + n_distractors, replace=False)
    claims = [(str(n), str(rng.choice(VERBS)), str(rng.choice(ADJECTIVES)), str(rng.choice(NOUNS))) for n in names]
    is_fact = [True] * n_facts + [False] * n_distractors
    order = rng.permutation(len(claims))
    return Example(claims=tuple(claims[i] for i in order), is_fact=tuple(is_fact[i] for i in order))


@dataclass(frozen=True)
class Noise:
    """Error rates of the noisy summariser (the warm-start data and the reward model's outputs)."""

    p_drop_fact: float
    p_keep_distractor: float
    p_alter: float
    p_repeat: float


def noisy_summary(ex: Example, noise: Noise, rng: np.random.Generator) -> str:
    """A summary with the typical errors: dropped facts, kept distractors, altered details, repeats."""
    out: list[Claim] = []
    for claim, fact in zip(ex.claims, ex.is_fact, strict=True):
        keep = rng.random() >= noise.p_drop_fact if fact else rng.random() < noise.p_keep_distractor
        if not keep:
            continue
        if rng.random() < noise.p_alter:
            slot = int(rng.integers(2, 4))
            pool = ADJECTIVES if slot == 2 else NOUNS
            claim = tuple(str(rng.choice([w for w in pool if w != claim[slot]])) if i == slot else w
                          for i, w in enumerate(claim))  # type: ignore[assignment]
        out.append(claim)
        if rng.random() < noise.p_repeat:
            out.append(claim)
    return summary_text(out)


def split_sentences(text: str) -> list[list[str]]:
    """Words of each sentence (a trailing fragment without a stop counts as a sentence)."""
    sentences, current = [], []
    for word in text.split():
        if word == STOP:
            sentences.append(current)
            current = []
        else:
            current.append(word)
    if current:
        sentences.append(current)
    return sentences


def fact_f1(output: str, ex: Example) -> float:
    """F1 of stated sentences vs the facts: precision counts distinct stated facts over stated sentences."""
    stated = [tuple(s) for s in split_sentences(output)]
    facts = set(ex.facts)
    hits = len(set(stated) & facts)
    if not stated or not hits:
        return 0.0
    precision, recall = hits / len(stated), hits / len(facts)
    return 2 * precision * recall / (precision + recall)


def missing_facts(output: str, ex: Example) -> int:
    """How many of the source's facts the output does not state (the critique's ``missing N``)."""
    return len(set(ex.facts) - {tuple(s) for s in split_sentences(output)})


def reference_words(ex: Example) -> int:
    """Words of the reference summary, stops counted as words like an output's n (c of the normalised dense arm)."""
    return len(ex.reference().split())


def rouge_l_prf(outputs: Sequence[str], references: Sequence[str]) -> list[tuple[float, float, float]]:
    """ROUGE-L (precision, recall, F-measure) of each output against its reference (``rouge-score``)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    out = []
    for o, r in zip(outputs, references, strict=True):
        s = scorer.score(r, o)["rougeL"]
        out.append((s.precision, s.recall, s.fmeasure))
    return out


def rouge_l(outputs: Sequence[str], references: Sequence[str]) -> list[float]:
    """ROUGE-L F-measure of each output against its reference (``rouge-score``)."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    return [scorer.score(ref, out)["rougeL"].fmeasure for out, ref in zip(outputs, references, strict=True)]
