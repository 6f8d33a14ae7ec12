"""The 18 benchmark tasks in five stages (Sci2Pol-Bench, Table 1), built from benchmark papers.

Choice tasks are scored by macro F1 of the option with the highest log-likelihood. Open
tasks are answered in one line: a summarization answer is scored alone with the summary
rubric (clarity, accuracy, coverage; 1-5), a generated brief section is put back into the
gold brief and scored with the brief rubric (0-5). Every score is on 0-100; a stage is
the mean of its tasks, overall the mean of all tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stages.sci2pol.data import METHODS, POOLS, Paper, _sections, degrade, render
from stages.sci2pol.judges import Judge, SummaryRubricJudge, bootstrap_se_of, macro_f1

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
    TaskSpec("detect_hallucinated_number", "verification", "choice"),
    TaskSpec("detect_wrong_direction", "verification", "choice"),
    TaskSpec("detect_off_topic", "verification", "choice"),
    TaskSpec("detect_copy", "verification", "choice"),
)
TASK_BY_NAME = {t.name: t for t in TASKS}
YES_NO = ("yes", "no")


@dataclass(frozen=True)
class Item:
    """One benchmark item: a prompt, options (choice) with the gold index, or the section asked for (open)."""

    task: str
    pid: str
    prompt: str
    options: tuple[str, ...] = ()
    answer: int = -1


def _shuffled(correct: str, wrong: Sequence[str], g: np.random.Generator) -> tuple[tuple[str, ...], int]:
    opts = [correct, *dict.fromkeys(w for w in wrong if w != correct)]
    order = g.permutation(len(opts))
    return tuple(opts[i] for i in order), int(np.where(order == 0)[0][0])


def make_item(task: str, p: Paper, other: Paper, g: np.random.Generator) -> Item:
    """One item of ``task`` for paper ``p`` (``other`` supplies distractors and off-topic text)."""
    f = p.findings[0]
    topics = POOLS[p.pool]
    head = f"Paper: {p.text}\n"
    flip = {"reduced": "increased", "increased": "reduced"}
    if task == "complete_number":
        opts, ans = _shuffled(str(f.value), [str(f.value + d) for d in (11, -3, 23)], g)
        return Item(task, p.pid, f"{head}Brief: {p.intervention.capitalize()} {f.direction} {f.outcome} by", opts, ans)
    if task == "complete_direction":
        opts, ans = _shuffled(f.direction, [flip[f.direction]], g)
        return Item(task, p.pid, f"{head}Brief: {p.intervention.capitalize()}", opts, ans)
    if task == "complete_population":
        opts, ans = _shuffled(p.population, [t[3] for t in topics if t[3] != p.population][:3], g)
        return Item(task, p.pid, f"{head}Brief: Policymakers should weigh {p.intervention} for", opts, ans)
    if task == "complete_intervention":
        opts, ans = _shuffled(p.intervention, [t[1] for t in topics if t[1] != p.intervention][:3], g)
        return Item(task, p.pid, f"{head}Brief: Policymakers should weigh", opts, ans)
    if task == "identify_method":
        opts, ans = _shuffled(p.method, METHODS[p.pool], g)
        return Item(task, p.pid, f"{head}Question: Which method did the study use? Answer:", opts, ans)
    if task == "identify_outcome":
        opts, ans = _shuffled(f.outcome, [t[2] for t in topics if t[2] != f.outcome][:3], g)
        return Item(task, p.pid, f"{head}Question: Which outcome did the study measure? Answer:", opts, ans)
    if task == "identify_policy_area":
        opts, ans = _shuffled(p.subject, [t[0] for t in topics if t[0] != p.subject][:3], g)
        return Item(task, p.pid, f"{head}Question: Which policy area is this? Answer:", opts, ans)
    if task == "effect_direction_qa":
        asked = f.direction if g.random() < 0.5 else flip[f.direction]
        return Item(task, p.pid, f"{head}Question: Did {p.intervention} {asked[:-1]} {f.outcome}? Answer:",
                    YES_NO, 0 if asked == f.direction else 1)
    spec = TASK_BY_NAME.get(task)
    if spec is not None and spec.kind == "open":
        return Item(task, p.pid, open_prompt(p, spec))
    kinds = {"detect_hallucinated_number": "hallucinated_number", "detect_wrong_direction": "wrong_direction",
             "detect_off_topic": "off_topic", "detect_copy": "verbatim_copy"}
    if task in kinds:
        bad = g.random() < 0.5
        brief = degrade(p, kinds[task], other, g).text if bad else render(_sections(p))
        return Item(task, p.pid, f"{head}Brief: {brief}\nQuestion: Is the brief faithful and written for "
                                 f"policymakers? Answer:", YES_NO, 1 if bad else 0)
    raise ValueError(f"unknown task {task!r}")


SUMMARY_ASK = {"Findings": "the paper's findings", "Context": "who is affected and what was studied",
               "Recommendation": "what the paper implies for policy, and for whom"}


def open_prompt(p: Paper, spec: TaskSpec) -> str:
    """Summarization: the paper alone, asked for one sentence on one aspect; generation: the paper and a
    brief draft holding the other sections, asked for the missing one. Both end at the section heading."""
    head = f"Paper: {p.text}\n"
    if spec.stage == "summarization":
        return f"{head}Summarize {SUMMARY_ASK[spec.section]} in one sentence.\n{spec.section}:"
    draft = {k: v for k, v in _sections(p).items() if k != spec.section}
    return f"{head}Brief draft:\n{render(draft)}\nWrite the missing {spec.section} section.\n{spec.section}:"


def make_items(papers: Sequence[Paper], items_per_task: int, seed: int) -> list[Item]:
    """``items_per_task`` items of every task, cycling through the papers."""
    from stages.core.seeding import rng

    g = rng(seed, "bench-items")
    items = []
    for t in TASKS:
        for i in range(items_per_task):
            p = papers[i % len(papers)]
            other = next((q for q in papers[i + 1:] + papers[:i] if q.subject != p.subject), papers[0])
            items.append(make_item(t.name, p, other, g))
    return items


def first_line(text: str) -> str:
    """The first non-empty line of a generated answer, with single spaces."""
    return next((" ".join(line.split()) for line in text.split("\n") if line.strip()), "")


def fill_section(p: Paper, section: str, text: str) -> str:
    """The gold brief with ``section`` replaced by a model's text (what the judge scores)."""
    s = _sections(p)
    s[section] = first_line(text)
    return render(s)


