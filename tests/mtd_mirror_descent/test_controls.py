import numpy as np
import pytest

from stages.mtd_mirror_descent.controls import (
    fit_beta,
    fit_positional_head,
    positional_head_tv,
    shrink,
    simplex_grid,
    total_variation,
)
from stages.mtd_mirror_descent.models import lr_factor
from stages.mtd_mirror_descent.mtd import next_token_distribution, sample_sequences, transition_matrix


def test_total_variation_by_hand():
    assert total_variation(np.array([0.2, 0.8]), np.array([0.5, 0.5])) == pytest.approx(0.3)


def test_shrink_moves_lambda_toward_uniform_and_keeps_the_simplex():
    lam = np.array([[0.7, 0.2, 0.1]])
    np.testing.assert_allclose(shrink(lam, 0.5), [[0.35 + 1 / 6, 0.1 + 1 / 6, 0.05 + 1 / 6]])
    np.testing.assert_allclose(shrink(lam, 0.0), np.full((1, 3), 1 / 3))
    np.testing.assert_allclose(shrink(lam, 0.5).sum(), 1.0)


def test_shrunk_prediction_is_the_prediction_of_shrunk_lambda():
    pi = transition_matrix(5, 0.3, 0.1, np.random.default_rng(0))
    tokens, lam, _ = sample_sequences(pi, 3, 20, 4, 1.0, np.random.default_rng(1))
    uniform = next_token_distribution(pi, tokens, np.full((4, 3), 1 / 3), 3)
    mixed = 0.3 * next_token_distribution(pi, tokens, lam, 3) + 0.7 * uniform
    np.testing.assert_allclose(next_token_distribution(pi, tokens, shrink(lam, 0.3), 3), mixed)


def test_fit_beta_recovers_the_shrinkage_of_a_shrunk_estimator():
    gen = np.random.default_rng(2)
    est = [gen.dirichlet(np.ones(4), size=50) for _ in range(2)]
    uni = [np.full((50, 4), 0.25) for _ in range(2)]
    target = [0.4 * e + 0.6 * u for e, u in zip(est, uni, strict=True)]
    assert fit_beta(target, est, uni, np.linspace(0, 1, 11)) == pytest.approx(0.4)
    # a target that is the uniform predictor itself is fitted with β = 0
    assert fit_beta(uni, est, uni, np.linspace(0, 1, 11)) == 0.0


def test_simplex_grid_points_by_hand():
    grid = simplex_grid(3, 0.5)
    assert len(grid) == 6
    np.testing.assert_allclose(grid.sum(axis=1), 1.0)
    assert {tuple(r) for r in grid} == {(0, 0, 1), (0, 0.5, 0.5), (0, 1, 0), (0.5, 0, 0.5), (0.5, 0.5, 0), (1, 0, 0)}


def test_positional_head_is_fitted_to_gamma_and_scored_by_tv():
    gamma = np.array([[[1.0, 0.0, 0.0], [0.6, 0.4, 0.0]]])
    # lag-1-only head: TV 0 on the first position, 0.4 on the second
    assert positional_head_tv(np.array([1.0, 0, 0]), gamma) == pytest.approx(0.2)
    # two positions of three pick lag 1: the best fixed head is lag 1 only, mean TV 1/3
    majority = np.array([[[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    np.testing.assert_allclose(fit_positional_head(majority, 0.1), [1.0, 0.0, 0.0])
    assert positional_head_tv(fit_positional_head(majority, 0.1), majority) == pytest.approx(1 / 3)
    # when γ depends on content no fixed head is exact: here γ alternates between lag 1 and lag 2
    flip = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    best = fit_positional_head(flip, 0.1)
    assert positional_head_tv(best, flip) == pytest.approx(0.5)


def test_lr_factor_warms_up_then_decays_to_zero():
    assert lr_factor(0, 10, 100, True) == pytest.approx(0.1 * 0.5 * (1 + np.cos(0)))
    assert lr_factor(9, 10, 100, False) == pytest.approx(1.0)
    assert lr_factor(50, 10, 100, True) == pytest.approx(0.5)
    assert lr_factor(100, 10, 100, True) == pytest.approx(0.0)
    assert lr_factor(5, 0, 100, False) == 1.0
