"""The step matcher: MiniLM cosine similarity between a step sentence and the reference sentences of the
key steps; a step matches a key step when that key's reference is its nearest reference sentence and the
similarity reaches a threshold chosen on labelled validation pairs."""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.m3cotbench.scene import SLOTS
from stages.m3cotbench.steps_text import REFERENCE

CONCEPTS = [(s, v) for s, vals in SLOTS.items() for v in vals]


def reference_sentences() -> list[str]:
    """The reference sentence of every concept, in CONCEPTS order."""
    return [REFERENCE[s].format(v) for s, v in CONCEPTS]


def labelled_pairs(templates: dict[str, list[str]], n_pairs: int, gen: np.random.Generator) -> list[dict[str, Any]]:
    """Pairs (step sentence, reference concept, matched?): half matched, a quarter the same slot with another
    value (hard negatives), a quarter another slot."""
    pairs = []
    for i in range(n_pairs):
        c = int(gen.integers(len(CONCEPTS)))
        slot, value = CONCEPTS[c]
        sentence = templates[slot][int(gen.integers(len(templates[slot])))].format(value)
        kind = i % 4
        if kind < 2:
            ref = c
        elif kind == 2:
            ref = CONCEPTS.index((slot, str(gen.choice([v for v in SLOTS[slot] if v != value]))))
        else:
            ref = int(gen.choice([j for j, (s, _) in enumerate(CONCEPTS) if s != slot]))
        pairs.append({"sentence": sentence, "ref": ref, "label": kind < 2})
    return pairs


def match_scores(sim_to_refs: np.ndarray) -> np.ndarray:
    """Per (sentence, reference): the similarity where that reference is the sentence's nearest, else -inf."""
    nearest = sim_to_refs.argmax(axis=1)
    out = np.full_like(sim_to_refs, -np.inf, dtype=float)
    rows = np.arange(len(sim_to_refs))
    out[rows, nearest] = sim_to_refs[rows, nearest]
    return out


def pair_accuracy(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    """Fraction of labelled pairs the matcher decides right at one threshold."""
    return float(np.mean((scores >= threshold) == labels))


def choose_threshold(scores: np.ndarray, labels: np.ndarray, grid: list[float]) -> tuple[float, list[float]]:
    """The grid threshold of highest pair accuracy (first on ties), and the accuracy at every grid point."""
    accs = [pair_accuracy(scores, labels, t) for t in grid]
    return float(grid[int(np.argmax(accs))]), accs
