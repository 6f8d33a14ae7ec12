import numpy as np
import pytest
import torch

from stages.mtd_mirror_descent.attention_only import AttentionOnlyTransformer, set_one_step_mirror_descent
from stages.mtd_mirror_descent.mirror_descent import (
    bayes_posterior_mean,
    log_likelihood_gradient,
    mirror_descent,
    mirror_descent_step,
    one_step_closed_form,
    responsibilities,
)
from stages.mtd_mirror_descent.mtd import (
    kl_divergence,
    lag_transition_probs,
    next_token_distribution,
    sample_sequences,
    transition_matrix,
)


@pytest.fixture
def pi():
    return transition_matrix(5, 1.0, 0.1, np.random.default_rng(0))


def test_transition_matrix_is_row_stochastic_and_positive(pi):
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)
    assert pi.min() >= 0.1 / 5


def test_empirical_lag_frequencies_match_lambda(pi):
    _tokens, lam, lags = sample_sequences(pi, 3, 4000, 3, 1.0, np.random.default_rng(1))
    for b in range(3):
        freq = np.bincount(lags[b, 3:], minlength=4)[1:] / (4000 - 3)
        np.testing.assert_allclose(freq, lam[b], atol=0.03)


def test_responsibilities_sum_to_one(pi):
    tokens, _, _ = sample_sequences(pi, 3, 50, 4, 1.0, np.random.default_rng(2))
    gamma = responsibilities(lag_transition_probs(pi, tokens, 3))
    assert gamma.shape == (4, 47, 3)
    np.testing.assert_allclose(gamma.sum(axis=-1), 1.0)


def test_one_md_step_on_a_hand_computed_two_lag_example():
    pi = np.array([[0.5, 0.5], [0.25, 0.75]])
    tokens = np.array([[0, 1, 1, 0]])
    # positions k = 2, 3 (m = 2): P[k, g] = π(y_{k−g}, y_k)
    # k=2: y=1, lag1 y1=1 -> 0.75, lag2 y0=0 -> 0.5 ; k=3: y=0, lag1 y2=1 -> 0.25, lag2 y1=1 -> 0.25
    probs = lag_transition_probs(pi, tokens, 2)
    np.testing.assert_allclose(probs[0], [[0.75, 0.5], [0.25, 0.25]])
    lam = np.array([[0.5, 0.5]])
    # mixtures: 0.625 and 0.25; gradient = mean(P / mix) = [(1.2 + 1)/2, (0.8 + 1)/2] = [1.1, 0.9]
    grad = log_likelihood_gradient(probs, lam)
    np.testing.assert_allclose(grad, [[1.1, 0.9]])
    step = mirror_descent_step(lam, grad, eta=1.0)
    np.testing.assert_allclose(step, [[np.exp(1.1), np.exp(0.9)]] / (np.exp(1.1) + np.exp(0.9)))
    np.testing.assert_allclose(mirror_descent(pi, tokens, 2, 1.0, 1), step)


def test_closed_form_equals_one_md_step_from_uniform(pi):
    tokens, _, _ = sample_sequences(pi, 3, 60, 5, 1.0, np.random.default_rng(3))
    np.testing.assert_allclose(one_step_closed_form(pi, tokens, 3, 2.5), mirror_descent(pi, tokens, 3, 2.5, 1))


def test_hand_set_attention_only_model_equals_one_step_md(pi):
    torch.set_default_dtype(torch.float64)
    try:
        tokens, _, _ = sample_sequences(pi, 3, 48, 16, 1.0, np.random.default_rng(4))
        model = AttentionOnlyTransformer(5, 3, 16, 2, 8, max_offset=4)
        set_one_step_mirror_descent(model, pi, 3, eta=3.0)
        with torch.no_grad():
            probs = model(torch.as_tensor(tokens)).exp().numpy()
        for t in (4, 10, 25, 48):
            lam = one_step_closed_form(pi, tokens[:, :t], 3, 3.0)
            np.testing.assert_allclose(probs[:, t - 1], next_token_distribution(pi, tokens[:, :t], lam, 3), atol=1e-5)
    finally:
        torch.set_default_dtype(torch.float32)


def test_construction_refuses_too_small_models(pi):
    with pytest.raises(ValueError, match="d_model"):
        set_one_step_mirror_descent(AttentionOnlyTransformer(5, 3, 8, 2, 8, 4), pi, 3, 1.0)


def test_bayes_predictor_approaches_oracle_on_long_sequences(pi):
    gen = np.random.default_rng(5)
    tokens, lam, _ = sample_sequences(pi, 3, 2000, 6, 1.0, gen)
    post, ess = bayes_posterior_mean(pi, tokens, 3, 1.0, 2000, gen)
    truth = next_token_distribution(pi, tokens, lam, 3)
    assert np.mean(kl_divergence(truth, next_token_distribution(pi, tokens, post, 3))) < 2e-3
    short, _ = bayes_posterior_mean(pi, tokens[:, :20], 3, 1.0, 2000, gen)
    assert np.abs(post - lam).mean() < np.abs(short - lam).mean()
    assert ess.min() > 50


def test_kl_is_zero_for_equal_and_positive_otherwise():
    p = np.array([[0.2, 0.8]])
    assert kl_divergence(p, p)[0] == pytest.approx(0.0)
    assert kl_divergence(p, np.array([[0.5, 0.5]]))[0] == pytest.approx(0.2 * np.log(0.4) + 0.8 * np.log(1.6))
