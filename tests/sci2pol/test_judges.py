"""Judges, reference metrics and statistics against hand-computed values."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from stages.sci2pol.data import DEGRADATIONS, candidate_briefs, make_papers
from stages.sci2pol.judges import (
    LMJudge,
    RubricJudge,
    bootstrap_se,
    choose,
    expected_score,
    greedy_bertscore,
    judge_prompt,
    macro_f1,
    rouge_l,
    rubric_scores,
    spearman,
)


def test_rubric_judge_gives_gold_the_top_score_and_each_degradation_less():
    papers = make_papers("bench", 6, 0)
    by_id = {p.pid: p for p in papers}
    briefs = candidate_briefs(papers, 0)
    scores = RubricJudge().score([by_id[b.pid] for b in briefs], [b.text for b in briefs])
    kinds = [b.kind for b in briefs]
    assert all(s == 5.0 for s, k in zip(scores, kinds, strict=True) if k == "gold")
    for kind in DEGRADATIONS:
        assert max(s for s, k in zip(scores, kinds, strict=True) if k == kind) < 5.0, kind
    assert spearman(scores, [b.quality for b in briefs]) > 0.5
    dims = rubric_scores(papers[0], briefs[0].text)
    assert set(dims) == {"contextual_depth", "hallucination_risk", "readability_tone", "actionability"}


def test_bootstrap_of_a_constant_is_zero_and_of_two_values_is_known():
    assert bootstrap_se([3.0] * 20, 1000, seed=0) == 0.0
    # SE of the mean of {0,1} with n=2: sqrt(0.25 / 2) ≈ 0.354
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

    def forward(self, input_ids):
        g = int((input_ids == 60).sum())
        logits = torch.full((1, input_ids.shape[1], 64), -10.0)
        logits[0, -1, min(g, 5)] = 10.0
        return SimpleNamespace(logits=logits)


def test_lm_judge_reads_the_score_token_logits():
    judge = LMJudge(ToyModel(), ToyTokenizer(), max_tokens=100000)
    paper = make_papers("bench", 1, 0)[0]
    base = judge_prompt(paper, "").count("G")
    scores = judge.score([paper, paper], ["", "GG"])
    assert scores[0] == pytest.approx(min(base, 5), abs=1e-3)
    assert scores[1] == pytest.approx(min(base + 2, 5), abs=1e-3)


def test_summary_rubric_by_hand():
    from stages.sci2pol.judges import SummaryRubricJudge, summary_overall, summary_scores

    p = make_papers("bench", 1, 0)[0]
    f1, f2 = p.findings
    wrong = f2.value + 7
    text = (f"{p.intervention} {f1.direction} the {f1.outcome} by {f1.value}% and "
            f"{f2.direction} {f2.outcome} by {wrong} percent.")
    dims = summary_scores(p, "Findings", text)
    # one of two findings covered exactly: 1 + 4 * 1/2 = 3; one wrong number: 5 - 2 = 3; short, no copy: 5
    assert dims == {"clarity": 5.0, "accuracy": 3.0, "coverage": 3.0}
    assert summary_overall(dims) == pytest.approx(3.0)  # min(3, mean(5, 3, 3))
    full = (f"{p.intervention} {f1.direction} {f1.outcome} by {f1.value} percent and "
            f"{f2.direction} {f2.outcome} by {f2.value} percent.")
    assert SummaryRubricJudge("Findings").score([p], [full])[0] == 5.0
    assert SummaryRubricJudge("Context").score([p], [f"{p.population} and {p.intervention} were studied."])[0] == 5.0
    assert SummaryRubricJudge("Context").score([p], [""])[0] == 1.0
    assert summary_scores(p, "Context", p.text)["clarity"] == 1.0  # a copy of the paper
