"""A small masked-diffusion language model: bidirectional blocks, a mask token, iterative unmasking.

The prompt is always visible; the completion starts fully masked and is unmasked over
``steps`` rounds, each committing the masked positions the model is most confident about
(LLaDA's low-confidence remasking). Training uses the masked-diffusion objective.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from stages.core.io import load_safetensors
from stages.core.transformer import Block
from stages.espo.tasks import MASK_ID, SYMBOLS, decode

if TYPE_CHECKING:
    from stages.espo.config import ModelConfig
    from stages.espo.io import Examples


class MaskedDiffusionLM(nn.Module):
    """Token + position embeddings, bidirectional pre-norm blocks (core), a linear readout."""

    def __init__(self, d_model: int, n_layers: int, n_heads: int, max_len: int, vocab_size: int = len(SYMBOLS)):
        super().__init__()
        self.max_len = max_len
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, causal=False) for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Log-probabilities of the clean token at every position, shape (batch, time, vocab)."""
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        logits[..., MASK_ID] = float("-inf")  # the model never predicts the mask token
        return F.log_softmax(logits, dim=-1)


def completion_logprobs(model: nn.Module, prompt: torch.Tensor, noisy: torch.Tensor,
                        clean: torch.Tensor) -> torch.Tensor:
    """log p_θ(clean_k | prompt, noisy completion) at every completion position, shape (B, L)."""
    logp = model(torch.cat([prompt, noisy], dim=1))[:, prompt.shape[1]:]
    return logp.gather(-1, clean.unsqueeze(-1)).squeeze(-1)


def masked_diffusion_loss(model: nn.Module, prompt: torch.Tensor, completion: torch.Tensor,
                          gen: torch.Generator | None = None) -> torch.Tensor:
    """SFT objective: t ~ U(0,1], mask each completion token w.p. t, −(1/t)·Σ_masked log p / L (LLaDA eq. 3)."""
    b, length = completion.shape
    t = torch.rand(b, 1, generator=gen).clamp_min(1e-3)
    masked = torch.rand(b, length, generator=gen) < t
    noisy = completion.masked_fill(masked, MASK_ID)
    lp = completion_logprobs(model, prompt, noisy, completion)
    return -((lp * masked) / t).sum(1).mean() / length


@torch.no_grad()
def sample(model: nn.Module, prompt: torch.Tensor, length: int, steps: int, temperature: float,
           gen: torch.Generator | None = None) -> torch.Tensor:
    """Iterative unmasking: each of ``steps`` rounds commits the most confident masked positions."""
    b = prompt.shape[0]
    x = torch.full((b, length), MASK_ID, dtype=torch.long)
    per_step = [length // steps + (i < length % steps) for i in range(steps)]
    for k in per_step:
        logp = model(torch.cat([prompt, x], dim=1))[:, prompt.shape[1]:]
        if temperature > 0:
            probs = (logp / temperature).softmax(-1)
            draw = torch.multinomial(probs.view(-1, probs.shape[-1]), 1, generator=gen).view(b, length)
        else:
            draw = logp.argmax(-1)
        confidence = logp.gather(-1, draw.unsqueeze(-1)).squeeze(-1)
        confidence = confidence.masked_fill(x != MASK_ID, float("-inf"))
        chosen = confidence.topk(k, dim=1).indices
        x.scatter_(1, chosen, draw.gather(1, chosen))
    return x


def load_policy(folder: Path, task: str, spec: ModelConfig, max_len: int) -> MaskedDiffusionLM:
    """The warm-start (or an RL) model of a task."""
    model = MaskedDiffusionLM(spec.d_model, spec.n_layers, spec.n_heads, max_len)
    model.load_state_dict(load_safetensors(folder / f"{task}.safetensors"))
    return model


@torch.no_grad()
def success_and_reward(model: torch.nn.Module, ex: Examples, steps: int, limit: int | None = None,
                       batch: int = 256, temperature: float = 0.0,
                       gen: torch.Generator | None = None) -> tuple[float, float]:
    """Success rate (reward = 1) and mean reward on the first ``limit`` rows; greedy unless temperature > 0."""
    n = len(ex) if limit is None else min(limit, len(ex))
    rewards = []
    for start in range(0, n, batch):
        completions = sample(model, ex.prompts[start:start + batch][: n - start], ex.completion_length, steps,
                             temperature, gen)
        rewards += [ex.reward(start + i, decode(c)) for i, c in enumerate(completions)]
    r = torch.tensor(rewards)
    return float((r >= 1.0).float().mean()), float(r.mean())
