"""The 18 benchmark tasks: options named equally often, items over all papers, choice and open scoring."""

import numpy as np
import pandas as pd
import pytest

from stages.core.seeding import rng
from stages.sci2pol.data import make_papers, sections
from stages.sci2pol.tasks import (
    STAGES,
    TASK_BY_NAME,
    TASKS,
    make_items,
    open_prompt,
    option_counts,
    paired_overall_difference,
    score_choice,
    score_open,
    stage_scores,
)

PAPERS = make_papers("bench", 24, 0)
BY_ID = {p.pid: p for p in PAPERS}


def test_eighteen_tasks_in_five_stages():
    assert len(TASKS) == 18 and len(TASK_BY_NAME) == 18
    assert {t.stage for t in TASKS} == set(STAGES)
    assert all((t.kind == "open") == (t.section is not None) for t in TASKS)


def test_option_counts_by_hand():
    assert option_counts("Dry forests burn; wet forests less. dry-forests", ["dry forests", "wet forests"]) == [1, 1]
    assert option_counts("12 and 123", ["12", "23"]) == [1, 0]


def test_every_option_is_named_equally_often_in_its_prompt():
    items = make_items(PAPERS, 24, 5)
    for it in items:
        if it.options:
            counts = option_counts(it.prompt, it.options)
            assert len(set(counts)) == 1, (it.task, it.options, counts)
    # the distractors are in the paper: each number, arm, group, design and outcome once
    named_once = {"complete_number", "complete_population", "complete_intervention", "identify_method",
                  "identify_outcome"}
    assert all(option_counts(i.prompt, i.options)[0] == 1 for i in items if i.task in named_once)


def test_items_cover_every_paper_and_verification_is_balanced():
    items = make_items(PAPERS, 24, 0)
    assert len(items) == 18 * 24
    for t in TASKS:
        its = [i for i in items if i.task == t.name]
        assert len({i.pid for i in its}) == 24  # distinct papers, all of them
        if t.stage == "verification":
            assert sum(i.answer for i in its) == 12
    for it in items:
        if TASK_BY_NAME[it.task].kind == "choice":
            assert 0 <= it.answer < len(it.options) and len(set(it.options)) == len(it.options) >= 2
        else:
            assert it.options == () and it.prompt.endswith(":")
    assert [i.prompt for i in make_items(PAPERS, 24, 0)] == [i.prompt for i in items]


def test_choice_scoring_with_an_oracle_and_an_anti_oracle():
    items = [i for i in make_items(PAPERS, 4, 1) if TASK_BY_NAME[i.task].kind == "choice"]
    answers = {(i.prompt, i.options[i.answer]) for i in items}
    f1, se, picked = score_choice(items, lambda ctx, opts: [0.0 if (ctx, o) in answers else -1.0 for o in opts])
    assert f1 == 100.0 and se == 0.0 and picked == [i.answer for i in items]
    f1, se, picked = score_choice(items, lambda ctx, opts: [-1.0 if (ctx, o) in answers else 0.0 for o in opts])
    assert f1 == 0.0 and all(p != i.answer for p, i in zip(picked, items, strict=True))


def test_open_scoring_on_the_answer_alone():
    items = [i for i in make_items(PAPERS, 3, 0) if TASK_BY_NAME[i.task].kind == "open"]
    g = rng(9, "answers")

    def gold(prompts):
        out = []
        for prompt in prompts:
            it = next(i for i in items if i.prompt == prompt)
            out.append("\n " + sections(BY_ID[it.pid], g)[TASK_BY_NAME[it.task].section] + "\nExtra line ignored.")
        return out

    scores, answers = score_open(items, BY_ID, gold)
    assert np.allclose(scores, 100.0), list(zip(scores, answers, strict=True))
    assert not any("\n" in a or "Extra" in a for a in answers)
    noise, _ = score_open(items, BY_ID, lambda ps: ["nothing useful at all here." for _ in ps])
    assert np.all(noise == 0.0)
    copies, _ = score_open(items, BY_ID, lambda ps: [p.split("Paper: ")[1][:300] for p in ps])
    assert np.all(copies == 0.0)


def test_summarization_and_generation_prompts_differ_and_hide_the_answer():
    p = PAPERS[0]
    for t in TASKS:
        if t.kind != "open":
            continue
        prompt = open_prompt(p, t, rng(0, "p"))
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


def _answers(task: str, picked: list[int], correct: list[int], scores: list[float] | None = None) -> pd.DataFrame:
    n = len(picked)
    return pd.DataFrame({"task": task, "item": range(n), "picked": picked, "correct": correct,
                         "item_score": scores if scores is not None else [100.0 * (p == c) for p, c in
                                                                           zip(picked, correct, strict=True)]})


def test_paired_overall_difference_by_hand():
    """Choice task: macro F1 of 4 items; open task: mean item score; overall = mean of the two task differences."""
    gold = [0, 1, 0, 1]
    a = pd.concat([_answers("complete_number", [0, 1, 0, 1], gold),  # macro F1 100
                   _answers("write_context", [-1] * 2, [-1] * 2, [50.0, 30.0])])
    b = pd.concat([_answers("complete_number", [0, 0, 0, 0], gold),  # F1 of 0 = 2/3, of 1 = 0: macro 33.3
                   _answers("write_context", [-1] * 2, [-1] * 2, [10.0, 30.0])])
    point, lo = paired_overall_difference(a, b, n_resamples=200, seed=0)
    assert point == pytest.approx(((100 - 100 / 3) + (40 - 20)) / 2)
    assert lo <= point
    same_point, same_lo = paired_overall_difference(a, a, n_resamples=50)
    assert same_point == same_lo == 0.0  # identical answers: every resample gives 0, so a bound above 0 fails


def test_paired_bootstrap_bound_separates_a_real_gain_from_item_noise():
    """40 open items: a uniform +20 gain has a bound near 20; one item's +100 among 39 ties (+2.5 mean) has
    a bound of 0, because most resamples miss or under-weight that item."""
    base = np.random.default_rng(0).uniform(0, 60, size=40)
    b = _answers("write_context", [-1] * 40, [-1] * 40, base.tolist())
    uniform = _answers("write_context", [-1] * 40, [-1] * 40, (base + 20).tolist())
    point, lo = paired_overall_difference(uniform, b, n_resamples=300, seed=1)
    assert point == pytest.approx(20) and lo == pytest.approx(20)
    one = base.copy()
    one[0] = 100.0 + base[0]
    point, lo = paired_overall_difference(_answers("write_context", [-1] * 40, [-1] * 40, one.tolist()), b,
                                          n_resamples=300, seed=1)
    assert point == pytest.approx(2.5) and lo == 0.0
    with pytest.raises(ValueError, match="different items"):
        paired_overall_difference(uniform.iloc[:39], b)
