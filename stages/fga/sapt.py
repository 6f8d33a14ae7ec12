"""Prompts in the text projector's input space, CoOp and Sharpness-Aware Prompt Tuning (SAPT), and a pass counter.

The text encoder (MiniLM) is frozen and its class-prompt features are cached, so the learnable
prompt here is one context vector ``p`` added to every class's cached text feature before the
trained text projector: class embedding_k(p) = T(c_k + p) (a unified context as in CoOp, Zhou et al.
2022, §3.2, but in feature space rather than as token embeddings fed through the encoder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class PassCounter:
    """Counts the passes a method makes: view embeddings read, text-side forwards and backwards (per prompt)."""

    image_forward: int = 0
    text_forward: int = 0
    text_backward: int = 0
    _hooks: list = field(default_factory=list, repr=False)

    def snapshot(self) -> dict[str, int]:
        """The counts so far."""
        return {"image_forward": self.image_forward, "text_forward": self.text_forward,
                "text_backward": self.text_backward}

    def read_views(self, emb: torch.Tensor) -> torch.Tensor:
        """Count the views whose image embeddings a method reads (each is one image-encoder forward)."""
        self.image_forward += int(emb.shape[0])
        return emb

    def _count_backward(self, grad: torch.Tensor) -> torch.Tensor:
        self.text_backward += 1
        return grad


def text_passes(passes: dict[str, float]) -> float:
    """Text-side cost in forward-pass units: forwards + 2 × backwards (a backward costs about two forwards)."""
    return passes["text_forward"] + 2 * passes["text_backward"]


class PromptedCLIP:
    """Frozen CLIP heads on cached features: class embeddings T(c_k + p), logits s <x, T(c_k + p)>."""

    def __init__(self, text_projector: nn.Module, class_features: torch.Tensor, logit_scale: float,
                 counter: PassCounter | None = None) -> None:
        self.text = text_projector.eval().requires_grad_(False)
        self.class_features = class_features
        self.scale = float(logit_scale)
        self.counter = counter if counter is not None else PassCounter()

    def class_embeddings(self, prompt: torch.Tensor) -> torch.Tensor:
        """Unit-norm class embeddings (..., C, d) for prompt(s) (..., D_text): one text forward per prompt vector."""
        n_prompts = prompt[..., 0].numel()
        self.counter.text_forward += n_prompts
        emb = self.text(self.class_features + prompt.unsqueeze(-2))
        if emb.requires_grad:
            emb.register_hook(self.counter._count_backward)
        return emb

    def logits(self, image_emb: torch.Tensor, prompt: torch.Tensor) -> torch.Tensor:
        """CLIP logits (n, C) of unit image embeddings (n, d) against the prompt's class embeddings."""
        return self.scale * image_emb @ self.class_embeddings(prompt).T


def coop_loss(model: PromptedCLIP, prompt: torch.Tensor, image_emb: torch.Tensor,
              labels: torch.Tensor) -> torch.Tensor:
    """CoOp's objective: cross-entropy of the prompted class logits on the few-shot set (CoOp, Zhou et al. 2022)."""
    return F.cross_entropy(model.logits(image_emb, prompt), labels)


def sam_perturbation(grad: torch.Tensor, rho: float) -> torch.Tensor:
    """ε* = ρ g / ‖g‖, SAM's first-order worst-case perturbation (Foret et al. 2021, eq. 2; used by FGA's SAPT)."""
    norm = grad.norm()
    return torch.zeros_like(grad) if norm == 0 else rho * grad / norm


def sapt_gradient(loss_fn: Callable[[torch.Tensor], torch.Tensor], prompt: torch.Tensor,
                  rho: float) -> tuple[torch.Tensor, torch.Tensor]:
    """SAPT's gradient: ∇ℓ(p + ε*) with ε* = ρ∇ℓ(p)/‖∇ℓ(p)‖ (SAPT, min_p max_{‖ε‖≤ρ} ℓ(p+ε), issue 31); also ℓ(p)."""
    p = prompt.detach().requires_grad_(True)
    loss = loss_fn(p)
    (g,) = torch.autograd.grad(loss, p)
    eps = sam_perturbation(g, rho)
    q = (prompt.detach() + eps).requires_grad_(True)
    (g_sam,) = torch.autograd.grad(loss_fn(q), q)
    return g_sam, loss.detach()


def tune_prompt(loss_fn: Callable[[torch.Tensor], torch.Tensor], init: torch.Tensor, steps: int, lr: float,
                rho: float | None) -> tuple[torch.Tensor, list[float]]:
    """Adam on the prompt: plain gradients (CoOp) when ``rho`` is None, SAPT gradients otherwise; (prompt, losses)."""
    p = nn.Parameter(init.clone())
    opt = torch.optim.Adam([p], lr=lr)
    losses = []
    for _ in range(steps):
        if rho is None:
            loss = loss_fn(p)
            grad = torch.autograd.grad(loss, p)[0]
        else:
            grad, loss = sapt_gradient(loss_fn, p, rho)
        p.grad = grad
        opt.step()
        losses.append(float(loss.detach()))
    return p.detach().clone(), losses


def prompt_sharpness(loss_fn: Callable[[torch.Tensor], torch.Tensor], prompt: torch.Tensor, rho: float,
                     ascent_steps: int) -> float:
    """max_{‖ε‖≤ρ} ℓ(p+ε) − ℓ(p), by projected normalised gradient ascent (SAM's sharpness, Foret et al.)."""
    base = float(loss_fn(prompt.detach()))
    start = torch.randn(prompt.shape, generator=torch.Generator().manual_seed(0))
    eps = 0.1 * rho * start / start.norm()  # a small fixed start: at an exact minimum the gradient is zero
    step = rho / ascent_steps * 2
    worst = base
    for _ in range(ascent_steps):
        q = (prompt.detach() + eps).requires_grad_(True)
        loss = loss_fn(q)
        worst = max(worst, float(loss))
        (g,) = torch.autograd.grad(loss, q)
        eps = eps + sam_perturbation(g, step)
        if eps.norm() > rho:
            eps = eps * rho / eps.norm()
    worst = max(worst, float(loss_fn(prompt.detach() + eps)))
    return worst - base
