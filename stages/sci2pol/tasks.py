"""The 18 benchmark tasks in five stages (Sci2Pol-Bench, Table 1), built from benchmark papers.

Choice tasks are scored by macro F1 of the option with the highest log-likelihood; every
option of an item is named in the prompt equally often (the paper names each distractor
once, as a comparison arm, a comparison group, a design not used or a secondary outcome),
so spotting an option in the prompt cannot pick the answer. Open tasks are answered in one
line and scored on that line alone (``judges.open_answer_score``: content × form factor).
Every score is on 0-100; a stage is the mean of its tasks, overall the mean of all tasks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stages.core.seeding import rng
from stages.sci2pol.data import ACTIVE, BENCH_TOPICS, FLIP, Paper, degrade, other_area, render, sections
from stages.sci2pol.judges import bootstrap_se_of, macro_f1, open_answer_score

STAGES = ("autocompletion", "understanding", "summarization", "generation", "verification")


@dataclass(frozen=True)
class TaskSpec:
    """One task: its stage, kind (choice/open) and, for open tasks, the brief section asked for."""

    name: str
    stage: str
    kind: str
    section: str | None = None


TASKS = (
    TaskSpec("complete_number", "autocompletion", "choice"),
    TaskSpec("complete_direction", "autocompletion", "choice"),
    TaskSpec("complete_population", "autocompletion", "choice"),
    TaskSpec("complete_intervention", "autocompletion", "choice"),
    TaskSpec("identify_method", "understanding", "choice"),
    TaskSpec("identify_outcome", "understanding", "choice"),
    TaskSpec("identify_policy_area", "understanding", "choice"),
    TaskSpec("effect_direction_qa", "understanding", "choice"),
    TaskSpec("summarize_findings", "summarization", "open", "Findings"),
    TaskSpec("summarize_context", "summarization", "open", "Context"),
    TaskSpec("summarize_implications", "summarization", "open", "Recommendation"),
    TaskSpec("write_context", "generation", "open", "Context"),
    TaskSpec("write_findings", "generation", "open", "Findings"),
    TaskSpec("write_recommendation", "generation", "open", "Recommendation"),
    TaskSpec("detect_unsupported_number", "verification", "choice"),
    TaskSpec("detect_reversed_finding", "verification", "choice"),
    TaskSpec("detect_off_topic", "verification", "choice"),
    TaskSpec("detect_missing_section", "verification", "choice"),
)
TASK_BY_NAME = {t.name: t for t in TASKS}
YES_NO = ("yes", "no")
DETECTS = {"detect_unsupported_number": "unsupported_number", "detect_reversed_finding": "reversed_finding",
           "detect_off_topic": "off_topic", "detect_missing_section": "missing_section"}
SUMMARY_ASK = {"Findings": "the paper's findings", "Context": "who is affected and what was studied",
               "Recommendation": "what the paper implies for policy, and for whom"}


@dataclass(frozen=True)
class Item:
    """One benchmark item: a prompt, options (choice) with the gold index, or the section asked for (open)."""

    task: str
    pid: str
    prompt: str
    options: tuple[str, ...] = ()
    answer: int = -1


def option_counts(prompt: str, options: Sequence[str]) -> list[int]:
    """How often each option is written in the prompt (whole words, case-insensitive)."""
    return [len(re.findall(rf"(?<![\w-]){re.escape(o.lower())}(?![\w-])", prompt.lower())) for o in options]


def _shuffled(correct: str, wrong: Sequence[str], g: np.random.Generator) -> tuple[tuple[str, ...], int]:
    opts = [correct, *dict.fromkeys(w for w in wrong if w != correct)]
    order = g.permutation(len(opts))
    return tuple(opts[i] for i in order), int(np.where(order == 0)[0][0])


def make_item(task: str, p: Paper, others: Sequence[Paper], g: np.random.Generator, bad: bool = False) -> Item:
    """One item of ``task`` for paper ``p``; ``others`` supplies an off-topic brief, ``bad`` whether a
    verification item shows a defective brief (answer "no") or a gold one ("yes")."""
    head = f"Paper: {p.body}\n"
    t = p.topic
    f = p.findings[int(g.integers(len(p.findings)))]
    if task == "complete_number":
        nums = [str(v) for v in sorted(p.numbers)]
        opts, ans = _shuffled(str(f.value), nums, g)
        return Item(task, p.pid, f"{head}Brief: {t.intervention.capitalize()} {ACTIVE[f.direction][0]} {f.outcome} by",
                    opts, ans)
    if task == "complete_direction":
        right, wrong = (f"{ACTIVE[d][0]} {f.outcome}" for d in (f.direction, FLIP[f.direction]))
        opts, ans = _shuffled(right, [wrong], g)
        return Item(task, p.pid, f"{head}Brief: {t.intervention.capitalize()}", opts, ans)
    if task == "complete_population":
        opts, ans = _shuffled(t.population, [t.comparison], g)
        return Item(task, p.pid, f"{head}Brief: Policymakers should weigh {t.intervention} for", opts, ans)
    if task == "complete_intervention":
        opts, ans = _shuffled(t.intervention, [t.alternative], g)
        return Item(task, p.pid, f"{head}Brief: Policymakers should weigh", opts, ans)
    if task == "identify_method":
        opts, ans = _shuffled(p.method, p.other_methods, g)
        return Item(task, p.pid, f"{head}Question: Which design did the study use? Answer:", opts, ans)
    if task == "identify_outcome":
        verb = "fell" if f.direction == "down" else "rose"
        other = next(x for x in p.findings if x is not f)
        opts, ans = _shuffled(f.outcome, [other.outcome], g)
        return Item(task, p.pid, f"{head}Question: Which outcome {verb} in the treated arm? Answer:", opts, ans)
    if task == "identify_policy_area":
        areas = [x.subject for x in BENCH_TOPICS if x.subject != p.subject]
        wrong = [areas[int(i)] for i in g.choice(len(areas), size=3, replace=False)]
        opts, ans = _shuffled(p.subject, wrong, g)
        return Item(task, p.pid, f"{head}Question: Which policy area does the paper inform? Answer:", opts, ans)
    if task == "effect_direction_qa":
        asked = f.direction if g.random() < 0.5 else FLIP[f.direction]
        verb = "reduce" if asked == "down" else "increase"
        return Item(task, p.pid, f"{head}Question: Did {t.intervention} {verb} {f.outcome}? Answer:",
                    YES_NO, 0 if asked == f.direction else 1)
    spec = TASK_BY_NAME.get(task)
    if spec is not None and spec.kind == "open":
        return Item(task, p.pid, open_prompt(p, spec, g))
    if task in DETECTS:
        brief = degrade(p, DETECTS[task], others[0], g).text if bad else render(sections(p, g))
        return Item(task, p.pid, f"{head}Brief:\n{brief}\nQuestion: Is the brief faithful to the paper, complete "
                                 f"and on topic? Answer:", YES_NO, 1 if bad else 0)
    raise ValueError(f"unknown task {task!r}")


def open_prompt(p: Paper, spec: TaskSpec, g: np.random.Generator) -> str:
    """Summarization: the paper alone, asked for one sentence on one aspect; generation: the paper and a
    brief draft holding the other sections (drawn wordings), asked for the missing one. Both end at the
    section heading."""
    head = f"Paper: {p.body}\n"
    if spec.stage == "summarization":
        return f"{head}Summarize {SUMMARY_ASK[spec.section]} in one sentence of your own words.\n{spec.section}:"
    draft = {k: v for k, v in sections(p, g).items() if k != spec.section}
    return (f"{head}Brief draft:\n{render(draft)}\nWrite the missing {spec.section} section in one sentence."
            f"\n{spec.section}:")


def make_items(papers: Sequence[Paper], items_per_task: int, seed: int,
               tasks: Sequence[TaskSpec] = TASKS) -> list[Item]:
    """``items_per_task`` items of every task on distinct papers where there are enough (each task draws
    its own papers, so the tasks together cover every benchmark paper); verification items are half
    defective, half gold."""
    g = rng(seed, "bench-items")
    papers = list(papers)
    items = []
    for t in tasks:
        order = np.concatenate([g.permutation(len(papers)) for _ in range(-(-items_per_task // len(papers)))])
        bad = g.permutation(np.arange(items_per_task) % 2 == 1)
        for k in range(items_per_task):
            i = int(order[k])
            items.append(make_item(t.name, papers[i], [other_area(papers, i, g)], g, bool(bad[k])))
    return items


def first_line(text: str) -> str:
    """The first non-empty line of a generated answer, with single spaces."""
    return next((" ".join(line.split()) for line in text.split("\n") if line.strip()), "")


def score_choice(items: Sequence[Item], logliks: Callable[[str, Sequence[str]], Sequence[float]],
                 n_bootstrap: int = 1000, seed: int = 0) -> tuple[float, float, list[int]]:
    """Macro F1 (×100) of the highest-likelihood option, its bootstrap SE, and the picked option of each
    item; ``logliks(context, options)`` gives every option's log-likelihood at once."""
    pred = [int(np.argmax(logliks(it.prompt, it.options))) for it in items]
    gold = [it.answer for it in items]
    se = bootstrap_se_of(lambda idx: 100 * macro_f1([gold[i] for i in idx], [pred[i] for i in idx]),
                         len(items), n_bootstrap, seed)
    return 100 * macro_f1(gold, pred), se, pred


