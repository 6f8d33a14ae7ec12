"""The metric families, parser and matcher against hand-computed values."""

import math

import numpy as np
import pytest

from stages.m3cotbench.matcher import choose_threshold, match_scores, pair_accuracy
from stages.m3cotbench.metrics import (
    bootstrap_se,
    cot_impact,
    greedy_matches,
    lcs_length,
    lcs_similarity,
    path_consistency,
    step_prf,
    token_cost_ratio,
    useful_steps_per_token,
)
from stages.m3cotbench.steps_text import EVAL, REFERENCE, TUNE, n_tokens, parse, render_chain


def test_f1_of_a_perfect_chain_is_one_and_of_an_empty_chain_zero():
    assert step_prf(4, 4, 4) == (1.0, 1.0, 1.0)
    assert step_prf(0, 4, 0) == (0.0, 0.0, 0.0)


def test_prf_by_hand():
    p, r, f = step_prf(4, 2, 1)                  # 1 of 4 predicted right, 1 of 2 keys found
    assert (p, r) == (0.25, 0.5)
    assert f == pytest.approx(2 * 0.25 * 0.5 / 0.75)


def test_greedy_matches_are_one_to_one_above_threshold():
    sim = np.array([[0.9, 0.8], [0.85, 0.2], [0.1, 0.1]])
    assert greedy_matches(sim, 0.5) == 1 + 0       # (0,0) taken, then row 1 only has col 1 at 0.2
    assert greedy_matches(np.array([[0.9, 0.1], [0.1, 0.7]]), 0.5) == 2
    assert greedy_matches(np.zeros((0, 3)), 0.5) == 0


def test_lcs_consistency_of_identical_paths_is_one():
    assert lcs_similarity(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert path_consistency([["a", "b"], ["a", "b"], ["a", "b"]]) == 1.0


def test_lcs_by_hand():
    assert lcs_length(["a", "b", "c", "d"], ["a", "c", "d", "e"]) == 3
    assert lcs_similarity(["a", "b"], ["c"]) == 0.0
    assert lcs_similarity(["a", "b", "c", "d"], ["a", "c", "d", "e"]) == pytest.approx(6 / 8)
    assert path_consistency([["a"], ["a"], ["b"]]) == pytest.approx(1 / 3)   # pairs: 1, 0, 0


def test_impact_with_identical_accuracy_is_zero():
    assert cot_impact(0.7, 0.7) == 0.0
    assert cot_impact(0.5, 0.7) == pytest.approx(-0.2)


def test_efficiency_by_hand():
    assert useful_steps_per_token([2, 1], [10, 10]) == pytest.approx(0.15)
    assert useful_steps_per_token([0], [0]) == 0.0
    assert token_cost_ratio([20, 10], [3, 2]) == pytest.approx(15 / 2.5)
    assert math.isnan(token_cost_ratio([20, 10], [0, 0]))  # a direct model that said nothing


def test_bootstrap_se_of_a_constant_is_zero_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    assert bootstrap_se(np.ones(50), 100, rng) == 0.0
    x = rng.integers(0, 2, 400).astype(float)
    assert bootstrap_se(x, 400, rng) == pytest.approx(x.std() / np.sqrt(len(x)), rel=0.2)


def test_parser_reads_back_a_rendered_chain():
    rng = np.random.default_rng(0)
    text = render_chain([("shape", "round"), ("size", "small")], "cyst", EVAL, rng)
    steps, answer = parse(text)
    assert len(steps) == 2 and answer == "cyst"
    assert "round" in steps[0] and "small" in steps[1]
    assert parse("Answer: upper left.") == ([], "upper left")
    assert parse("Step 1: Lesion size: small.")[1] is None
    assert n_tokens("Answer: upper left.") == 3


def test_tuning_and_evaluation_templates_are_disjoint():
    for slot in REFERENCE:
        assert not set(TUNE[slot]) & set(EVAL[slot])
        assert REFERENCE[slot] not in TUNE[slot] + EVAL[slot]


def test_matcher_keeps_only_the_nearest_reference_and_picks_the_best_threshold():
    s = match_scores(np.array([[0.9, 0.8], [0.1, 0.4]]))
    assert s[0, 0] == 0.9 and s[0, 1] == -np.inf and s[1, 1] == 0.4
    scores, labels = np.array([0.9, 0.6, 0.3, -np.inf]), np.array([True, True, False, False])
    assert pair_accuracy(scores, labels, 0.5) == 1.0
    tau, accs = choose_threshold(scores, labels, [0.2, 0.5, 0.7])
    assert tau == 0.5 and accs == [0.75, 1.0, 0.75]
