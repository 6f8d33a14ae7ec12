"""Purrception (variational flow matching over VQ latents) and the three baselines of the paper's code.

All four share the network (a bidirectional transformer over the latent grid) and the path
z_t = t·z₁ + (1 − t)·z₀ with z₀ ~ N(0, I), t ~ U(ε, 1), z₁ the (scaled) code embedding:
- ``purrception``: the network outputs logits of a categorical posterior q(k | z_t, t) over codes;
  loss = CE(code) + λ_z·mean(logsumexp(logits)²). Two samplers: ``deterministic`` moves with
  v = (μ − z_t)/(1 − t), μ = softmax(logits/τ)·codebook (Sec. 3), and decodes the last step by the
  argmax code; ``stochastic`` draws a code k ~ q(· | z_t, t)^(1/τ) at every step and moves with
  v = (e_k − z_t)/(1 − t), the last step's draw being the output (sampling from the posterior, as
  discrete FM samples its proposals).
- ``cfm_velocity``: continuous FM, MSE of the output to the velocity z₁ − z₀.
- ``cfm_endpoint``: continuous FM, MSE of the output to z₁ (v = (x̂₁ − z_t)/(1 − t)).
- ``discrete_fm``: discrete FM with a masked source (x_t keeps each code with probability t),
  cross-entropy on the masked positions; sampling unmasks with probability h/(1 − t) per step.
Continuous outputs are snapped to the nearest code at the end. No step evaluates the network at t = 1.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F

from stages.core.io import load_safetensors, read_json
from stages.core.transformer import Block
from stages.purrception.vq import nearest_code

if TYPE_CHECKING:
    from stages.purrception.config import TrainConfig

METHODS = ("purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm")
CONTINUOUS = ("cfm_velocity", "cfm_endpoint")
TIME_FEATURES = 32


def interpolate(z0: torch.Tensor, z1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """z_t = t·z₁ + (1 − t)·z₀ (the linear probability path; t has shape (B,))."""
    t = t.view(-1, *([1] * (z1.dim() - 1)))
    return t * z1 + (1 - t) * z0


def posterior_mean(logits: torch.Tensor, codebook: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """μ = Σ_k softmax(logits/τ)_k e_k: the expected endpoint under the categorical posterior (Sec. 3)."""
    return F.softmax(logits / temperature, dim=-1) @ codebook


def sample_posterior_code(logits: torch.Tensor, temperature: float,
                          generator: torch.Generator | None = None) -> torch.Tensor:
    """k ~ softmax(logits/τ): one code per position drawn from the categorical posterior (shape logits.shape[:-1])."""
    probs = F.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=generator).view(logits.shape[:-1])


def velocity_from_endpoint(mu: torch.Tensor, z_t: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """v = (μ − z_t)/(1 − t): the velocity of the straight path that reaches μ at t = 1 (VFM, Sec. 3)."""
    return (mu - z_t) / (1 - t.view(-1, *([1] * (z_t.dim() - 1))))


def z_loss(logits: torch.Tensor) -> torch.Tensor:
    """mean(logsumexp(logits)²): the logit-normaliser penalty of the official code."""
    return torch.logsumexp(logits, dim=-1).pow(2).mean()


def purrception_loss(logits: torch.Tensor, codes: torch.Tensor, z_weight: float) -> torch.Tensor:
    """Cross-entropy of the code index + λ_z·z-loss (the variational FM objective on VQ latents)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), codes.reshape(-1)) + z_weight * z_loss(logits)


def mask_codes(codes: torch.Tensor, t: torch.Tensor, mask_id: int) -> torch.Tensor:
    """x_t of discrete FM with a masked source: each code kept with probability t, else the mask token."""
    keep = torch.rand(codes.shape, device=codes.device) < t.view(-1, 1)
    return torch.where(keep, codes, torch.full_like(codes, mask_id))


def time_grid(n_steps: int, eps: float) -> tuple[torch.Tensor, float]:
    """Euler times t_i = ε + i·h, i < n, with h = (1 − ε)/n: the last evaluation is at 1 − h < 1."""
    h = (1.0 - eps) / n_steps
    return eps + h * torch.arange(n_steps, dtype=torch.float32), h


