"""ESPO's likelihood proxies and the three policy objectives compared in the miniature.

- ELBO of a completion y of length L (masked diffusion, discrete-count form):
  B(y) = Σ_{l=1..L} (1/l) E_{|M|=l} Σ_{k∈M} log p_θ(y_k | y_{∖M}); estimated by l ~ U{0..L}
  (stratified over the batch), a random mask of l positions, weight (L+1)/l (l = 0 → 0),
  averaged with the complementary mask (ESPO §3.2 / the official recipe).
- (a) d1: mean-field per-token log-probs with a fully masked completion and a randomly
  masked prompt; (b) token-level ratios of the ELBO's per-token terms; (c) ESPO: one
  sequence-level ratio exp((B_θ − B_old)/L), clipped, with a k2 KL on B_θ − B_ref.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from stages.core.rl import clipped_sequence_loss, clipped_token_loss, kl_estimate
from stages.espo.diffusion import completion_logprobs
from stages.espo.tasks import MASK_ID


def stratified_mask_counts(batch: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """Mask counts l_i ∈ {0..L}, each uniform, stratified across the batch: ⌊(π(i) + u_i)(L+1)/B⌋."""
    strata = torch.randperm(batch, generator=gen).double()
    u = (strata + torch.rand(batch, generator=gen, dtype=torch.float64)) / batch
    return (u * (length + 1)).floor().long().clamp_max(length)


def random_masks(counts: torch.Tensor, length: int, gen: torch.Generator) -> torch.Tensor:
    """Boolean masks (B, L) with exactly counts[i] masked positions, chosen uniformly at random."""
    ranks = torch.rand(len(counts), length, generator=gen).argsort(1).argsort(1)
    return ranks < counts[:, None]


def elbo_mask_samples(batch: int, length: int, n_samples: int, complementary: bool,
                      gen: torch.Generator) -> torch.Tensor:
    """(S, B, L) masks: n_samples stratified draws, each followed by its complement if asked (shared by θ, old, ref)."""
    masks = []
    for _ in range(n_samples):
        m = random_masks(stratified_mask_counts(batch, length, gen), length, gen)
        masks += [m, ~m] if complementary else [m]
    return torch.stack(masks)


def elbo_token_terms(model: nn.Module, prompt: torch.Tensor, completion: torch.Tensor,
                     masks: torch.Tensor) -> torch.Tensor:
    """Per-token ELBO terms (L+1)/l·1[k∈M]·log p(y_k | y_∖M), averaged over the S masks, shape (B, L)."""
    s, b, length = masks.shape
    flat = masks.reshape(s * b, length)
    noisy = completion.repeat(s, 1).masked_fill(flat, MASK_ID)
    lp = completion_logprobs(model, prompt.repeat(s, 1), noisy, completion.repeat(s, 1))
    counts = flat.sum(1, keepdim=True)
    weight = torch.where(counts > 0, (length + 1) / counts.clamp_min(1), torch.zeros_like(counts, dtype=lp.dtype))
    return (lp * flat * weight).view(s, b, length).mean(0)


def elbo_estimate(model: nn.Module, prompt: torch.Tensor, completion: torch.Tensor,
                  masks: torch.Tensor) -> torch.Tensor:
    """Monte-Carlo ELBO B̂(y) per sequence: the sum of the per-token terms, shape (B,)."""
    return elbo_token_terms(model, prompt, completion, masks).sum(1)


@torch.no_grad()
def elbo_exact(model: nn.Module, prompt: torch.Tensor, completion: torch.Tensor) -> torch.Tensor:
    """B(y) by enumerating every mask: Σ_l (1/l)·mean_{|M|=l} Σ_{k∈M} log p(y_k | y_∖M) (small L only)."""
    length = completion.shape[1]
    total = torch.zeros(completion.shape[0], dtype=torch.float64)
    for l_count in range(1, length + 1):
        subsets = list(itertools.combinations(range(length), l_count))
        for subset in subsets:
            m = torch.zeros(completion.shape[0], length, dtype=torch.bool)
            m[:, list(subset)] = True
            lp = completion_logprobs(model, prompt, completion.masked_fill(m, MASK_ID), completion)
            total += (lp * m).sum(1).double() / l_count / len(subsets)
    return total


def mean_field_logprobs(model: nn.Module, prompt: torch.Tensor, completion: torch.Tensor,
                        prompt_mask: torch.Tensor) -> torch.Tensor:
    """d1's one-step per-token log p(y_k | masked prompt, fully masked completion), shape (B, L)."""
    noisy = torch.full_like(completion, MASK_ID)
    return completion_logprobs(model, prompt.masked_fill(prompt_mask, MASK_ID), noisy, completion)


def espo_loss(elbo_new: torch.Tensor, elbo_old: torch.Tensor, elbo_ref: torch.Tensor, advantages: torch.Tensor,
              length: int, clip_eps: float, beta: float, kl: str, per_token_ratio: bool = True) -> torch.Tensor:
    """ESPO: clipped sequence loss on ρ = exp((B_θ − B_old)/L) + β·Σ_i k(B_θ − B_ref)/(B·L) (ESPO eq. 8-9)."""
    log_ratio = elbo_new - elbo_old
    if per_token_ratio:
        log_ratio = log_ratio / length
    penalty = kl_estimate(elbo_new - elbo_ref, kl).sum() / (len(elbo_new) * length)
    return clipped_sequence_loss(log_ratio, advantages, clip_eps) + beta * penalty


def token_level_loss(new: torch.Tensor, old: torch.Tensor, ref: torch.Tensor, advantages: torch.Tensor,
                     token_mask: torch.Tensor, clip_eps: float, beta: float, kl: str) -> torch.Tensor:
    """Token-level actions (d1, token ELBO): clipped GRPO loss on exp(ℓ_θ,k − ℓ_old,k) + β·mean_k k(ℓ_θ,k − ℓ_ref,k)."""
    mask = token_mask.to(new.dtype)
    penalty = ((kl_estimate(new - ref, kl) * mask).sum(1) / mask.sum(1).clamp_min(1)).mean()
    return clipped_token_loss(new - old, advantages, token_mask, clip_eps) + beta * penalty
