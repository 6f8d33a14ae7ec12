"""Test-time methods on the cached view embeddings of one test image: TPT, Zero and FGA's sharpness-based selection.

Every method reads the (n_views, d) unit image embeddings of one test image (view 0 is the image
itself) and a prompt; each counts its passes through the model's :class:`~stages.fga.sapt.PassCounter`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from stages.fga.sapt import PromptedCLIP


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Shannon entropy of softmax(logits) per row, −Σ p log p (TPT's confidence measure, Shu et al. 2022)."""
    logp = F.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def random_perturbations(n: int, dim: int, rho: float, gen: torch.Generator) -> torch.Tensor:
    """n random prompt perturbations of norm ρ (uniform directions on the sphere)."""
    e = torch.randn((n, dim), generator=gen)
    return rho * e / e.norm(dim=1, keepdim=True)


def view_sharpness(logits: torch.Tensor, perturbed_logits: torch.Tensor) -> torch.Tensor:
    """Per view, the mean rise of its pseudo-label loss under prompt perturbations (FGA: sharpness-based selection).

    ``logits`` (V, C) at the prompt, ``perturbed_logits`` (R, V, C) at R perturbed prompts; the
    pseudo-label is each view's argmax at the prompt. A model whose logits do not move scores 0.
    """
    target = logits.argmax(-1)
    base = F.cross_entropy(logits, target, reduction="none")
    pert = torch.stack([F.cross_entropy(pl, target, reduction="none") for pl in perturbed_logits])
    return (pert - base).mean(0)


def selection_scores(view_entropy: torch.Tensor, sharpness: torch.Tensor, lam: float) -> torch.Tensor:
    """score_j = H_j + λ S_j: entropy plus λ × loss sharpness (FGA abstract: Sharpness-based Test Sample Selection)."""
    return view_entropy + lam * sharpness


def select_views(scores: torch.Tensor, keep: int) -> torch.Tensor:
    """Indices of the ``keep`` lowest-score views (ties broken by view index), in ascending score order."""
    order = torch.argsort(scores, stable=True)
    return order[:keep]


def vote(logits: torch.Tensor) -> int:
    """Majority vote of the views' argmax (Zero, Farina et al. 2024); ties go to the larger summed probability."""
    probs = logits.softmax(-1)
    votes = torch.bincount(probs.argmax(-1), minlength=probs.shape[-1]).float()
    best = votes == votes.max()
    return int(torch.where(best, probs.sum(0), torch.full_like(votes, -1.0)).argmax())


@dataclass(frozen=True)
class PromptHeads:
    """Class embeddings at a prompt (C, d) and at R prompt perturbations (R, C, d), computed once and shared."""

    base: torch.Tensor
    perturbed: torch.Tensor
    eps: torch.Tensor


def shared_heads(model: PromptedCLIP, prompt: torch.Tensor, rho: float, n_perturbations: int,
                 gen: torch.Generator) -> PromptHeads:
    """The prompt's and its R random perturbations' class embeddings, once for all test images: 1 + R text
    forwards in all (FGA: the perturbed text embeddings do not depend on the test image)."""
    with torch.no_grad():
        eps = random_perturbations(n_perturbations, prompt.shape[-1], rho, gen)
        return PromptHeads(model.class_embeddings(prompt), model.class_embeddings(prompt + eps), eps)


def score_views(model: PromptedCLIP, views: torch.Tensor,
                heads: PromptHeads) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits (V, C), entropy (V,), sharpness (V,)) of one image's views against the shared heads: image-side
    products only, no text forward and no backward."""
    emb = model.counter.read_views(views)
    with torch.no_grad():
        logits = model.scale * emb @ heads.base.T
        perturbed = model.scale * torch.einsum("vd,rcd->rvc", emb, heads.perturbed)
    return logits, entropy(logits), view_sharpness(logits, perturbed)


def fga_predict(logits: torch.Tensor, view_entropy: torch.Tensor, sharpness: torch.Tensor, lam: float,
                keep: int) -> int:
    """FGA's prediction: keep the lowest entropy + λ·sharpness views, vote; no parameter update (FGA abstract)."""
    return vote(logits[select_views(selection_scores(view_entropy, sharpness, lam), keep)])


def zero_predict(model: PromptedCLIP, views: torch.Tensor, prompt: torch.Tensor, keep: int) -> int:
    """Zero: keep the ``keep`` most confident (lowest-entropy) views and vote, no update (Zero, Farina et al. 2024)."""
    with torch.no_grad():
        logits = model.logits(model.counter.read_views(views), prompt)
    return vote(logits[select_views(entropy(logits), keep)])


def single_view_predict(model: PromptedCLIP, views: torch.Tensor, prompt: torch.Tensor) -> int:
    """Plain inference on view 0 (the test image itself): zero-shot, CoOp and SAPT without test-time adaptation."""
    with torch.no_grad():
        return int(model.logits(model.counter.read_views(views[:1]), prompt).argmax(-1)[0])


def tpt_predict(model: PromptedCLIP, views: torch.Tensor, prompt: nn.Parameter, keep: int, lr: float) -> int:
    """TPT: one gradient step on the entropy of the mean prediction of the confident views, then predict view 0
    with the updated prompt; the prompt is restored afterwards (TPT, Shu et al. 2022)."""
    saved = prompt.detach().clone()
    try:
        emb = model.counter.read_views(views)
        with torch.no_grad():
            kept = select_views(entropy(model.logits(emb, saved)), keep)
        mean_probs = model.logits(emb[kept], prompt).softmax(-1).mean(0)
        loss = -(mean_probs * mean_probs.clamp_min(1e-12).log()).sum()
        (grad,) = torch.autograd.grad(loss, prompt)
        with torch.no_grad():
            prompt -= lr * grad
            return int(model.logits(emb[:1], prompt).argmax(-1)[0])
    finally:
        with torch.no_grad():
            prompt.copy_(saved)
