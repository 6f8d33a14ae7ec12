"""A miniature RULER (Hsieh et al., 2024) scored by likelihood ranking, built on held-out text.

Four task families, each item a haystack of held-out text of a given token length with
needles inserted at random depths, a query at the end, and a small set of candidate
answers ranked by the model's log-likelihood (so every task has a stated chance level):

- ``niah_single``: one needle; candidates = its value + values never in the text.
- ``niah_multikey``: several needles with different keys; candidates = all their values.
- ``multivalue``: one key with several values plus a distractor key; score = share of
  the top-``V`` ranked candidates that are the key's values.
- ``variable_tracking``: chains ``VAR A = v; VAR B = VAR A; …``; the query asks for the
  value of a chain's last variable; candidates = each chain's value (two hops).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

TASKS = ("niah_single", "niah_multikey", "multivalue", "variable_tracking")
KEYS = ("apple", "river", "falcon", "copper", "violet", "maple", "harbor", "canyon", "glacier", "lantern",
        "meadow", "orchid", "pepper", "saddle", "tunnel", "walnut")


@dataclass(frozen=True)
class RulerItem:
    """A prompt, candidate continuations, which of them are right, and the chance score."""

    task: str
    length: int
    prompt: list[int]
    choices: list[list[int]]
    answers: list[int]
    chance: float
    prompt_text: str
    answer_texts: list[str]


def rank_score(choice_logprobs: Sequence[float], answers: Sequence[int]) -> float:
    """Share of the top-|answers| candidates (by log-likelihood) that are right: 1 = perfect, 0 = all wrong."""
    k = len(answers)
    top = np.argsort(-np.asarray(choice_logprobs, dtype=float), kind="stable")[:k]
    return len(set(top.tolist()) & set(answers)) / k


def _number(gen: np.random.Generator, taken: set[str]) -> str:
    while True:
        value = str(int(gen.integers(1000, 10000)))
        if value not in taken:
            taken.add(value)
            return value


def _variable(gen: np.random.Generator, taken: set[str]) -> str:
    while True:
        name = "".join(chr(ord("A") + int(c)) for c in gen.integers(0, 26, size=4))
        if name not in taken:
            taken.add(name)
            return name


def _needles_and_query(task: str, gen: np.random.Generator, n_choices: int, n_keys: int,
                       n_values: int) -> tuple[list[str], str, list[str], list[int], float]:
    """Needle sentences, the query, candidate answer strings, indices of the right ones, chance score."""
    taken: set[str] = set()
    keys = [str(k) for k in gen.choice(KEYS, size=max(n_keys, 2), replace=False)]
    if task == "niah_single":
        value = _number(gen, taken)
        needles = [f"The special magic number for {keys[0]} is {value}."]
        choices = [value] + [_number(gen, taken) for _ in range(n_choices - 1)]
        return needles, f"The special magic number for {keys[0]} is", choices, [0], 1.0 / n_choices
    if task == "niah_multikey":
        values = [_number(gen, taken) for _ in range(n_keys)]
        needles = [f"The special magic number for {k} is {v}." for k, v in zip(keys, values, strict=False)]
        return needles, f"The special magic number for {keys[0]} is", values, [0], 1.0 / n_keys
    if task == "multivalue":
        mine = [_number(gen, taken) for _ in range(n_values)]
        other = [_number(gen, taken) for _ in range(n_values)]
        needles = [f"One of the special magic numbers for {keys[0]} is {v}." for v in mine]
        needles += [f"One of the special magic numbers for {keys[1]} is {v}." for v in other]
        return (needles, f"One of the special magic numbers for {keys[0]} is", mine + other,
                list(range(n_values)), 0.5)
    if task == "variable_tracking":
        needles, values, ends = [], [], []
        for _ in range(n_keys):
            a, b, c = (_variable(gen, taken) for _ in range(3))
            values.append(_number(gen, taken))
            ends.append(c)
            needles += [f"VAR {a} = {values[-1]}.", f"VAR {b} = VAR {a}.", f"VAR {c} = VAR {b}."]
        return needles, f"The value of VAR {ends[0]} is", values, [0], 1.0 / n_keys
    raise ValueError(f"unknown mini-RULER task {task!r} (expected one of {TASKS})")


def build_item(task: str, length: int, haystack: Sequence[str], encode: Callable[[str], list[int]],
               gen: np.random.Generator, n_choices: int = 4, n_keys: int = 4, n_values: int = 2) -> RulerItem:
    """One item of ``length`` prompt tokens: haystack sentences with the needles at random depths, then the query."""
    needles, query, answers_text, answers, chance = _needles_and_query(task, gen, n_choices, n_keys, n_values)
    fixed = sum(len(encode(" " + s)) for s in needles) + len(encode(" " + query))
    budget = length - fixed
    if budget < 0:
        raise ValueError(f"mini-RULER length {length} is shorter than the {fixed} tokens of needles and query")
    filler: list[str] = []
    used = 0
    start = int(gen.integers(0, len(haystack)))
    for i in range(len(haystack) * 4):
        piece = haystack[(start + i) % len(haystack)]
        n = len(encode(" " + piece))
        if used + n > budget:
            break
        filler.append(piece)
        used += n
    # needles go between filler sentences, in order (a chain's steps stay in order)
    slots = sorted(gen.integers(0, len(filler) + 1, size=len(needles)).tolist())
    parts: list[str] = []
    for i in range(len(filler) + 1):
        parts += [needles[j] for j, s in enumerate(slots) if s == i]
        if i < len(filler):
            parts.append(filler[i])
    text = " ".join(parts) + " " + query
    prompt = encode(text)
    if len(prompt) > length:
        prompt = prompt[-length:]
    order = gen.permutation(len(answers_text)).tolist()  # the right answers sit at random candidate slots
    answers_text = [answers_text[i] for i in order]
    answers = sorted(order.index(a) for a in answers)
    choices = [encode(" " + a) for a in answers_text]
    return RulerItem(task=task, length=length, prompt=prompt, choices=choices, answers=answers, chance=chance,
                     prompt_text=text, answer_texts=answers_text)


def haystack_sentences(texts: Sequence[str]) -> list[str]:
    """Sentences of held-out text (no digits, so a needle's number is the only one in the haystack)."""
    out = []
    for text in texts:
        for s in text.replace("\n", " ").split(". "):
            s = s.strip()
            if 20 <= len(s) <= 400 and not any(ch.isdigit() for ch in s):
                out.append(s if s.endswith(".") else s + ".")
    return out
