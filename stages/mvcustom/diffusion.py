"""A small pose-conditioned multi-view denoiser and its DDPM training loss (paper Sec. 3.2, miniature).

Views are denoised jointly: convolutions per view, then attention over the tokens of ALL views at half
resolution (dense spatio-temporal attention over the views of one scene). Each view is conditioned on its
camera pose (sin/cos of azimuth and elevation), its timestep, and a flag marking a clean reference view
(reference views join the attention with timestep 0 and are never noised). With ``rays`` the denoiser is
also conditioned per pixel on its camera ray in Plücker coordinates (direction d and moment o × d), fed to
the first convolution and added to the attention tokens, so attention can match pixels across views by
their rays; with ``relative`` poses the world is rotated about the vertical axis so that the first view
(always a reference) sits at azimuth 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

TARGET_Y = 0.35   # the orbit's centre (0, TARGET_Y, 0), stages.mvcustom.scene.TARGET


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


def velocity(x0: torch.Tensor, noise: torch.Tensor, alpha_bar: torch.Tensor) -> torch.Tensor:
    """The v-prediction target v = √ᾱ ε − √(1 − ᾱ) x_0 (Salimans & Ho 2022)."""
    return alpha_bar.sqrt() * noise - (1 - alpha_bar).sqrt() * x0


def clean_estimate(out: torch.Tensor, x_t: torch.Tensor, alpha_bar: torch.Tensor, prediction: str) -> torch.Tensor:
    """x̂_0 from the denoiser's output: (x_t − √(1 − ᾱ) ε̂) / √ᾱ for ε-prediction, √ᾱ x_t − √(1 − ᾱ) v̂ for
    v-prediction (well conditioned at high noise, where ε-prediction divides by √ᾱ → 0)."""
    if prediction == "eps":
        return predicted_x0(x_t, out, alpha_bar)
    if prediction == "v":
        return alpha_bar.sqrt() * x_t - (1 - alpha_bar).sqrt() * out
    raise ValueError(f"unknown prediction {prediction!r} (eps or v)")


def pose_features(azimuth: torch.Tensor, elevation: torch.Tensor) -> torch.Tensor:
    """(…, 4) camera-pose code: sin and cos of azimuth and elevation (degrees in)."""
    az, el = torch.deg2rad(azimuth), torch.deg2rad(elevation)
    return torch.stack([az.sin(), az.cos(), el.sin(), el.cos()], dim=-1)


def camera_rays(azimuth: torch.Tensor, elevation: torch.Tensor, radius: float, focal: float, size: int) \
        -> torch.Tensor:
    """(…, 6, s, s) Plücker coordinates (d, o × d) of the rays through every pixel centre of orbit cameras.

    The camera frame and pixel rays are those of :func:`stages.mvcustom.scene.pixel_rays` (degrees in):
    centre o = (0, 0.35, 0) + radius (cos el sin az, sin el, cos el cos az), forward towards the orbit's
    centre, right = forward × y, up = right × forward; pixel (row i, column j) looks along
    forward + ((j + ½ − s/2) right − (i + ½ − s/2) up) / focal, normalised.
    """
    az, el = torch.deg2rad(azimuth.float()), torch.deg2rad(elevation.float())
    out = torch.stack([el.cos() * az.sin(), el.sin(), el.cos() * az.cos()], -1)    # (…, 3) unit, centre → camera
    centre = out * radius + torch.tensor([0.0, TARGET_Y, 0.0])
    forward = -out
    right = torch.stack([-forward[..., 2], torch.zeros_like(az), forward[..., 0]], -1)   # forward × (0, 1, 0)
    right = right / right.norm(dim=-1, keepdim=True)
    up = torch.linalg.cross(right, forward)
    off = torch.arange(size, dtype=torch.float32) + 0.5 - size / 2
    d = (forward[..., None, None, :] + (off[None, :, None] * right[..., None, None, :]
                                        - off[:, None, None] * up[..., None, None, :]) / focal)
    d = d / d.norm(dim=-1, keepdim=True)                                           # (…, s, s, 3)
    moment = torch.linalg.cross(centre[..., None, None, :].expand_as(d), d)
    return torch.cat([d, moment], -1).movedim(-1, -3)


@dataclass(frozen=True)
class Rig:
    """The cameras' geometry (orbit radius, focal length in pixels, image size) and the pose frame."""

    radius: float
    focal: float
    size: int
    relative: bool = False

    def condition(self, pose: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(pose code (…, v, 4), rays (…, v, 6, s, s)) of poses (…, v, 2) in degrees; with ``relative`` the
        azimuths are taken relative to view 0's (a rotation of the world about the vertical axis)."""
        az, el = pose[..., 0], pose[..., 1]
        if self.relative:
            az = az - az[..., :1]
        return pose_features(az, el), camera_rays(az, el, self.radius, self.focal, self.size)


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

    def forward(self, x: torch.Tensor, emb: torch.Tensor, pixel: torch.Tensor | None = None) -> torch.Tensor:
        """``pixel`` (b·v, c_out, h, w): a per-pixel code added beside the view's (the rays' embedding)."""
        h = self.c1(F.silu(self.n1(x))) + self.emb(emb)[:, :, None, None]
        if pixel is not None:
            h = h + pixel
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class CrossViewAttention(nn.Module):
    """Self-attention over the tokens of every view of a scene at once (views x pixels), pre-norm, residual."""

    def __init__(self, channels: int, heads: int, tokens_per_view: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels)
        self.attn = nn.MultiheadAttention(channels, heads, batch_first=True)
        self.position = nn.Parameter(torch.zeros(tokens_per_view, channels))

    def forward(self, x: torch.Tensor, n_views: int, extra: torch.Tensor | None = None) -> torch.Tensor:
        """``extra`` (b·v, c, h, w): a per-token code added to the tokens (the rays' embedding)."""
        bv, c, h, w = x.shape
        tokens = x.flatten(2).transpose(1, 2) + self.position          # (b·v, h·w, c)
        if extra is not None:
            tokens = tokens + extra.flatten(2).transpose(1, 2)
        tokens = tokens.reshape(bv // n_views, n_views * h * w, c)
        q = self.norm(tokens)
        out = tokens + self.attn(q, q, q, need_weights=False)[0]
        return out.reshape(bv, h * w, c).transpose(1, 2).reshape(bv, c, h, w)


class MultiViewDenoiser(nn.Module):
    """ε- (or v-) prediction for every view of (batch, views, 3, s, s), conditioned on pose, timestep and reference
    flag, and with ``rays`` on each pixel's camera ray (Plücker coordinates)."""

    def __init__(self, size: int, channels: int, heads: int, emb_dim: int = 64, rays: bool = False,
                 prediction: str = "eps", ray_blocks: bool = False) -> None:
        super().__init__()
        if prediction not in ("eps", "v"):
            raise ValueError(f"unknown prediction {prediction!r} (eps or v)")
        c = channels
        self.emb_dim, self.rays, self.prediction = emb_dim, rays, prediction
        self.cond = nn.Sequential(nn.Linear(4 + 1 + emb_dim, emb_dim), nn.SiLU(), nn.Linear(emb_dim, emb_dim))
        self.inp = nn.Conv2d(4 + (6 if rays else 0), c, 3, padding=1)
        self.ray_tokens = nn.Conv2d(6, 2 * c, 1) if rays else None
        if ray_blocks and not rays:
            raise ValueError("ray_blocks needs a denoiser conditioned on rays")
        # with ray_blocks, every residual block also gets the rays' embedding per pixel (full and half resolution)
        self.ray_full = nn.Conv2d(6, c, 1) if ray_blocks else None
        self.ray_half = nn.Conv2d(6, 2 * c, 1) if ray_blocks else None
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

    def forward(self, x: torch.Tensor, t: torch.Tensor, pose: torch.Tensor, is_ref: torch.Tensor,
                rays: torch.Tensor | None = None) -> torch.Tensor:
        """x (b, v, 3, s, s); t (b, v) in [0, 1]; pose (b, v, 4); is_ref (b, v); rays (b, v, 6, s, s), used (and
        needed) only by a denoiser built with ``rays`` -> ε̂ (b, v, 3, s, s)."""
        b, v = x.shape[:2]
        emb = self.cond(torch.cat([pose, is_ref[..., None].float(), timestep_features(t, self.emb_dim)], -1))
        emb = emb.reshape(b * v, -1)
        flag = is_ref.float().reshape(b * v, 1, 1, 1).expand(-1, 1, *x.shape[-2:])
        parts = [x.reshape(b * v, *x.shape[2:]), flag]
        extra = full = half = None
        if self.ray_tokens is not None:
            if rays is None:
                raise ValueError("this denoiser is conditioned on camera rays: pass rays (b, v, 6, s, s)")
            r = rays.reshape(b * v, *rays.shape[2:])
            parts.append(r)
            r_half = F.avg_pool2d(r, 2)
            extra = self.ray_tokens(r_half)
            if self.ray_full is not None:
                full, half = self.ray_full(r), self.ray_half(r_half)
        h0 = self.down1(self.inp(torch.cat(parts, 1)), emb, full)
        h = self.mid1(self.pool(h0), emb, half)
        h = self.mid2(self.attn(h, v, extra), emb, half)
        h = self.up(F.interpolate(h, scale_factor=2, mode="nearest"))
        h = self.up1(torch.cat([h, h0], 1), emb, full)
        return self.out(h).reshape(b, v, 3, *x.shape[-2:])


def swap_targets(is_ref: torch.Tensor) -> torch.Tensor:
    """(b, v) view indices that give every target view the next target's pose (cyclically, within its example;
    the references keep theirs); references must come first and each example needs >= 2 targets."""
    b, v = is_ref.shape
    k = is_ref.sum(1, keepdim=True)                                  # references per example: views 0..k-1
    n_t = v - k
    if bool((n_t < 2).any()):
        raise ValueError("a pose swap needs at least two target views per example")
    j = torch.arange(v)[None].expand(b, v)
    return torch.where(j < k, j, k + (j - k + 1) % n_t)


def pose_swap_hinge(loss_true: torch.Tensor, loss_swapped: torch.Tensor, margin: float) -> torch.Tensor:
    """Mean over examples of max(0, (1 + margin) L_true − L_swapped): the denoiser given the targets' true poses
    must fit them by a relative margin better than given each other's poses (an auxiliary pose-following loss)."""
    return F.relu((1 + margin) * loss_true - loss_swapped).mean()


def denoising_loss(model: MultiViewDenoiser, x0: torch.Tensor, pose: torch.Tensor, is_ref: torch.Tensor,
                   alpha_bar: torch.Tensor, gen: torch.Generator | None = None,
                   rays: torch.Tensor | None = None, swap_weight: float = 0.0, swap_margin: float = 0.0) \
        -> torch.Tensor:
    """E‖ε − ε̂(x_t, t)‖² over the target views (DDPM's simple loss), or E‖v − v̂‖² for a v-prediction denoiser;
    reference views stay clean with t = 0. With ``swap_weight`` > 0, plus that weight times the pose-swap hinge
    (:func:`pose_swap_hinge`) on the same noised views given their targets' poses cycled (references first)."""
    b, v = x0.shape[:2]
    n_steps = len(alpha_bar)
    step = torch.randint(0, n_steps, (b, 1), generator=gen).expand(b, v)
    noise = torch.randn(x0.shape, generator=gen)
    ab = alpha_bar[step][..., None, None, None]
    target = ~is_ref
    x_t = torch.where(target[..., None, None, None], q_sample(x0, ab, noise), x0)
    t = torch.where(target, (step + 1).float() / n_steps, torch.zeros_like(step, dtype=torch.float32))
    out = model(x_t, t, pose, is_ref, rays)
    want = noise if model.prediction == "eps" else velocity(x0, noise, ab)
    loss = ((out - want) ** 2)[target].mean()
    if swap_weight <= 0:
        return loss
    sq = ((out - want) ** 2).mean((2, 3, 4))                          # (b, v)
    idx = swap_targets(is_ref)
    pose_s = torch.take_along_dim(pose, idx[..., None], dim=1)
    rays_s = None if rays is None else torch.take_along_dim(rays, idx[..., None, None, None], dim=1)
    sq_s = ((model(x_t, t, pose_s, is_ref, rays_s) - want) ** 2).mean((2, 3, 4))
    per_true = (sq * target).sum(1) / target.sum(1)
    per_swap = (sq_s * target).sum(1) / target.sum(1)
    return loss + swap_weight * pose_swap_hinge(per_true, per_swap, swap_margin)
