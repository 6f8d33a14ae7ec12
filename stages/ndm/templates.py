"""Templated prompts of the two known circuits: indirect-object identification and greater-than.

IOI (Wang et al. 2023): "When Mary and John went to the store, John gave a drink to" -> " Mary"; the
logit difference is logit(indirect object) − logit(subject); the corrupted prompt replaces both names
by two other names (the "ABC" corruption), so it carries no information about the answer.
Greater-than (Hanna et al. 2023): "The war lasted from the year 1732 to the year 17" -> a year after 32;
SmolLM2 writes numbers digit by digit, so the next token is the tens digit: the logit difference is the
mean logit of the digits above the start year's tens digit minus the mean of those below; the corrupted
prompt starts at year 1701.
"""

from __future__ import annotations

from typing import Any

import numpy as np

NAMES = ("Mary", "John", "Tom", "James", "Anna", "Paul", "Sarah", "David", "Laura", "Peter", "Emma", "Mark",
         "Lisa", "Kevin", "Rachel", "Daniel", "Alice", "Michael", "Kate", "Robert", "Jessica", "Steven",
         "Linda", "George", "Susan", "Brian", "Helen", "Frank", "Emily", "Jack")
PLACES = ("store", "park", "school", "hospital", "station", "restaurant", "office", "beach", "garden", "library")
OBJECTS = ("drink", "book", "ring", "key", "letter", "bag", "gift", "ball", "phone", "snack")
IOI_TEMPLATES = (
    "When {A} and {B} went to the {place}, {S} gave a {obj} to",
    "After {A} and {B} arrived at the {place}, {S} handed a {obj} to",
    "While {A} and {B} were at the {place}, {S} passed a {obj} to",
    "Then, {A} and {B} had a long day at the {place}. {S} gave a {obj} to",
)
GT_NOUNS = ("war", "drought", "famine", "siege", "reign", "strike", "dynasty", "expedition", "voyage", "trial")
GT_TEMPLATES = (
    "The {noun} lasted from the year 17{yy} to the year 17",
    "The {noun} went on from the year 17{yy} until the year 17",
)
DIGITS = tuple(str(i) for i in range(10))


def ioi_prompt(rng: np.random.Generator) -> dict[str, Any]:
    """One IOI prompt (ABBA or BABA order at random) with its ABC-corrupted twin."""
    a, b, c, d = rng.choice(len(NAMES), size=4, replace=False)
    io, s = NAMES[a], NAMES[b]
    template = IOI_TEMPLATES[int(rng.integers(len(IOI_TEMPLATES)))]
    place, obj = PLACES[int(rng.integers(len(PLACES)))], OBJECTS[int(rng.integers(len(OBJECTS)))]
    first, second = (io, s) if rng.random() < 0.5 else (s, io)
    text = template.format(A=first, B=second, S=s, place=place, obj=obj)
    c_first, c_second = (NAMES[c], NAMES[d]) if first == io else (NAMES[d], NAMES[c])
    corrupted = template.format(A=c_first, B=c_second, S=NAMES[d], place=place, obj=obj)
    return {"task": "ioi", "text": text, "corrupted": corrupted, "good": [f" {io}"], "bad": [f" {s}"]}


def greater_than_prompt(rng: np.random.Generator) -> dict[str, Any]:
    """One greater-than prompt (start year 17YY, tens digit 1..8) with the 1701-corrupted twin."""
    yy = int(rng.integers(10, 90))
    tens = yy // 10
    template = GT_TEMPLATES[int(rng.integers(len(GT_TEMPLATES)))]
    noun = GT_NOUNS[int(rng.integers(len(GT_NOUNS)))]
    return {"task": "greater_than", "text": template.format(noun=noun, yy=f"{yy:02d}"),
            "corrupted": template.format(noun=noun, yy="01"),
            "good": list(DIGITS[tens + 1:]), "bad": list(DIGITS[:tens])}


def make_prompts(task: str, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """``n`` distinct prompts of one task."""
    make = ioi_prompt if task == "ioi" else greater_than_prompt
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for _ in range(100 * n):
        p = make(rng)
        if p["text"] not in seen:
            seen.add(p["text"])
            out.append(p)
        if len(out) == n:
            return out
    raise ValueError(f"could not draw {n} distinct {task} prompts")
