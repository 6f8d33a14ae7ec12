"""A small pose-conditioned multi-view denoiser and its DDPM training loss (paper Sec. 3.2, miniature).

Views are denoised jointly: convolutions per view, then attention over the tokens of ALL views at half
resolution (dense spatio-temporal attention over the views of one scene). Each view is conditioned on its
camera pose (sin/cos of azimuth and elevation), its timestep, and a flag marking a clean reference view
(reference views join the attention with timestep 0 and are never noised).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def cosine_alpha_bar(n_steps: int, offset: float = 0.008) -> torch.Tensor:
    """Signal level ᾱ_t = cos²(((t/T + s)/(1 + s)) π/2) / cos²(s/(1 + s) π/2), t = 1..T (Nichol & Dhariwal)."""
    t = torch.arange(n_steps + 1, dtype=torch.float64) / n_steps
    f = torch.cos((t + offset) / (1 + offset) * math.pi / 2) ** 2
    return (f[1:] / f[0]).clamp(1e-5, 0.9999).float()


def q_sample(x0: torch.Tensor, alpha_bar: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """Forward noising x_t = √ᾱ_t x_0 + √(1 − ᾱ_t) ε (DDPM eq. 4); ``alpha_bar`` broadcasts over x0."""
    return alpha_bar.sqrt() * x0 + (1 - alpha_bar).sqrt() * noise


def predicted_x0(x_t: torch.Tensor, eps: torch.Tensor, alpha_bar: torch.Tensor) -> torch.Tensor:
    """The clean estimate x̂_0 = (x_t − √(1 − ᾱ_t) ε̂) / √ᾱ_t (DDIM eq. 9)."""
    return (x_t - (1 - alpha_bar).sqrt() * eps) / alpha_bar.sqrt()


def pose_features(azimuth: torch.Tensor, elevation: torch.Tensor) -> torch.Tensor:
    """(…, 4) camera-pose code: sin and cos of azimuth and elevation (degrees in)."""
    az, el = torch.deg2rad(azimuth), torch.deg2rad(elevation)
    return torch.stack([az.sin(), az.cos(), el.sin(), el.cos()], dim=-1)


def timestep_features(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of the (fractional) timestep t ∈ [0, 1], ``dim`` even."""
    freqs = torch.exp(torch.arange(dim // 2, dtype=torch.float32) * (-math.log(1000.0) / max(dim // 2 - 1, 1)))
    angles = 1000.0 * t[..., None] * freqs
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class ResBlock(nn.Module):
    """GroupNorm-SiLU-conv twice, with the view's conditioning added between, and a residual."""

    def __init__(self, c_in: int, c_out: int, c_emb: int) -> None:
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(min(8, c_in), c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.emb = nn.Linear(c_emb, c_out)
        self.n2, self.c2 = nn.GroupNorm(min(8, c_out), c_out), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.c1(F.silu(self.n1(x))) + self.emb(emb)[:, :, None, None]
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class CrossViewAttention(nn.Module):
    """Self-attention over the tokens of every view of a scene at once (views x pixels), pre-norm, residual."""

    def __init__(self, channels: int, heads: int, tokens_per_view: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.attn = nn.MultiheadAttention(channels, heads, batch_first=True)
        self.position = nn.Parameter(torch.zeros(tokens_per_view, channels))

    def forward(self, x: torch.Tensor, n_views: int) -> torch.Tensor:
        bv, c, h, w = x.shape
        tokens = x.flatten(2).transpose(1, 2) + self.position          # (b·v, h·w, c)
        tokens = tokens.reshape(bv // n_views, n_views * h * w, c)
        q = self.norm(tokens)
        out = tokens + self.attn(q, q, q, need_weights=False)[0]
        return out.reshape(bv, h * w, c).transpose(1, 2).reshape(bv, c, h, w)


class MultiViewDenoiser(nn.Module):
    """ε-prediction for every view of (batch, views, 3, s, s), conditioned on pose, timestep and reference flag."""

    def __init__(self, size: int, channels: int, heads: int, emb_dim: int = 64) -> None:
        super().__init__()
        c = channels
        self.emb_dim = emb_dim
        self.cond = nn.Sequential(nn.Linear(4 + 1 + emb_dim, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))
        self.inp = nn.Conv2d(4, c, 3, padding=1)
        self.down1 = ResBlock(c, c, emb_dim)
        self.pool = nn.Conv2d(c, 2 * c, 3, stride=2, padding=1)
        self.mid1 = ResBlock(2 * c, 2 * c, emb_dim)
        self.attn = CrossViewAttention(2 * c, heads, (size // 2) ** 2)
        self.mid2 = ResBlock(2 * c, 2 * c, emb_dim)
        self.up = nn.Conv2d(2 * c, c, 3, padding=1)
        self.up1 = ResBlock(2 * c, c, emb_dim)
        self.out = nn.Sequential(nn.GroupNorm(min(8, c), c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))
        nn.init.zeros_(self.out[-1].weight)
        nn.init.zeros_(self.out[-1].bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor, pose: torch.Tensor, is_ref: torch.Tensor) -> torch.Tensor:
        """x (b, v, 3, s, s); t (b, v) in [0, 1]; pose (b, v, 4); is_ref (b, v) -> ε̂ (b, v, 3, s, s)."""
        b, v = x.shape[:2]
        emb = self.cond(torch.cat([pose, is_ref[..., None].float(), timestep_features(t, self.emb_dim)], -1))
        emb = emb.reshape(b * v, -1)
        flag = is_ref.float().reshape(b * v, 1, 1, 1).expand(-1, 1, *x.shape[-2:])
        h0 = self.down1(self.inp(torch.cat([x.reshape(b * v, *x.shape[2:]), flag], 1)), emb)
        h = self.mid1(self.pool(h0), emb)
        h = self.mid2(self.attn(h, v), emb)
        h = self.up(F.interpolate(h, scale_factor=2, mode="nearest"))
        h = self.up1(torch.cat([h, h0], 1), emb)
        return self.out(h).reshape(b, v, 3, *x.shape[-2:])


def denoising_loss(model: MultiViewDenoiser, x0: torch.Tensor, pose: torch.Tensor, is_ref: torch.Tensor,
                   alpha_bar: torch.Tensor, gen: torch.Generator | None = None) -> torch.Tensor:
    """E‖ε − ε̂(x_t, t)‖² over the target views (DDPM's simple loss); reference views stay clean with t = 0."""
    b, v = x0.shape[:2]
    n_steps = len(alpha_bar)
    step = torch.randint(0, n_steps, (b, 1), generator=gen).expand(b, v)
    noise = torch.randn(x0.shape, generator=gen)
    ab = alpha_bar[step][..., None, None, None]
    target = ~is_ref
    x_t = torch.where(target[..., None, None, None], q_sample(x0, ab, noise), x0)
    t = torch.where(target, (step + 1).float() / n_steps, torch.zeros_like(step, dtype=torch.float32))
    eps = model(x_t, t, pose, is_ref)
    return ((eps - noise) ** 2)[target].mean()