def score_choice(items: Sequence[Item], logliks: Callable[[str, Sequence[str]], Sequence[float]],
                 n_bootstrap: int = 1000, seed: int = 0) -> tuple[float, float, list[int]]:
    """Macro F1 (×100) of the highest-likelihood option, its bootstrap SE, and the picked option of each
    item; ``logliks(context, options)`` gives every option's log-likelihood at once."""
    pred = [int(np.argmax(logliks(it.prompt, it.options))) for it in items]
    gold = [it.answer for it in items]
    se = bootstrap_se_of(lambda idx: 100 * macro_f1([gold[i] for i in idx], [pred[i] for i in idx]),
                         len(items), n_bootstrap, seed)
    return 100 * macro_f1(gold, pred), se, pred


def score_open(items: Sequence[Item], papers: dict[str, Paper], generate: Callable[[str], str],
               brief_judge: Judge) -> tuple[np.ndarray, list[str]]:
    """Score (0-100) and answer of each open item. Summarization: the answer's first line scored alone by
    the summary rubric (1-5 → 0-100); generation: the section put back into the gold brief and scored by
    ``brief_judge`` (0-5 → 0-100)."""
    answers = [first_line(generate(it.prompt)) for it in items]
    ps = [papers[it.pid] for it in items]
    scores = np.zeros(len(items))
    for k, (it, p, a) in enumerate(zip(items, ps, answers, strict=True)):
        spec = TASK_BY_NAME[it.task]
        if spec.stage == "summarization":
            scores[k] = 25 * (float(SummaryRubricJudge(spec.section).score([p], [a])[0]) - 1)
        else:
            scores[k] = 20 * float(brief_judge.score([p], [fill_section(p, spec.section, a)])[0])
    return scores, answers


def stage_scores(task_scores: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, seed): each stage's mean task score and the overall mean over all tasks (Sec. 4)."""
    by = ["variant", "seed"]
    stages = task_scores.pivot_table(index=by, columns="stage", values="score", aggfunc="mean")
    stages = stages.reindex(columns=[s for s in STAGES if s in stages.columns])
    stages["overall"] = task_scores.groupby(by).score.mean()
    return stages.reset_index()
