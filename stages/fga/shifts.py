"""Distribution shifts and augmented views of Fashion-MNIST images.

Corruptions act on the 28 x 28 grey image in [0, 1] (kinds and severities in the spirit of
ImageNet-C, Hendrycks & Dietterich 2019); the image is then upscaled to the encoder's size and
turned to RGB (as biocap feeds EfficientNet-Lite0), and each test image gets ``n_views`` views:
view 0 is the image itself, the others random resized crops with random horizontal flips (TPT's
augmentation, Shu et al. 2022, §3.2) and small random shifts; the crop range is chosen on validation shifts.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

BLUR_SIGMA = (0.8, 1.3, 1.8)
NOISE_STD = (0.15, 0.3, 0.45)
INVERT_MIX = (0.75, 0.9, 1.0)
PIXELATE_SIZE = (14, 10, 7)
OCCLUDE_SIDE = (8, 12, 16)
FOG_MIX = (0.3, 0.5, 0.7)


def _gaussian_kernel(sigma: float) -> torch.Tensor:
    radius = max(1, round(3 * sigma))
    x = torch.arange(-radius, radius + 1, dtype=torch.float32)
    k = torch.exp(-x ** 2 / (2 * sigma ** 2))
    return k / k.sum()


def blur(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """Separable Gaussian blur of (n, 1, H, W) images."""
    k = _gaussian_kernel(BLUR_SIGMA[severity - 1])
    pad = len(k) // 2
    y = F.conv2d(F.pad(x, (pad, pad, 0, 0), mode="replicate"), k.view(1, 1, 1, -1))
    return F.conv2d(F.pad(y, (0, 0, pad, pad), mode="replicate"), k.view(1, 1, -1, 1))


def noise(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """Additive Gaussian pixel noise, clipped to [0, 1]."""
    return (x + NOISE_STD[severity - 1] * torch.randn(x.shape, generator=gen)).clamp(0, 1)


def invert(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """Contrast inversion: a mix of the image and its negative (1 = fully inverted)."""
    a = INVERT_MIX[severity - 1]
    return (1 - a) * x + a * (1 - x)


def pixelate(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """Down-sampling to a coarse grid and nearest-neighbour up-sampling (validation shift)."""
    small = F.interpolate(x, size=PIXELATE_SIZE[severity - 1], mode="area")
    return F.interpolate(small, size=x.shape[-2:], mode="nearest")


def occlude(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """A grey square at a random place in each image (validation shift)."""
    side, h = OCCLUDE_SIDE[severity - 1], x.shape[-1]
    y = x.clone()
    corners = torch.randint(0, h - side + 1, (len(x), 2), generator=gen)
    for i, (r, c) in enumerate(corners.tolist()):
        y[i, :, r:r + side, c:c + side] = 0.5
    return y


def fog(x: torch.Tensor, severity: int, gen: torch.Generator) -> torch.Tensor:
    """A smooth random haze mixed into the image (validation shift)."""
    field = F.interpolate(torch.rand((len(x), 1, 4, 4), generator=gen), size=x.shape[-2:], mode="bilinear",
                          align_corners=False)
    f = FOG_MIX[severity - 1]
    return (1 - f) * x + f * field


CORRUPTIONS = {"blur": blur, "noise": noise, "invert": invert, "pixelate": pixelate, "occlude": occlude, "fog": fog}


def corrupt(images: np.ndarray, kind: str, severity: int, gen: torch.Generator) -> torch.Tensor:
    """uint8 (n, 28, 28) grey images -> corrupted float (n, 1, 28, 28) in [0, 1] ('clean' leaves them)."""
    x = torch.as_tensor(images, dtype=torch.float32).unsqueeze(1) / 255.0
    return x if kind == "clean" else CORRUPTIONS[kind](x, severity, gen).clamp(0, 1)


def to_rgb(x: torch.Tensor, size: int) -> np.ndarray:
    """Float grey (n, 1, h, w) in [0, 1] -> uint8 RGB (n, size, size, 3), bilinear upscaling."""
    up = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False).clamp(0, 1)
    return (up * 255).round().to(torch.uint8).repeat(1, 3, 1, 1).permute(0, 2, 3, 1).numpy()


def augmented_views(x: torch.Tensor, n_views: int, scale: tuple[float, float], gen: torch.Generator,
                    max_shift: int = 0, flip: bool = True) -> torch.Tensor:
    """(n, 1, h, w) -> (n, n_views, 1, h, w): view 0 the image, the rest random resized crops of area fraction in
    ``scale``, shifted by up to ``max_shift`` pixels (edges replicated) and flipped at random if ``flip``."""
    n, _, h, w = x.shape
    views = [x]
    for _ in range(n_views - 1):
        area = scale[0] + (scale[1] - scale[0]) * torch.rand(n, generator=gen)
        side = (area.sqrt() * h).round().clamp(4, h).long()
        out = torch.empty_like(x)
        for i in range(n):
            s = int(side[i])
            r = int(torch.randint(0, h - s + 1, (1,), generator=gen))
            c = int(torch.randint(0, w - s + 1, (1,), generator=gen))
            crop = F.interpolate(x[i:i + 1, :, r:r + s, c:c + s], size=(h, w), mode="bilinear", align_corners=False)
            if max_shift:
                dr, dc = (int(v) for v in torch.randint(-max_shift, max_shift + 1, (2,), generator=gen))
                crop = F.pad(crop, (max_shift,) * 4, mode="replicate")[
                    :, :, max_shift + dr:max_shift + dr + h, max_shift + dc:max_shift + dc + w]
            flipped = flip and bool(torch.rand(1, generator=gen) < 0.5)
            out[i] = crop[0].flip(-1) if flipped else crop[0]
        views.append(out)
    return torch.stack(views, dim=1)
