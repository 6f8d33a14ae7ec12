"""Step sentences: reference templates (gold key steps), matcher-tuning templates and evaluation templates
(disjoint), the rendering of a reasoning chain as text, and the deterministic step parser."""

from __future__ import annotations

import re

import numpy as np

REFERENCE = {"modality": "The imaging modality is {}.", "shape": "The lesion has a {} shape.",
             "size": "The lesion is {} in size.", "location": "The lesion lies in the {} region.",
             "finding": "The finding is consistent with a {}.", "diagnosis": "The diagnosis is {}.",
             "management": "The recommended management is {}."}
# used to choose the matcher's threshold (validation pairs)
TUNE = {"modality": ["This scan was acquired with {}.", "Modality seen: {}."],
        "shape": ["Its outline is {}.", "Shape of the abnormality: {}."],
        "size": ["Its extent is {}.", "The abnormality appears {}."],
        "location": ["It sits in the {} part of the image.", "Position: {} quadrant."],
        "finding": ["This looks like a {}.", "Imaging finding: {}."],
        "diagnosis": ["Overall the process is {}.", "Impression: {} disease."],
        "management": ["Next step: {}.", "Plan: {}."]}
# used to render every evaluated chain and the held-out matcher pairs (never seen when tuning)
EVAL = {"modality": ["The study is a {} examination.", "Examination type: {}."],
        "shape": ["The lesion looks {}.", "Morphology: {} lesion."],
        "size": ["The lesion appears {} overall.", "Lesion size: {}."],
        "location": ["The abnormality is located {}.", "Site: {} of the scan."],
        "finding": ["We observe a {}.", "Most likely finding: {}."],
        "diagnosis": ["This suggests a {} condition.", "Conclusion: {} process."],
        "management": ["Recommend {}.", "Suggested management: {}."]}

_STEP = re.compile(r"Step \d+:\s*")
_ANSWER = re.compile(r"Answer:\s*(.*?)\.?\s*$")


def render_chain(steps: list[tuple[str, str]], answer: str | None, templates: dict[str, list[str]],
                 rng: np.random.Generator) -> str:
    """A chain as text: 'Step 1: <sentence> Step 2: ... Answer: <answer>.' (templates drawn per step)."""
    parts = [f"Step {i + 1}: " + templates[slot][int(rng.integers(len(templates[slot])))].format(value)
             for i, (slot, value) in enumerate(steps)]
    if answer is not None:
        parts.append(f"Answer: {answer}.")
    return " ".join(parts)


def parse(text: str) -> tuple[list[str], str | None]:
    """The deterministic step parser: (step sentences in order, the answer or None if absent)."""
    answer = None
    m = re.search(r"Answer:", text)
    body = text
    if m is not None:
        body, tail = text[:m.start()], text[m.start():]
        am = _ANSWER.match(tail)
        answer = am.group(1).strip() if am else None
    steps = [s.strip() for s in _STEP.split(body) if s.strip()]
    return steps, answer


def n_tokens(text: str) -> int:
    """Token cost of an output: whitespace-separated words (efficiency is in tokens, not seconds)."""
    return len(text.split())
