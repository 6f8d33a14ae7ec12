"""The equations and test-time methods on tiny cases whose answers are known by hand."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from stages.core.clip import Projector
from stages.fga.sapt import (
    PassCounter,
    PromptedCLIP,
    prompt_sharpness,
    sam_perturbation,
    sapt_gradient,
    text_passes,
)
from stages.fga.selection import (
    entropy,
    fga_predict,
    score_views,
    select_views,
    selection_scores,
    shared_heads,
    single_view_predict,
    tpt_predict,
    view_sharpness,
    vote,
    zero_predict,
)

A = torch.diag(torch.tensor([1.0, 4.0, 9.0]))


def quadratic(p: torch.Tensor) -> torch.Tensor:
    return 0.5 * p @ A @ p


def test_sam_perturbation_has_norm_rho_and_increases_the_loss_on_a_quadratic():
    p = torch.tensor([0.3, -0.2, 0.1])
    for rho in (0.01, 0.1, 0.5):
        eps = sam_perturbation(A @ p, rho)
        assert float(eps.norm()) == pytest.approx(rho, rel=1e-6)
        assert quadratic(p + eps) > quadratic(p)
        # first-order worst case: it beats a random direction of the same norm
        rand = torch.randn(3, generator=torch.Generator().manual_seed(0))
        assert quadratic(p + eps) >= quadratic(p + rho * rand / rand.norm())
    assert float(sam_perturbation(torch.zeros(3), 0.1).norm()) == 0.0


def test_sapt_gradient_is_the_gradient_at_the_perturbed_point():
    p = torch.tensor([0.3, -0.2, 0.1])
    g_sam, loss = sapt_gradient(quadratic, p, 0.2)
    eps = 0.2 * (A @ p) / (A @ p).norm()
    assert torch.allclose(g_sam, A @ (p + eps), atol=1e-6)
    assert float(loss) == pytest.approx(float(quadratic(p)))


def test_prompt_sharpness_leaves_an_exact_minimum_and_orders_curvatures():
    # at a minimum the gradient is zero: the ascent must still find the worst direction
    sharp = prompt_sharpness(lambda q: 0.5 * q @ A @ q, torch.zeros(3), 0.1, 10)
    assert sharp == pytest.approx(0.5 * 9.0 * 0.01, rel=0.05)   # along the steepest axis: 0.5 * 9 * rho^2
    flat = prompt_sharpness(lambda q: 0.5 * (q ** 2).sum(), torch.zeros(3), 0.1, 10)
    assert flat == pytest.approx(0.5 * 0.01, rel=0.05) and flat < sharp


def test_prompt_sharpness_matches_the_closed_form_on_an_isotropic_quadratic():
    p = torch.tensor([0.6, 0.8])  # ||p|| = 1, loss = ||p||^2 / 2: the worst eps of norm rho points along p
    rho = 0.1
    sharp = prompt_sharpness(lambda q: 0.5 * (q ** 2).sum(), p, rho, 5)
    assert sharp == pytest.approx(0.5 * (1 + rho) ** 2 - 0.5, rel=1e-2)


class Constant(nn.Module):
    """A text projector that ignores its input: every prompt gives the same class embeddings."""

    def __init__(self, emb: torch.Tensor) -> None:
        super().__init__()
        self.emb = emb

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.emb.expand(*x.shape[:-1], self.emb.shape[-1])


def tiny_model(counter: PassCounter | None = None, d_text: int = 6, n_classes: int = 3) -> PromptedCLIP:
    torch.manual_seed(0)
    proj = Projector(d_text, 4, hidden=8)  # the CLIP's text projector: MLP + unit norm (a linear map
    # without normalisation would shift every class logit equally and make the prompt inert)
    return PromptedCLIP(proj, torch.randn(n_classes, d_text), 10.0, counter)


def test_the_sharpness_score_is_zero_for_a_constant_model():
    emb = torch.nn.functional.normalize(torch.randn(3, 4), dim=-1)
    model = PromptedCLIP(Constant(emb), torch.randn(3, 6), 10.0)
    views = torch.nn.functional.normalize(torch.randn(5, 4), dim=-1)
    heads = shared_heads(model, torch.zeros(6), 0.5, 4, torch.Generator().manual_seed(0))
    _, _, sharp = score_views(model, views, heads)
    assert torch.allclose(sharp, torch.zeros(5), atol=1e-6)  # einsum vs matmul rounding only
    logits = torch.randn(5, 3)
    assert torch.equal(view_sharpness(logits, logits.expand(3, 5, 3)), torch.zeros(5))
    # and a model that does move under the perturbation scores > 0 on average
    # over 64 views of a fixed draw (5 random views averaged below 0 in 2 of 40 draws: a draw, not the method)
    real = tiny_model()
    many = torch.nn.functional.normalize(torch.randn(64, 4, generator=torch.Generator().manual_seed(1)), dim=-1)
    _, _, sharp = score_views(real, many, shared_heads(real, torch.zeros(6), 0.5, 8, torch.Generator().manual_seed(0)))
    assert float(sharp.mean()) > 0


def test_selection_keeps_the_lowest_score_views():
    scores = selection_scores(torch.tensor([3.0, 1.0, 2.0, 0.0]), torch.tensor([0.0, 0.0, 0.0, 5.0]), lam=1.0)
    assert set(select_views(scores, 2).tolist()) == {1, 2}            # view 3 is confident but sharp
    assert set(select_views(selection_scores(torch.tensor([3.0, 1.0, 2.0, 0.0]), torch.zeros(4), 0.0), 2)
               .tolist()) == {1, 3}
    # fga_predict votes over the kept views only
    logits = torch.tensor([[5.0, 0, 0], [0, 5.0, 0], [0, 5.0, 0], [0, 0, 5.0]])
    assert fga_predict(logits, torch.tensor([0.1, 0.2, 0.3, 0.0]), torch.tensor([0.0, 0.0, 0.0, 9.0]), 1.0, 3) == 1


def test_vote_is_a_majority_with_ties_broken_by_probability():
    logits = torch.tensor([[3.0, 0.0], [3.0, 0.0], [0.0, 1.0]])
    assert vote(logits) == 0
    assert vote(torch.tensor([[2.0, 0.0], [0.0, 5.0]])) == 1  # one vote each: class 1 has more probability


def test_entropy_of_uniform_and_certain_predictions():
    assert float(entropy(torch.zeros(1, 4))[0]) == pytest.approx(math.log(4))
    assert float(entropy(torch.tensor([[100.0, 0.0, 0.0]]))[0]) == pytest.approx(0.0, abs=1e-6)


def test_tpt_restores_the_prompt_after_each_test_image():
    model = tiny_model()
    prompt = nn.Parameter(torch.randn(6, generator=torch.Generator().manual_seed(5)))
    before = prompt.detach().clone()
    changed = 0
    for i in range(20):
        views = torch.nn.functional.normalize(torch.randn(10, 4, generator=torch.Generator().manual_seed(i)), dim=-1)
        unadapted = tpt_predict(model, views, prompt, 4, 0.0)
        changed += tpt_predict(model, views, prompt, 4, 30.0) != unadapted
        assert torch.equal(prompt.detach(), before)        # restored after every image
    assert model.counter.text_backward == 40                # one backward per test image: the step did happen
    assert changed > 0                                      # and it moved predictions, so the restore matters


def test_the_pass_counter_counts_each_method_on_a_tiny_case():
    views = torch.nn.functional.normalize(torch.randn(5, 4, generator=torch.Generator().manual_seed(2)), dim=-1)
    c = PassCounter()
    single_view_predict(tiny_model(c), views, torch.zeros(6))
    assert c.snapshot() == {"image_forward": 1, "text_forward": 1, "text_backward": 0}
    c = PassCounter()
    zero_predict(tiny_model(c), views, torch.zeros(6), 2)
    assert c.snapshot() == {"image_forward": 5, "text_forward": 1, "text_backward": 0}
    c = PassCounter()
    model = tiny_model(c)
    heads = shared_heads(model, torch.zeros(6), 0.1, 3, torch.Generator().manual_seed(0))
    assert c.snapshot() == {"image_forward": 0, "text_forward": 1 + 3, "text_backward": 0}   # once per prompt
    for _ in range(4):
        score_views(model, views, heads)
    assert c.snapshot() == {"image_forward": 4 * 5, "text_forward": 1 + 3, "text_backward": 0}  # none per image
    c = PassCounter()
    tpt_predict(tiny_model(c), views, nn.Parameter(torch.zeros(6)), 2, 0.1)
    # views scored, kept views forward with grad, final prediction: 3 text forwards, 1 backward
    assert c.snapshot() == {"image_forward": 5, "text_forward": 3, "text_backward": 1}


def test_zero_votes_among_the_lowest_entropy_views_only():
    model = tiny_model()
    views = torch.nn.functional.normalize(torch.randn(12, 4, generator=torch.Generator().manual_seed(3)), dim=-1)
    prompt = torch.zeros(6)
    with torch.no_grad():
        logits = model.logits(views, prompt)
    order = torch.argsort(entropy(logits))
    for keep in (1, 3, 6):
        # the vote of the `keep` most confident views, computed by hand; a reversed filter gives another answer
        kept = logits[order[:keep]].argmax(-1)
        expected = int(torch.bincount(kept, minlength=3).argmax())
        assert zero_predict(model, views, prompt, keep) == expected
    assert zero_predict(model, views, prompt, 1) == int(logits[order[0]].argmax())


def test_tpts_step_lowers_the_entropy_of_the_mean_prediction():
    model = tiny_model()
    views = torch.nn.functional.normalize(torch.randn(10, 4, generator=torch.Generator().manual_seed(7)), dim=-1)
    prompt = nn.Parameter(torch.randn(6, generator=torch.Generator().manual_seed(1)))

    def mean_entropy(p: torch.Tensor) -> float:
        with torch.no_grad():
            probs = model.logits(views, p).softmax(-1).mean(0)
            return float(-(probs * probs.log()).sum())

    before = mean_entropy(prompt.detach())
    loss = -(model.logits(views, prompt).softmax(-1).mean(0).log() * model.logits(views, prompt).softmax(-1).mean(0)
             ).sum()
    (grad,) = torch.autograd.grad(loss, prompt)
    assert mean_entropy(prompt.detach() - 0.05 * grad) < before    # the direction TPT steps in (descent)
    assert mean_entropy(prompt.detach() + 0.05 * grad) > before    # a sign flip would raise it
    # and tpt_predict with all views kept predicts view 0 at exactly that descended prompt
    with torch.no_grad():
        expected = int(model.logits(views[:1], prompt.detach() - 0.05 * grad).argmax(-1)[0])
    assert tpt_predict(model, views, prompt, 10, 0.05) == expected


def test_the_shared_perturbations_are_used_for_every_image():
    model = tiny_model()
    prompt = torch.randn(6, generator=torch.Generator().manual_seed(4))
    heads = shared_heads(model, prompt, 0.3, 5, torch.Generator().manual_seed(0))
    assert torch.allclose(heads.eps.norm(dim=1), torch.full((5,), 0.3))          # R perturbations of norm rho
    with torch.no_grad():                                                         # the heads are T(c + p + eps_r)
        assert torch.allclose(heads.perturbed, model.class_embeddings(prompt + heads.eps))
        assert torch.allclose(heads.base, model.class_embeddings(prompt))
    views = torch.nn.functional.normalize(torch.randn(2, 7, 4, generator=torch.Generator().manual_seed(1)), dim=-1)
    # every image is scored against the same perturbations: the sharpness of a view does not depend on which image
    # (or in which order) it is scored, and equals the hand formula against the shared heads
    a = score_views(model, views[0], heads)[2]
    b = score_views(model, views[1], heads)[2]
    again = score_views(model, views[0], heads)[2]
    assert torch.equal(a, again) and not torch.equal(a, b)
    logits = model.scale * views[0] @ heads.base.T
    pert = model.scale * torch.einsum("vd,rcd->rvc", views[0], heads.perturbed)
    assert torch.allclose(a, view_sharpness(logits, pert))


def test_text_passes_count_a_backward_as_two_forwards():
    assert text_passes({"image_forward": 16, "text_forward": 3, "text_backward": 1}) == 5
    # FGA's 1 + 8 shared forwards spread over 900 test images against TPT's 3 forwards + 1 backward per image
    assert text_passes({"image_forward": 16, "text_forward": 9 / 900, "text_backward": 0}) / 5 == pytest.approx(0.002)
