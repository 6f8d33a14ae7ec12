"""The joint likelihood, its canonical form, decoding and the score model, against hand-computed values."""

import math

import numpy as np
import pytest
import torch

from stages.relash.diffusion import ou_marginal, sample_reverse_sde, train_score_model
from stages.relash.embedding import (
    JointEmbedding,
    attribute_nll,
    decode_latents,
    identifiability_projection,
    joint_nll,
    membership_logits,
    membership_nll,
)
from stages.relash.generation import decode_hyperlinks, memorisation_rate, mixture_log_likelihood


def small_model(seed: int = 0) -> JointEmbedding:
    g = torch.Generator().manual_seed(seed)
    return JointEmbedding(U=torch.randn(6, 2, generator=g) + 0.5, Z=torch.randn(4, 2, generator=g),
                          alpha=torch.randn(4, generator=g), gamma=torch.randn(1, generator=g),
                          B=torch.randn(1, 2, generator=g), log_s=torch.tensor([-0.3]),
                          x_mean=torch.zeros(1), x_std=torch.ones(1))


def test_membership_likelihood_on_a_hand_made_hypergraph():
    # two nodes, one hyperlink {0}; logits u·z + α = [1·1 + 0, 1·(−1) + 0.5] = [1, −0.5]
    u, z, alpha = torch.tensor([[1.0]]), torch.tensor([[1.0], [-1.0]]), torch.tensor([0.0, 0.5])
    logits = membership_logits(u, z, alpha)
    assert torch.allclose(logits, torch.tensor([[1.0, -0.5]]))
    nll = membership_nll(torch.tensor([[1.0, 0.0]]), logits)
    expected = -math.log(1 / (1 + math.exp(-1))) - math.log(1 - 1 / (1 + math.exp(0.5)))
    assert float(nll[0]) == pytest.approx(expected, rel=1e-6)


def test_attribute_likelihood_is_the_gaussian_density():
    x, mean, log_s = torch.tensor([[1.0, -1.0]]), torch.tensor([[0.5, 0.0]]), torch.tensor([0.0, math.log(2.0)])
    expected = 0.5 * 0.25 + 0.5 * math.log(2 * math.pi) + 0.5 * 1 / 4 + math.log(2.0) + 0.5 * math.log(2 * math.pi)
    assert float(attribute_nll(x, mean, log_s)[0]) == pytest.approx(expected, rel=1e-6)


def test_canonical_form_keeps_the_likelihood_and_meets_the_constraints():
    p = small_model()
    a = (torch.rand(6, 4, generator=torch.Generator().manual_seed(1)) < 0.4).float()
    x = torch.randn(6, 1, generator=torch.Generator().manual_seed(2))
    q = identifiability_projection(p)
    assert float(joint_nll(a, x, q)) == pytest.approx(float(joint_nll(a, x, p)), abs=1e-4)
    assert torch.allclose(q.U.mean(dim=0), torch.zeros(2), atol=1e-5)
    assert torch.allclose(q.U.T @ q.U / 6, torch.eye(2), atol=1e-4)
    ztz = q.Z.T @ q.Z
    assert abs(float(ztz[0, 1])) < 1e-4 and float(ztz[0, 0]) >= float(ztz[1, 1])


def test_decoding_a_known_latent_gives_its_memberships():
    # node latents ±e1: u = 10·e1 puts nodes 0 and 2 near probability 1 and nodes 1, 3 near 0
    p = JointEmbedding(U=torch.zeros(1, 2), Z=torch.tensor([[1.0, 0], [-1.0, 0], [1.0, 0], [0, 1.0]]),
                       alpha=torch.tensor([0.0, 0.0, 0.0, -10.0]), gamma=torch.tensor([3.0]),
                       B=torch.tensor([[0.5, 0.0]]), log_s=torch.tensor([-20.0]), x_mean=torch.tensor([1.0]),
                       x_std=torch.tensor([2.0]))
    probs, x = decode_latents(p, torch.tensor([[10.0, 0.0]]), torch.Generator().manual_seed(0))
    assert decode_hyperlinks(probs, np.random.default_rng(0), 10) == ["0 2"]
    assert x[0, 0] == pytest.approx((3.0 + 5.0) * 2.0 + 1.0, rel=1e-5)


def test_decoding_always_yields_at_least_two_members():
    probs = np.full((50, 6), 1e-9)
    probs[:, 4], probs[:, 1] = 0.3, 0.2
    out = decode_hyperlinks(probs, np.random.default_rng(0), 3)
    assert len(out) == 50 and all(len(k.split()) >= 2 for k in out)
    assert "1 4" in out  # the top-two fallback


def test_memorisation_rate():
    assert memorisation_rate(["0 1", "1 2", "2 3", "0 3"], ["0 1", "2 3"]) == 0.5


def test_mixture_likelihood_with_one_draw_is_the_product_of_likelihoods():
    a = np.array([[1.0, 0.0]])
    logits = np.array([[0.0, math.log(3.0)]])  # p = 0.5, 0.75
    ll = mixture_log_likelihood(a, np.zeros((1, 1)), logits, np.zeros((1, 1)), np.zeros(1))
    assert ll[0] == pytest.approx(math.log(0.5) + math.log(0.25) - 0.5 * math.log(2 * math.pi))


def test_ou_marginal():
    mean, std = ou_marginal(torch.tensor([0.5]))
    assert float(mean) == pytest.approx(math.exp(-0.5)) and float(std) == pytest.approx(math.sqrt(1 - math.exp(-1)))


def test_score_model_recovers_a_gaussian_score():
    torch.manual_seed(0)
    m, s = 1.5, 0.5
    x0 = (m + s * torch.randn(4000, 1, generator=torch.Generator().manual_seed(0)))
    model, _ = train_score_model(x0, 32, 800, 256, 5e-3, 1e-2, 3.0, seed=0)
    for t in (0.1, 0.5, 1.0):
        x = torch.linspace(-1.0, 3.0, 21)[:, None]
        a, _ = ou_marginal(torch.tensor(t))
        var = float(a) ** 2 * s ** 2 + 1 - float(a) ** 2
        true = -(x - float(a) * m) / var
        with torch.no_grad():
            est = model.score(x, torch.full((21,), t))
        assert float((est - true).abs().mean()) < 0.25 * float(true.abs().mean()) + 0.1
    samples = sample_reverse_sde(model, 2000, 1, 100, 1e-2, 3.0, torch.Generator().manual_seed(1))
    assert float(samples.mean()) == pytest.approx(m, abs=0.1) and float(samples.std()) == pytest.approx(s, abs=0.1)
