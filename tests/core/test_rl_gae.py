"""GAE and the clipped value loss of stages.core.rl against hand computations."""

import pytest
import torch

from stages.core.rl import clipped_value_loss, gae


def test_gae_matches_a_hand_computation_with_padding():
    # row 0: three tokens; row 1: two tokens then padding
    rewards = torch.tensor([[0.0, 1.0, 2.0], [1.0, -1.0, 9.0]])
    values = torch.tensor([[0.5, 0.2, 1.0], [0.3, 0.4, 7.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    gamma, lam = 0.9, 0.5
    adv, ret = gae(rewards, values, mask, gamma, lam)
    # row 0: δ2 = 2 - 1 = 1; δ1 = 1 + .9·1 - .2 = 1.7; δ0 = 0 + .9·.2 - .5 = -0.32
    # A2 = 1; A1 = 1.7 + .45·1 = 2.15; A0 = -0.32 + .45·2.15 = 0.6475
    # row 1: δ1 = -1 - .4 = -1.4 (V after the last token is 0); δ0 = 1 + .9·.4 - .3 = 1.06
    # A1 = -1.4; A0 = 1.06 + .45·(-1.4) = 0.43; padded A2 = 0
    expected = torch.tensor([[0.6475, 2.15, 1.0], [0.43, -1.4, 0.0]])
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.allclose(ret, (expected + values) * mask, atol=1e-6)


def test_gae_with_lambda_one_and_gamma_one_is_return_to_go_minus_value():
    rewards = torch.tensor([[1.0, 0.0, 3.0, -2.0]])
    values = torch.tensor([[0.1, 0.2, 0.3, 0.4]])
    adv, ret = gae(rewards, values, torch.ones(1, 4), gamma=1.0, lam=1.0)
    togo = torch.tensor([[2.0, 1.0, 1.0, -2.0]])
    assert torch.allclose(adv, togo - values) and torch.allclose(ret, togo)


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    rewards = torch.tensor([[1.0, 2.0]])
    values = torch.tensor([[0.5, 1.5]])
    adv, _ = gae(rewards, values, torch.ones(1, 2), gamma=0.5, lam=0.0)
    assert torch.allclose(adv, torch.tensor([[1.0 + 0.75 - 0.5, 2.0 - 1.5]]))


def test_gae_does_not_backpropagate_into_values():
    values = torch.tensor([[0.5, 0.2]], requires_grad=True)
    adv, _ = gae(torch.ones(1, 2), values, torch.ones(1, 2))
    assert not adv.requires_grad


def test_clipped_value_loss_takes_the_worse_of_clipped_and_unclipped():
    old = torch.tensor([[0.0, 0.0]])
    new = torch.tensor([[1.0, 0.1]])
    ret = torch.tensor([[1.0, 1.0]])
    # token 0: unclipped error 0, clipped V = 0.2 -> error 0.8 -> 0.5·0.64; token 1: both (0.9)^2
    loss = clipped_value_loss(new, old, ret, torch.ones(1, 2), clip_range=0.2)
    assert loss.item() == pytest.approx((0.5 * 0.64 + 0.5 * 0.81) / 2)
    masked = clipped_value_loss(new, old, ret, torch.tensor([[0, 1]]), clip_range=0.2)
    assert masked.item() == pytest.approx(0.5 * 0.81)
