"""DuPO's dual-learning reward and the dual-reconstruction reranker (paper §3), on the word problems.

For a primal output y to problem x = (known part, unknown number u), the dual question is the
known part with u hidden plus the answer parsed from y; the model's reconstruction û gives the
self-supervised reward r(y) = 1[û = u] (§3.1, the binary case). No label of x is used: u is
read off the problem itself. The filter (§3.2) decides which number may be hidden: only those
that the primal output's own answer determines uniquely (judged from the question and the output,
never the label); without it any number may be hidden.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from stages.dupo.problems import dual_prompt, dual_reward, oracle_reward, parse_answer

Solver = Callable[[list[str]], list[str]]   # dual prompts -> dual outputs (the model, greedily)


def mask_choices(duals: pd.DataFrame, use_filter: bool) -> dict[int, list[int]]:
    """Per problem, the numbers DuPO may hide: those passing the filter, or every number without it."""
    kept = duals[duals.passes_filter == 1] if use_filter else duals
    return {int(p): sorted(g.mask_index.astype(int).tolist()) for p, g in kept.groupby("problem_id")}


def dual_questions(outputs: Sequence[str], masked_texts: Sequence[str | None]) -> list[str | None]:
    """The dual question of each primal output: hidden-number text + its parsed answer (None: no question)."""
    questions: list[str | None] = []
    for out, masked in zip(outputs, masked_texts, strict=True):
        answer = parse_answer(out)
        questions.append(None if answer is None or masked is None else dual_prompt(masked, answer))
    return questions


def dupo_rewards(outputs: Sequence[str], masked_texts: Sequence[str | None], hidden: Sequence[int],
                 solve: Solver, cache: dict[str, str] | None = None) -> list[float]:
    """Self-supervised reward of each primal output: 1 if the dual reconstructs the hidden number (DuPO eq. 3)."""
    # an output with no dual question (unparseable, or an answer that determines no number) gets 0
    questions = dual_questions(outputs, masked_texts)
    cache = {} if cache is None else cache
    todo = sorted({q for q in questions if q is not None and q not in cache})
    if todo:
        cache.update(zip(todo, solve(todo), strict=True))
    return [0.0 if q is None else dual_reward(cache[q], h) for q, h in zip(questions, hidden, strict=True)]


def oracle_rewards(outputs: Sequence[str], answers: Sequence[int]) -> list[float]:
    """The RLVR baseline's reward: the parsed answer against the label."""
    return [oracle_reward(o, a) for o, a in zip(outputs, answers, strict=True)]


def majority_vote(answers: Sequence[int | None]) -> int | None:
    """Self-consistency: the most frequent parsed answer (ties: the one seen first)."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    best = max(counts.values())
    return next(a for a in answers if a is not None and counts[a] == best)


def dual_rerank(answers: Sequence[int | None], scores: dict[int, float]) -> int | None:
    """DuPO's inference-time reranker: the answer with the best dual-reconstruction score (ties: first seen)."""
    parsed = [a for a in answers if a is not None]
    if not parsed:
        return None
    best = max(scores.get(a, 0.0) for a in parsed)
    return next(a for a in parsed if scores.get(a, 0.0) == best)


def rerank_accuracies(samples: Sequence[Sequence[int | None]], scores: Sequence[dict[int, float]],
                      truth: Sequence[int], ns: Sequence[int]) -> dict[str, list[float]]:
    """Best-of-N accuracy of dual reranking, majority vote and a random pick, and pass@N, for each N.

    ``samples[i]`` are problem i's parsed answers in sampling order (i.i.d., so the first is a random pick).
    """
    out: dict[str, list[float]] = {k: [] for k in ("dual", "majority", "random", "pass")}
    for n in ns:
        hits = {k: [] for k in out}
        for answers, sc, t in zip(samples, scores, truth, strict=True):
            first = list(answers[:n])
            hits["dual"].append(dual_rerank(first, sc) == t)
            hits["majority"].append(majority_vote(first) == t)
            hits["random"].append(first[0] == t)
            hits["pass"].append(t in first)
        for k in out:
            out[k].append(float(np.mean(hits[k])))
    return out