def continuous_velocity(model: nn.Module, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The velocity of a continuous-FM net: its output (``cfm_velocity``) or (x̂₁ − z_t)/(1 − t) (``cfm_endpoint``)."""
    out = model(z, t)
    return velocity_from_endpoint(out, z, t) if model.method == "cfm_endpoint" else out


def euler_path(field: Any, z: torch.Tensor, n_steps: int, eps: float) -> list[torch.Tensor]:
    """The states of n Euler steps of dz/dt = field(z, t) from z at t = ε on ``time_grid``: [z(ε), …, z(1)]."""
    times, h = time_grid(n_steps, eps)
    states = [z]
    for t in times:
        z = z + h * field(z, t.expand(z.shape[0]))
        states.append(z)
    return states


def timestep_features(t: torch.Tensor) -> torch.Tensor:
    """Sinusoidal features of t ∈ [0, 1] (B,) → (B, TIME_FEATURES)."""
    half = TIME_FEATURES // 2
    freqs = torch.exp(-math.log(1000.0) * torch.arange(half, dtype=t.dtype, device=t.device) / half)
    angles = 1000.0 * t[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class FlowTransformer(nn.Module):
    """Input projection (embedding for discrete FM) + positions + time, bidirectional blocks, a head.

    The head outputs code logits (purrception, discrete_fm) or an embedding-space vector (CFM).
    """

    def __init__(self, method: str, n_codes: int, code_dim: int, seq_len: int, d_model: int, n_layers: int,
                 n_heads: int) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
        self.method = method
        self.inp = nn.Embedding(n_codes + 1, d_model) if method == "discrete_fm" else nn.Linear(code_dim, d_model)
        self.pos = nn.Parameter(0.02 * torch.randn(seq_len, d_model))
        self.time = nn.Sequential(nn.Linear(TIME_FEATURES, d_model), nn.SiLU(), nn.Linear(d_model, d_model))
        self.blocks = nn.ModuleList(Block(d_model, n_heads, causal=False) for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, code_dim if method in CONTINUOUS else n_codes)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """x: (B, L, D) latents or (B, L) tokens; t: (B,) → (B, L, K) logits or (B, L, D)."""
        h = self.inp(x) + self.pos[None] + self.time(timestep_features(t))[:, None]
        for block in self.blocks:
            h = block(h)
        return self.head(self.ln(h))


def training_loss(model: FlowTransformer, codes: torch.Tensor, codebook: torch.Tensor, eps: float,
                  z_weight: float) -> torch.Tensor:
    """The training objective of ``model.method`` on a batch of code grids (B, L)."""
    b = codes.shape[0]
    t = eps + (1 - eps) * torch.rand(b, device=codes.device)
    if model.method == "discrete_fm":
        x_t = mask_codes(codes, t, codebook.shape[0])
        logits = model(x_t, t)
        masked = x_t == codebook.shape[0]
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), codes.reshape(-1), reduction="none")
        return (ce * masked.reshape(-1)).sum() / masked.sum().clamp_min(1)
    z1 = codebook[codes]
    z0 = torch.randn_like(z1)
    out = model(interpolate(z0, z1, t), t)
    if model.method == "purrception":
        return purrception_loss(out, codes, z_weight)
    target = z1 - z0 if model.method == "cfm_velocity" else z1
    return F.mse_loss(out, target)


@torch.no_grad()
def sample_codes(model: FlowTransformer, codebook: torch.Tensor, n: int, n_steps: int, eps: float,
                 temperature: float = 1.0, generator: torch.Generator | None = None,
                 stochastic: bool = False) -> torch.Tensor:
    """n code grids (n, L) by n_steps Euler steps of the method's sampler (see the module docstring).

    ``stochastic`` selects Purrception's posterior-sampling rule; the other methods have one sampler each.
    """
    seq_len, (k, d) = model.pos.shape[0], codebook.shape
    times, h = time_grid(n_steps, eps)
    if model.method == "discrete_fm":
        x = torch.full((n, seq_len), k, dtype=torch.long)
        for i, t in enumerate(times):
            tt = t.expand(n)
            probs = F.softmax(model(x, tt) / temperature, dim=-1)
            proposal = torch.multinomial(probs.reshape(-1, k), 1, generator=generator).view(n, seq_len)
            # h/(1 − t) is 1 at the last step up to float rounding: unmask whatever is left there
            unmask = (torch.rand((n, seq_len), generator=generator) < h / (1 - float(t))) | (i == n_steps - 1)
            x = torch.where((x == k) & unmask, proposal, x)
        return x
    z = torch.randn((n, seq_len, d), generator=generator)
    if model.method in CONTINUOUS:
        return nearest_code(euler_path(lambda z_, t_: continuous_velocity(model, z_, t_), z, n_steps, eps)[-1],
                            codebook)
    for i, t in enumerate(times):
        tt = t.expand(n)
        out = model(z, tt)
        if stochastic:
            k_draw = sample_posterior_code(out, temperature, generator)
            if i == n_steps - 1:
                return k_draw
            v = velocity_from_endpoint(codebook[k_draw], z, tt)
        else:
            if i == n_steps - 1:
                return out.argmax(-1)
            v = velocity_from_endpoint(posterior_mean(out, codebook, temperature), z, tt)
        z = z + h * v
    raise AssertionError("unreachable: Purrception returns at its last step")


def flow_codebook(tokenizer: Path) -> tuple[torch.Tensor, float]:
    """The codebook divided by its overall std, so code embeddings have the scale of z₀ ~ N(0, I)."""
    codebook = load_safetensors(Path(tokenizer) / "vqvae.safetensors")["codebook.weight"].float()
    scale = float(codebook.std())
    return codebook / scale, scale


def build_flow_model(cfg: dict[str, Any] | TrainConfig, method: str) -> FlowTransformer:
    """The shared network with the method's input and head, from the train manifest (or config)."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
    return FlowTransformer(method, get("codebook_size"), get("code_dim"), get("seq_len"), get("d_model"),
                           get("n_layers"), get("n_heads"))


def load_generator(folder: Path, method: str, seed_index: int, step: int) -> FlowTransformer:
    """One trained generator at one checkpoint."""
    manifest = read_json(Path(folder) / "manifest.json")
    model = build_flow_model(manifest, method)
    model.load_state_dict(load_safetensors(Path(folder) / f"{method}_s{seed_index}_step{step}.safetensors"))
    return model.eval()
