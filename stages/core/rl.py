"""Shared RL utilities: group-relative advantages, clipped policy losses, KL estimators.

Conventions (all torch, all differentiable where it matters):
- `log_ratio` is log pi_theta - log pi_old (sequence: shape [B]; token: [B, T]).
- `delta` is log pi_theta - log pi_ref for the KL estimators (samples drawn from pi_theta).
- `advantages` is [B] (one per sequence) or [B, T] (one per token, e.g. from GAE).
- Losses are to be minimised (the negated PPO/GRPO surrogate).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

KlKind = Literal["k1", "k2", "k3"]
TokenNormalise = Literal["sequence", "token"]


def group_relative_advantages(rewards: Tensor, scale_std: bool = False, eps: float = 1e-4) -> Tensor:
    """GRPO advantage A_i = r_i - mean_g(r) (or divided by std_g(r) + eps); last dim is the group."""
    centred = rewards - rewards.mean(dim=-1, keepdim=True)
    if not scale_std:
        return centred
    return centred / (rewards.std(dim=-1, keepdim=True, unbiased=False) + eps)


def clipped_surrogate(ratio: Tensor, advantages: Tensor, clip_eps: float, clip_eps_high: float | None = None) -> Tensor:
    """Elementwise PPO surrogate min(rho A, clip(rho, 1 - eps, 1 + eps_high) A) (to maximise)."""
    high = clip_eps if clip_eps_high is None else clip_eps_high
    clipped = ratio.clamp(1.0 - clip_eps, 1.0 + high)
    return torch.minimum(ratio * advantages, clipped * advantages)


def clipped_sequence_loss(log_ratio: Tensor, advantages: Tensor, clip_eps: float = 0.2,
                          clip_eps_high: float | None = None) -> Tensor:
    """Sequence-level loss -mean_i min(rho_i A_i, clip(rho_i) A_i), rho_i = exp(log_ratio_i) (GSPO/ESPO)."""
    return -clipped_surrogate(log_ratio.exp(), advantages, clip_eps, clip_eps_high).mean()


def clipped_token_loss(log_ratio: Tensor, advantages: Tensor, mask: Tensor, clip_eps: float = 0.2,
                       clip_eps_high: float | None = None, normalise: TokenNormalise = "sequence") -> Tensor:
    """Token-level loss -min(rho_t A, clip(rho_t) A), mean per sequence (GRPO) or per token (DAPO)."""
    adv = advantages.unsqueeze(-1) if advantages.dim() == log_ratio.dim() - 1 else advantages
    mask = mask.to(log_ratio.dtype)
    per_token = -clipped_surrogate(log_ratio.exp(), adv, clip_eps, clip_eps_high) * mask
    if normalise == "token":
        return per_token.sum() / mask.sum().clamp_min(1.0)
    if normalise == "sequence":
        return (per_token.sum(-1) / mask.sum(-1).clamp_min(1.0)).mean()
    raise ValueError(f"normalise must be 'sequence' or 'token', got {normalise!r}")


def clip_fraction(log_ratio: Tensor, clip_eps: float = 0.2, mask: Tensor | None = None,
                  clip_eps_high: float | None = None) -> float:
    """Share of (unmasked) ratios outside [1 - eps, 1 + eps_high] (a diagnostic, no gradient)."""
    high = clip_eps if clip_eps_high is None else clip_eps_high
    ratio = log_ratio.detach().exp()
    outside = ((ratio < 1.0 - clip_eps) | (ratio > 1.0 + high)).to(ratio.dtype)
    if mask is None:
        return float(outside.mean())
    mask = mask.to(ratio.dtype)
    return float((outside * mask).sum() / mask.sum().clamp_min(1.0))


def kl_k1(delta: Tensor) -> Tensor:
    """k1 = delta = log pi_theta - log pi_ref (unbiased, high variance, can go negative; Schulman 2020)."""
    return delta


def kl_k2(delta: Tensor) -> Tensor:
    """k2 = delta^2 / 2 (biased, low variance, always >= 0; Schulman 2020)."""
    return 0.5 * delta.pow(2)


def kl_k3(delta: Tensor) -> Tensor:
    """k3 = exp(-delta) - 1 + delta (unbiased, always >= 0; Schulman 2020)."""
    return torch.expm1(-delta) + delta


KL_ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


def kl_estimate(delta: Tensor, kind: KlKind) -> Tensor:
    """Elementwise KL(pi_theta || pi_ref) estimate by name: k1, k2 or k3."""
    if kind not in KL_ESTIMATORS:
        raise ValueError(f"kl estimator must be one of {sorted(KL_ESTIMATORS)}, got {kind!r}")
    return KL_ESTIMATORS[kind](delta)


def gae(rewards: Tensor, values: Tensor, mask: Tensor, gamma: float = 1.0, lam: float = 0.95) -> tuple[Tensor, Tensor]:
    """GAE (Schulman 2016): A_t = sum_l (gamma lam)^l delta_{t+l}, delta_t = r_t + gamma V_{t+1} - V_t.

    V is 0 after the last unmasked token; returns (A, A + V), both zero where masked; shapes [B, T].
    """
    mask = mask.to(rewards.dtype)
    rewards, values = rewards * mask, values.detach() * mask
    advantages = torch.zeros_like(rewards)
    carry = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        next_value = values[:, t + 1] if t + 1 < rewards.shape[1] else torch.zeros_like(carry)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        carry = (delta + gamma * lam * carry) * mask[:, t]
        advantages[:, t] = carry
    return advantages, (advantages + values) * mask


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor,
                       clip_range: float = 0.2) -> Tensor:
    """PPO value loss 0.5 max((V - R)^2, (clip(V, V_old +- eps) - R)^2), mean over unmasked tokens."""
    mask = mask.to(values.dtype)
    clipped = old_values + (values - old_values).clamp(-clip_range, clip_range)
    per_token = 0.5 * torch.maximum((values - returns).pow(2), (clipped - returns).pow(2))
    return (per_token * mask).sum() / mask.sum().clamp_min(1.0)
