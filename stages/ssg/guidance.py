"""Scaled Spatial Guidance (SSG) and Discrete Spatial Enhancement (DSE) on a next-scale sampler.

At scale k ≥ 2 the sampler has the (guided-by-label) log-probabilities ℓ_k (V × s_k × s_k) and those of the
previous scale ℓ_{k−1} (V × s_{k−1} × s_{k−1}). A prior ℓ_prior is ℓ_{k−1} brought to s_k × s_k, and SSG
samples from ℓ_k + β (ℓ_k − ℓ_prior): the semantic residual, what scale k adds beyond the coarser prediction,
is amplified (paper, SSG's logit rule). DSE builds the prior in the frequency domain: the 2-D DCT of the
interpolated map keeps its high frequencies, and its low-frequency block is replaced by the coarse map's own
DCT coefficients (paper, DSE). Naive priors: the bilinear or nearest-neighbour interpolation alone. With a
prior constant over the vocabulary the rule is a temperature 1/(1 + β), which the temperature baseline covers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.nn import functional as F

from stages.ssg.multiscale_vq import code_map, downsample, upsample
from stages.ssg.var import NextScaleTransformer


def dct_matrix(n: int) -> torch.Tensor:
    """The orthonormal DCT-II matrix C (n × n): X = C x, x = Cᵀ X."""
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None]
    c = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    c[0] /= math.sqrt(2.0)
    return c.float()


def dct2(x: torch.Tensor) -> torch.Tensor:
    """Orthonormal 2-D DCT-II over the last two axes of a square map (..., n, n)."""
    c = dct_matrix(x.shape[-1]).to(x.dtype)
    return c @ x @ c.T


def idct2(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`dct2` (the orthonormal DCT-III)."""
    c = dct_matrix(x.shape[-1]).to(x.dtype)
    return c.T @ x @ c


def dse_prior(coarse: torch.Tensor, side: int) -> torch.Tensor:
    """DSE (paper, Discrete Spatial Enhancement): coarse (..., m, m) → (..., side, side) with the coarse map's DCT
    coefficients (scaled by side/m, the same cosines sampled on the finer grid) as the low-frequency m × m block and
    the bilinear interpolation's DCT coefficients elsewhere."""
    m = coarse.shape[-1]
    shape = coarse.shape
    flat = coarse.reshape(-1, 1, m, m)
    spectrum = dct2(upsample(flat, side))
    spectrum[..., :m, :m] = dct2(flat) * (side / m)
    return idct2(spectrum).reshape(*shape[:-2], side, side)


def bilinear_prior(coarse: torch.Tensor, side: int) -> torch.Tensor:
    """The naive bilinear prior: coarse (..., m, m) interpolated to side × side."""
    shape = coarse.shape
    return upsample(coarse.reshape(-1, 1, *shape[-2:]), side).reshape(*shape[:-2], side, side)


def nearest_prior(coarse: torch.Tensor, side: int) -> torch.Tensor:
    """The naive nearest-neighbour prior: coarse (..., m, m) replicated to side × side."""
    shape = coarse.shape
    return F.interpolate(coarse.reshape(-1, 1, *shape[-2:]), size=(side, side),
                         mode="nearest").reshape(*shape[:-2], side, side)


PRIORS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "dse": dse_prior, "bilinear": bilinear_prior, "nearest": nearest_prior}


def ssg_logits(logits: torch.Tensor, prior: torch.Tensor, beta: float) -> torch.Tensor:
    """SSG's rule (paper, eq. of the guided logits): ℓ + β (ℓ − ℓ_prior)."""
    return logits + beta * (logits - prior)


def cfg_logits(cond: torch.Tensor, uncond: torch.Tensor, scale: float) -> torch.Tensor:
    """Classifier-free guidance: ℓ_u + w (ℓ_c − ℓ_u) (w = 1: the conditional model alone)."""
    return uncond + scale * (cond - uncond)


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Logits with everything below the k-th largest (last axis) set to −inf."""
    if k >= logits.shape[-1]:
        return logits
    kth = logits.topk(k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


@dataclass(frozen=True)
class Arm:
    """One sampling setting: the prior of SSG (None: no SSG), its β, and a softmax temperature."""

    name: str
    prior: str | None = None
    beta: float = 0.0
    temperature: float = 1.0


@dataclass
class Cost:
    """Counted sampling work: transformer forward passes (batch rows × calls) and calls."""

    forward_rows: int = 0
    calls: int = 0
    per_scale_rows: list[int] = field(default_factory=list)


@torch.inference_mode()
def sample(model: NextScaleTransformer, codebook: torch.Tensor, labels: torch.Tensor, arm: Arm, cfg_scale: float,
           top_k: int, generator: torch.Generator, cost: Cost | None = None) -> list[torch.Tensor]:
    """Code grids of every scale for the given labels: next-scale sampling with guidance, SSG and top-k.

    Each scale runs the transformer on its own positions only, with the keys and values of the coarser scales cached
    (block-causal, so this equals a run on the whole prefix); conditional and unconditional rows in one batch. The
    prior of scale k is built from scale k−1's guided log-probabilities before SSG, so the two arms see the same
    model prediction and differ only in the rule.
    """
    scales, grid = model.scales, model.scales[-1]
    b = len(labels)
    both = torch.cat([labels, torch.full_like(labels, model.null_class)])
    f_hat = torch.zeros(b, codebook.shape[1], grid, grid)
    step_in = torch.zeros(b, 0, codebook.shape[1])
    cache: list[tuple[torch.Tensor, torch.Tensor]] = []
    prev: torch.Tensor | None = None
    codes: list[torch.Tensor] = []
    for k, side in enumerate(scales):
        if k > 0:
            step_in = downsample(f_hat, side).flatten(2).transpose(1, 2)
        logits = model.forward_cached(both, step_in.repeat(2, 1, 1), cache)
        if cost is not None:
            cost.forward_rows += 2 * b
            cost.calls += 1
            cost.per_scale_rows.append(2 * b)
        logp = F.log_softmax(cfg_logits(logits[:b], logits[b:], cfg_scale), dim=-1)  # (b, s², V)
        maps = logp.transpose(1, 2).reshape(b, -1, side, side)                   # (b, V, s, s)
        guided = maps
        if arm.prior is not None and prev is not None and arm.beta != 0:
            guided = ssg_logits(maps, PRIORS[arm.prior](prev, side), arm.beta)
        prev = maps
        flat = guided.reshape(b, -1, side * side).transpose(1, 2) / arm.temperature
        probs = F.softmax(top_k_filter(flat, top_k), dim=-1)
        r = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=generator).reshape(b, side, side)
        codes.append(r)
        f_hat = f_hat + upsample(code_map(codebook, r), grid)
    return codes


def scale_high_frequency_share(codebook: torch.Tensor, codes: list[torch.Tensor]) -> list[float]:
    """Per scale k ≥ 2: the mean share of the code map's DCT energy outside the (s_{k−1})² block, over images."""
    shares = []
    for k in range(1, len(codes)):
        energy = dct2(code_map(codebook, codes[k])).pow(2).sum(1)  # (B, s, s), summed over code dimensions
        low = codes[k - 1].shape[-1]
        total = energy.sum((-2, -1))
        shares.append(float(((total - energy[:, :low, :low].sum((-2, -1))) / total.clamp_min(1e-12)).mean()))
    return shares