def score_open(items: Sequence[Item], papers: dict[str, Paper],
               generate: Callable[[list[str]], list[str]]) -> tuple[np.ndarray, list[str]]:
    """Score (0-100) and answer (first line) of each open item; ``generate`` answers a list of prompts.
    The answer alone is scored: section content × form factor (``open_answer_score``)."""
    answers = [first_line(a) for a in generate([it.prompt for it in items])]
    scores = np.array([open_answer_score(papers[it.pid], TASK_BY_NAME[it.task].section, a, it.prompt)
                       for it, a in zip(items, answers, strict=True)], dtype=float)
    return scores, answers


def stage_scores(task_scores: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, seed): each stage's mean task score and the overall mean over all tasks (Sec. 4)."""
    by = ["variant", "seed"]
    stages = task_scores.pivot_table(index=by, columns="stage", values="score", aggfunc="mean")
    stages = stages.reindex(columns=[s for s in STAGES if s in stages.columns])
    stages["overall"] = task_scores.groupby(by).score.mean()
    return stages.reset_index()


def _task_score(kind: str, rows: pd.DataFrame, idx: np.ndarray) -> float:
    """A task's score on the resampled items ``idx``: macro F1 (×100) for choice tasks, mean item score else."""
    if kind == "choice":
        return 100 * macro_f1(rows.correct.to_numpy()[idx].tolist(), rows.picked.to_numpy()[idx].tolist())
    return float(rows.item_score.to_numpy()[idx].mean())


