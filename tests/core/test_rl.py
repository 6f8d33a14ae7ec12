import math

import pytest
import torch

from stages.core.rl import (
    clip_fraction,
    clipped_sequence_loss,
    clipped_token_loss,
    group_relative_advantages,
    kl_estimate,
    kl_k1,
    kl_k2,
    kl_k3,
)


def test_group_relative_advantages_hand_computed():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.5, 0.5]])
    adv = group_relative_advantages(r)
    assert torch.allclose(adv, torch.tensor([[0.5, -0.5, -0.5, 0.5], [0.0, 0.0, 0.0, 0.0]]))
    scaled = group_relative_advantages(r, scale_std=True, eps=0.0 + 1e-4)
    expected = 0.5 / (0.5 + 1e-4)
    assert torch.allclose(scaled[0], torch.tensor([expected, -expected, -expected, expected]))
    assert torch.allclose(scaled[1], torch.zeros(4))   # a constant group carries no signal


def test_clipped_sequence_loss_hand_computed():
    log_ratio = torch.log(torch.tensor([1.5, 0.5, 1.0, 0.5, 1.5]))
    adv = torch.tensor([1.0, 1.0, -2.0, -1.0, -1.0])
    # surrogates: min(1.5,1.2)=1.2, min(0.5,0.8)=0.5, -2, min(-0.5,-0.8)=-0.8, min(-1.5,-1.2)=-1.5
    expected = -(1.2 + 0.5 - 2.0 - 0.8 - 1.5) / 5
    assert clipped_sequence_loss(log_ratio, adv, clip_eps=0.2).item() == pytest.approx(expected)


def test_clipped_sequence_loss_asymmetric_clip():
    log_ratio = torch.log(torch.tensor([1.5]))
    assert clipped_sequence_loss(log_ratio, torch.tensor([1.0]), 0.2, clip_eps_high=0.28).item() == pytest.approx(-1.28)


def test_clipped_token_loss_hand_computed_and_masked():
    log_ratio = torch.log(torch.tensor([[1.5, 1.0, 0.5], [1.0, 1.0, 1.0]]))
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    # row 0: (1.2 + 1.0) / 2 = 1.1; row 1: -1 / 1 = -1
    assert clipped_token_loss(log_ratio, adv, mask).item() == pytest.approx(-(1.1 - 1.0) / 2)
    assert clipped_token_loss(log_ratio, adv, mask, normalise="token").item() == pytest.approx(-(1.2 + 1.0 - 1.0) / 3)
    # per-token advantages give the same as broadcast ones
    per_token = adv[:, None].expand(2, 3)
    assert clipped_token_loss(log_ratio, per_token, mask).item() == pytest.approx(-(1.1 - 1.0) / 2)
    with pytest.raises(ValueError):
        clipped_token_loss(log_ratio, adv, mask, normalise="batch")


def test_clipped_token_loss_gradient_zero_on_clipped_and_masked_tokens():
    log_ratio = torch.log(torch.tensor([[1.5, 1.0, 0.5]])).requires_grad_(True)
    loss = clipped_token_loss(log_ratio, torch.tensor([1.0]), torch.tensor([[1, 1, 0]]))
    loss.backward()
    assert log_ratio.grad[0, 0].item() == 0.0      # clipped (rho = 1.5 > 1.2, A > 0)
    assert log_ratio.grad[0, 1].item() == pytest.approx(-0.5)   # d(-rho/2)/d log rho at rho = 1
    assert log_ratio.grad[0, 2].item() == 0.0      # masked out


def test_ratio_one_gives_minus_mean_advantage():
    adv = torch.tensor([0.3, -0.7, 0.4])
    assert clipped_sequence_loss(torch.zeros(3), adv).item() == pytest.approx(-float(adv.mean()))


def test_clip_fraction():
    log_ratio = torch.log(torch.tensor([[1.5, 1.0, 0.5], [1.1, 0.7, 1.0]]))
    assert clip_fraction(log_ratio, 0.2) == pytest.approx(3 / 6)
    assert clip_fraction(log_ratio, 0.2, mask=torch.tensor([[1, 1, 0], [1, 1, 1]])) == pytest.approx(2 / 5)


def test_kl_estimators_hand_computed():
    delta = torch.tensor([0.0, 1.0, -1.0, 2.0])
    assert torch.allclose(kl_k1(delta), delta)
    assert torch.allclose(kl_k2(delta), torch.tensor([0.0, 0.5, 0.5, 2.0]))
    k3 = [0.0, math.exp(-1) - 1 + 1, math.exp(1) - 1 - 1, math.exp(-2) - 1 + 2]
    assert torch.allclose(kl_k3(delta), torch.tensor(k3))
    assert torch.allclose(kl_estimate(delta, "k2"), kl_k2(delta))
    with pytest.raises(ValueError):
        kl_estimate(delta, "k4")


def test_k1_and_k3_unbiased_for_true_kl():
    # q = pi_theta, p = pi_ref on 3 outcomes; E_q[k] = KL(q || p) for k1 and k3
    q = torch.tensor([0.5, 0.3, 0.2])
    p = torch.tensor([0.2, 0.5, 0.3])
    delta = q.log() - p.log()
    true_kl = float((q * delta).sum())
    assert float((q * kl_k1(delta)).sum()) == pytest.approx(true_kl)
    assert float((q * kl_k3(delta)).sum()) == pytest.approx(true_kl)
    assert (kl_k2(delta) >= 0).all() and (kl_k3(delta) >= 0).all()
