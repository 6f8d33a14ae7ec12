"""The reference reasoners that need no training: the rule-based reasoner reading the true scene (faithful
ceiling), the unfaithful reasoner (right answer, wrong steps), the shortcut (right answer, no steps), and
the conversion of a trained model's tokens to text."""

from __future__ import annotations

import numpy as np

from stages.m3cotbench.model import EOS, PAD
from stages.m3cotbench.scene import SLOTS, Scene, gold
from stages.m3cotbench.steps_text import EVAL, render_chain


def rule_based(s: Scene, task: str, gen: np.random.Generator) -> str:
    """The faithful ceiling: the gold key steps read from the true scene and the gold answer."""
    steps, answer = gold(s, task)
    return render_chain(steps, answer, EVAL, gen)


def unfaithful(s: Scene, task: str, gen: np.random.Generator) -> str:
    """Right answer, wrong steps: every key step keeps its slot and form but states another value."""
    steps, answer = gold(s, task)
    wrong = [(slot, str(gen.choice([v for v in SLOTS[slot] if v != value]))) for slot, value in steps]
    return render_chain(wrong, answer, EVAL, gen)


def shortcut(s: Scene, task: str, gen: np.random.Generator) -> str:
    """Right answer, no steps."""
    return render_chain([], gold(s, task)[1], EVAL, gen)


def tokens_to_text(tokens: list[int], vocab: list[str], gen: np.random.Generator) -> str:
    """A generated token row as text: its steps up to the first answer token, then the answer."""
    steps: list[tuple[str, str]] = []
    answer = None
    for t in tokens:
        if t in (EOS, PAD):
            break
        name = vocab[t]
        if name.startswith("ans="):
            answer = name[4:]
            break
        if "=" in name:
            slot, value = name.split("=", 1)
            steps.append((slot, value))
    return render_chain(steps, answer, EVAL, gen)


def split_chain(text: str) -> tuple[str, str]:
    """(the steps part, the answer part) of a rendered chain, for shuffling steps between items."""
    i = text.find("Answer:")
    return (text, "") if i < 0 else (text[:i].strip(), text[i:])