def paired_overall_difference(a: pd.DataFrame, b: pd.DataFrame, n_resamples: int = 1000, seed: int = 0,
                              quantile: float = 0.05) -> tuple[float, float]:
    """Bench overall of answers ``a`` minus ``b`` (mean of the task scores, Sec. 4) and the ``quantile`` of that
    difference over paired bootstrap resamples: each task's items are resampled with the same indices for both,
    so the bound reflects which items were drawn, not only the adapters' seeds."""
    tasks = sorted(set(a.task))
    if set(b.task) != set(tasks):
        raise ValueError(f"the two answer sets cover different tasks: {sorted(set(a.task) ^ set(b.task))}")
    ra = {t: a[a.task == t].sort_values("item") for t in tasks}
    rb = {t: b[b.task == t].sort_values("item") for t in tasks}
    for t in tasks:
        if ra[t]["item"].tolist() != rb[t]["item"].tolist():
            raise ValueError(f"task {t}: the two answer sets cover different items")
    kinds = {t: TASK_BY_NAME[t].kind for t in tasks}

    def diff(idx: dict[str, np.ndarray]) -> float:
        return float(np.mean([_task_score(kinds[t], ra[t], idx[t]) - _task_score(kinds[t], rb[t], idx[t])
                              for t in tasks]))

    point = diff({t: np.arange(len(ra[t])) for t in tasks})
    g = np.random.default_rng(seed)
    draws = [diff({t: g.integers(0, len(ra[t]), size=len(ra[t])) for t in tasks}) for _ in range(n_resamples)]
    return point, float(np.quantile(draws, quantile))
