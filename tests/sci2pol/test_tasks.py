"""The 18 benchmark tasks: items, choice scoring, open scoring with the rubric judge, summaries."""

import numpy as np
import pandas as pd
import pytest

from stages.sci2pol.data import _sections, make_papers
from stages.sci2pol.judges import RubricJudge
from stages.sci2pol.tasks import (
    STAGES,
    TASK_BY_NAME,
    TASKS,
    make_items,
    open_prompt,
    score_choice,
    score_open,
    stage_scores,
)

PAPERS = make_papers("bench", 4, 0)
BY_ID = {p.pid: p for p in PAPERS}


def test_eighteen_tasks_in_five_stages():
    assert len(TASKS) == 18 and len(TASK_BY_NAME) == 18
    assert {t.stage for t in TASKS} == set(STAGES)
    assert all((t.kind == "open") == (t.section is not None) for t in TASKS)


def test_items_are_well_formed_and_deterministic():
    items = make_items(PAPERS, 3, 0)
    assert len(items) == 18 * 3
    for it in items:
        if TASK_BY_NAME[it.task].kind == "choice":
            assert 0 <= it.answer < len(it.options) and len(set(it.options)) == len(it.options) >= 2
        else:
            assert it.options == () and it.prompt.endswith(":")
    assert [i.prompt for i in make_items(PAPERS, 3, 0)] == [i.prompt for i in items]


def test_choice_scoring_with_an_oracle_and_an_anti_oracle():
    items = [i for i in make_items(PAPERS, 4, 1) if TASK_BY_NAME[i.task].kind == "choice"]
    answers = {(i.prompt, i.options[i.answer]) for i in items}
    f1, se, picked = score_choice(items, lambda ctx, opts: [0.0 if (ctx, o) in answers else -1.0 for o in opts])
    assert f1 == 100.0 and se == 0.0 and picked == [i.answer for i in items]
    f1, se, picked = score_choice(items, lambda ctx, opts: [-1.0 if (ctx, o) in answers else 0.0 for o in opts])
    assert f1 == 0.0 and all(p != i.answer for p, i in zip(picked, items, strict=True))


def test_open_scoring_gives_the_gold_section_full_marks_and_noise_less():
    items = [i for i in make_items(PAPERS, 2, 0) if TASK_BY_NAME[i.task].kind == "open"]

    def gold(prompt):
        it = next(i for i in items if i.prompt == prompt)
        return "\n " + _sections(BY_ID[it.pid])[TASK_BY_NAME[it.task].section] + "\nExtra line ignored."

    scores, answers = score_open(items, BY_ID, gold, RubricJudge())
    assert np.allclose(scores, 100.0), scores
    assert not any("\n" in a or "Extra" in a for a in answers)
    noise, _ = score_open(items, BY_ID, lambda p: "nothing useful", RubricJudge())
    assert np.all(noise < 100.0)


def test_summarization_and_generation_prompts_differ_and_hide_the_answer():
    p = PAPERS[0]
    for t in TASKS:
        if t.kind != "open":
            continue
        prompt = open_prompt(p, t)
        assert prompt.endswith(f"{t.section}:")
        assert ("Brief draft" in prompt) == (t.stage == "generation")
        if t.stage == "generation":  # the asked section is absent from the draft
            assert f"\n{t.section}:" not in prompt[:-len(t.section) - 1]


def test_stage_scores_are_means_of_task_scores():
    rows = [{"variant": "none", "seed": 0, "task": t.name, "stage": t.stage, "score": 50.0} for t in TASKS]
    rows[0]["score"] = 100.0  # complete_number (autocompletion, 4 tasks)
    out = stage_scores(pd.DataFrame(rows)).iloc[0]
    assert out["autocompletion"] == pytest.approx((100 + 3 * 50) / 4)
    assert out["understanding"] == pytest.approx(50.0)
    assert out["overall"] == pytest.approx((100 + 17 * 50) / 18)
