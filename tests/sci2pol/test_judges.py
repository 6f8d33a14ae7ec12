"""Judges, the open-answer scorer, reference metrics and statistics against hand-computed values."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from stages.core.seeding import rng
from stages.sci2pol.data import DEGRADATIONS, QUALITY, candidate_briefs, make_papers, sections
from stages.sci2pol.judges import (
    LMJudge,
    RubricJudge,
    auc,
    bootstrap_se,
    choose,
    copied_span,
    distinct_token_ratio,
    expected_score,
    form_factor,
    greedy_bertscore,
    judge_prompt,
    macro_f1,
    open_answer_score,
    parses_as_sentence,
    rouge_l,
    section_content,
    spearman,
)

PAPER = make_papers("bench", 1, 1000)[0]  # young adults, text-message reminders; uptake fell 30, waiting rose 4
F1, F2 = PAPER.findings
PROMPT = f"Paper: {PAPER.body}\nSummarize the paper's findings in one sentence of your own words.\nFindings:"
GOOD = "Text-message reminders lowered vaccination uptake by 30 percent and raised clinic waiting times by 4 percent."
REPEATED = "Text-message reminders text-message reminders text-message reminders vaccination uptake vaccination uptake."
SALAD = "text-message reminders, vaccination uptake, 30 percent, clinic waiting times, 4 percent"
COPIED = "In the treated arm vaccination uptake fell by 30 percent, while clinic waiting times rose by 4 percent."


def test_the_fixture_paper_is_the_one_the_answers_describe():
    assert (PAPER.intervention, F1.outcome, F1.value, F1.direction) == ("text-message reminders",
                                                                        "vaccination uptake", 30, "down")
    assert (F2.outcome, F2.value, F2.direction) == ("clinic waiting times", 4, "up")


def test_form_factor_by_hand():
    # GOOD: 16 tokens, 14 distinct ("by", "percent" twice) -> 14/16 = 0.875 >= 0.7 -> 1; one sentence parses
    assert distinct_token_ratio(GOOD) == pytest.approx(14 / 16)
    assert form_factor(GOOD, PROMPT) == 1.0
    # REPEATED: 10 tokens, 4 distinct -> 0.4 / 0.7 = 0.571; its one sentence repeats a content bigram -> 0
    assert distinct_token_ratio(REPEATED) == pytest.approx(4 / 10)
    assert not parses_as_sentence(REPEATED) and form_factor(REPEATED, PROMPT) == 0.0
    # SALAD: no function word and no final stop -> does not parse
    assert not parses_as_sentence(SALAD) and form_factor(SALAD, PROMPT) == 0.0
    # COPIED: "vaccination uptake fell by 30 percent while clinic" is 8 tokens of the prompt
    assert copied_span(COPIED, PROMPT) and form_factor(COPIED, PROMPT) == 0.0
    assert not copied_span(GOOD, PROMPT)
    # two sentences, one parses -> 1/2
    assert form_factor(GOOD + " uptake uptake", PROMPT) == pytest.approx(0.5)
    assert not parses_as_sentence("Young adults are affected by young adults; a trial examined reminders.")
    assert form_factor("", PROMPT) == 0.0


def test_open_answers_good_repeated_salad_copied():
    scores = {name: open_answer_score(PAPER, "Findings", a, PROMPT)
              for name, a in [("good", GOOD), ("repeated", REPEATED), ("salad", SALAD), ("copied", COPIED)]}
    assert scores == {"good": 100.0, "repeated": 0.0, "salad": 0.0, "copied": 0.0}


def test_section_content_by_hand():
    # one finding right, the other reversed: coverage 1/2, halved once -> 0.25
    half = "Text-message reminders cut vaccination uptake by 30 percent and lowered clinic waiting times by 4 percent."
    assert section_content(PAPER, "Findings", half) == pytest.approx(0.25)
    # both right but an unsupported number (99): 1 * 0.5
    extra = GOOD[:-1] + " and cut costs by 99 percent."
    assert section_content(PAPER, "Findings", extra) == pytest.approx(0.5)
    assert section_content(PAPER, "Context", "A trial tested text-message reminders for young adults.") == 1.0
    assert section_content(PAPER, "Context", "A trial tested text-message reminders.") == 0.5
    # intervention and action word, no population: 2/3
    assert section_content(PAPER, "Recommendation", "Councils should expand text-message reminders.") == \
        pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        section_content(PAPER, "Annex", "x")


def test_rubric_ceiling_labels_every_defect_from_the_paper_alone():
    papers = make_papers("bench", 30, 0)
    by_id = {p.pid: p for p in papers}
    briefs = candidate_briefs(papers, 0)
    scores = RubricJudge().score([by_id[b.pid] for b in briefs], [b.text for b in briefs])
    assert all(s == b.quality for s, b in zip(scores, briefs, strict=True))
    assert {b.kind for b in briefs} == {"gold", *DEGRADATIONS}
    assert QUALITY["off_topic"] == 0


def test_auc_by_hand():
    # pairs (pos, neg): (3,1) win, (3,2) win, (2,1) win, (2,2) tie -> (3 + 0.5) / 4
    assert auc([3, 2], [1, 2]) == pytest.approx(0.875)
    assert auc([1, 1], [1, 1]) == pytest.approx(0.5)
    assert auc([0.0], [1.0]) == 0.0
    assert math.isnan(auc([], [1.0]))


def test_bootstrap_of_a_constant_is_zero_and_of_two_values_is_known():
    assert bootstrap_se([3.0] * 20, 1000, seed=0) == 0.0
    # SE of the mean of {0,1} with n=100: sqrt(0.25 / 100) = 0.05
    assert bootstrap_se([0.0, 1.0] * 50, 1000, seed=1) == pytest.approx(0.05, abs=0.006)
    assert bootstrap_se([1.0, 2.0, 3.0], 200, seed=5) == bootstrap_se([1.0, 2.0, 3.0], 200, seed=5)


def test_choice_scorer_picks_the_most_likely_option():
    table = {"red": -3.0, "green": -0.5, "blue": -2.0}
    assert choose(lambda ctx, o: table[o], "colour?", ["red", "green", "blue"]) == 1
    assert macro_f1([0, 1, 1, 2], [0, 1, 1, 2]) == 1.0
    # label 0: tp1 fp0 fn0 -> 1; label 1: tp1 fp1 fn1 -> 0.5; label 2: tp0 fp1 fn1 -> 0
    assert macro_f1([0, 1, 1, 2], [0, 1, 2, 1]) == pytest.approx(0.5)


def test_expected_score_and_spearman():
    assert expected_score(np.array([0.0, 0, 0, 0, 0, 100])) == pytest.approx(5.0)
    assert expected_score(np.zeros(6)) == pytest.approx(2.5)
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_greedy_bertscore_by_hand():
    e = np.eye(3)
    assert greedy_bertscore(e, e) == pytest.approx(1.0)
    # candidate = first reference token only: precision 1, recall 1/3 -> F1 0.5
    assert greedy_bertscore(e, e[:1]) == pytest.approx(0.5)
    assert greedy_bertscore(e[:1], e[1:]) == pytest.approx(0.0)


def test_rouge_l():
    assert rouge_l("the cat sat", "the cat sat") == pytest.approx(1.0)
    # LCS "the sat" = 2 of 3 and 2 of 3 -> 2/3
    assert rouge_l("the cat sat", "the dog sat") == pytest.approx(2 / 3)


class ToyTokenizer:
    """Characters as tokens; digits 0..5 map to ids 0..5."""

    chat_template = None

    def __call__(self, text, add_special_tokens=True):
        ids = [int(c) if c in "012345" else 60 if c == "G" else 10 + (ord(c) % 40) for c in text.strip()]
        return {"input_ids": ids}


class ToyModel(torch.nn.Module):
    """Next-token logits favour score ``k`` = number of 'G' characters in the prompt (capped at 5)."""

    def forward(self, input_ids, logits_to_keep=0):
        g = int((input_ids == 60).sum())
        logits = torch.full((1, input_ids.shape[1], 64), -10.0)
        logits[0, -1, min(g, 5)] = 10.0
        return SimpleNamespace(logits=logits)


def test_lm_judge_reads_the_score_token_logits_after_a_prompt_with_paper_and_brief():
    judge = LMJudge(ToyModel(), ToyTokenizer(), max_tokens=100000)
    paper = make_papers("bench", 1, 0)[0]
    prompt = judge_prompt(paper, "Findings: x")
    assert paper.body in prompt and "Findings: x" in prompt and "0 to 5" in prompt
    base = judge_prompt(paper, "").count("G")
    scores = judge.score([paper, paper], ["", "GG"])
    assert scores[0] == pytest.approx(min(base, 5), abs=1e-3)
    assert scores[1] == pytest.approx(min(base + 2, 5), abs=1e-3)


def test_gold_sections_in_every_wording_get_full_content():
    g = rng(0, "w")
    for p in make_papers("bench", 20, 2):
        for name, text in sections(p, g).items():
            assert section_content(p, name, text) == 1.0, (name, text)
