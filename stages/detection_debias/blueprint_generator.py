"""The learned layout-to-image generator: a small U-Net conditioned on the visual blueprint of a layout (each box
filled with its class's colour, ``scenes.blueprint``) and an appearance hint (each object's colour inside its box,
the background colour outside the boxes), trained here with an L1 reconstruction loss on the training scenes only.

The hint stands in for the paper's text prompt (which names an object's attributes); it carries colours only, no
shape, fill pattern or background texture: the generator has to draw those from the blueprint itself.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from stages.detection_debias.scenes import blueprint, shape_mask

Layout = list[tuple[int, tuple[int, int, int, int]]]
# blueprint (3) + position inside the box (2) + object colour in its box (3) + background colour everywhere (3)
N_INPUT = 11


def appearance_of(image: np.ndarray, layout: Layout) -> tuple[list[np.ndarray], np.ndarray]:
    """The colours a prompt would name, read off an image (3, n, n) uint8: per object the median colour of its
    shape's pixels, and the median colour of the pixels outside every box."""
    n = image.shape[-1]
    x = image.reshape(3, -1).astype(np.float32) / 255.0
    covered = np.zeros((n, n), bool)
    colours = []
    for cls, box in layout:
        m = shape_mask(cls, box, n).reshape(-1)
        colours.append(np.median(x[:, m], axis=1) if m.any() else np.zeros(3, np.float32))
        covered[box[1]:box[3], box[0]:box[2]] = True
    free = ~covered.reshape(-1)
    background = np.median(x[:, free], axis=1) if free.any() else np.zeros(3, np.float32)
    return colours, background.astype(np.float32)


def generator_input(layout: Layout, colours: list[np.ndarray], background: np.ndarray, n: int) -> np.ndarray:
    """The generator's condition (11, n, n) float32: the blueprint (Sec. 3.2, "precise visual blueprint"), each
    pixel's relative position (u, v) in [0, 1] inside its box (0 outside), each object's colour inside its box, and
    the background colour everywhere (the colours a prompt would name)."""
    hint = np.broadcast_to(np.asarray(background, np.float32)[:, None, None], (3, n, n)).copy()
    box_colour = np.zeros((3, n, n), np.float32)
    uv = np.zeros((2, n, n), np.float32)
    for (_, (x0, y0, x1, y1)), c in zip(layout, colours, strict=True):
        box_colour[:, y0:y1, x0:x1] = np.asarray(c, np.float32)[:, None, None]
        uv[0, y0:y1, x0:x1] = ((np.arange(x0, x1) + 0.5 - x0) / (x1 - x0))[None, :]
        uv[1, y0:y1, x0:x1] = ((np.arange(y0, y1) + 0.5 - y0) / (y1 - y0))[:, None]
    return np.concatenate([blueprint(layout, n), uv, box_colour, hint])


def conditions(layouts: list, images: torch.Tensor) -> torch.Tensor:
    """The generator's condition of each (layout, image): its blueprint and the colours read off the image."""
    n = images.shape[-1]
    if not layouts:
        return torch.zeros((0, N_INPUT, n, n))
    conds = []
    for layout, image in zip(layouts, images.numpy(), strict=True):
        colours, background = appearance_of(image, layout)
        conds.append(generator_input(layout, colours, background, n))
    return torch.from_numpy(np.stack(conds))


def mean_l1(generated: torch.Tensor, images: torch.Tensor) -> float:
    """Mean absolute pixel error in [0, 1] units between two uint8 image stacks."""
    return float((generated.float() - images.float()).abs().mean() / 255.0)


def _conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, 1, 1), nn.GroupNorm(1, c_out), nn.SiLU(),
                         nn.Conv2d(c_out, c_out, 3, 1, 1), nn.GroupNorm(1, c_out), nn.SiLU())


class BlueprintGenerator(nn.Module):
    """A three-level U-Net (full, 1/2 and 1/4 resolution, skip connections) beside a per-pixel branch on the
    blueprint and the in-box position, from the condition to an RGB image in
    [0, 1]: it predicts an object mask (where the object colour replaces the background colour) and a residual
    (shading, fill pattern, texture); the shapes, fills and textures are what it learns."""

    def __init__(self, width: int) -> None:
        super().__init__()
        w = width
        self.enc1, self.enc2, self.enc3 = _conv(N_INPUT, w), _conv(w, 2 * w), _conv(2 * w, 4 * w)
        self.dec2, self.dec1 = _conv(4 * w + 2 * w, 2 * w), _conv(2 * w + w, w)
        # a per-pixel branch on the blueprint and the in-box position (where in its box a pixel lies)
        self.pixel = nn.Sequential(nn.Conv2d(5, 8 * w, 1), nn.SiLU(), nn.Conv2d(8 * w, 8 * w, 1), nn.SiLU(),
                                   nn.Conv2d(8 * w, 8 * w, 1), nn.SiLU())
        self.out = nn.Conv2d(w + 8 * w, 4, 1)   # mask logit + RGB residual

    def forward(self, cond: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(cond)
        e2 = self.enc2(F.avg_pool2d(e1, 2))
        e3 = self.enc3(F.avg_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([F.interpolate(e3, scale_factor=2, mode="nearest"), e2], 1))
        d1 = self.dec1(torch.cat([F.interpolate(d2, scale_factor=2, mode="nearest"), e1], 1))
        head = self.out(torch.cat([d1, self.pixel(cond[:, :5])], 1))
        alpha = torch.sigmoid(head[:, :1])
        return (alpha * cond[:, 5:8] + (1 - alpha) * cond[:, 8:11] + 0.5 * torch.tanh(head[:, 1:])).clamp(0, 1)


def reconstruction_loss(generated: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error between generated and real images in [0, 1] (the generator's training loss)."""
    return (generated - target).abs().mean()


def class_balanced_weights(classes_per_scene: list[list[int]], n_classes: int) -> np.ndarray:
    """A sampling weight per training scene: the largest inverse class frequency among its objects (scenes holding
    a rare class are drawn more often), normalised to sum to 1."""
    counts = np.bincount([c for cs in classes_per_scene for c in cs], minlength=n_classes).astype(float)
    inv = np.where(counts > 0, counts.sum() / np.maximum(counts, 1), 0.0)
    w = np.array([max((inv[c] for c in cs), default=0.0) for cs in classes_per_scene])
    if w.sum() <= 0:
        return np.full(len(classes_per_scene), 1.0 / max(1, len(classes_per_scene)))
    return w / w.sum()


def train_generator(cond: torch.Tensor, images: torch.Tensor, width: int, lr: float, batch_size: int, steps: int,
                    seed: int, log_every: int = 20,
                    weights: np.ndarray | None = None) -> tuple[BlueprintGenerator, list[float]]:
    """Train a fresh generator for ``steps`` Adam steps (cosine decay) on batches of (condition, uint8 image) pairs
    drawn with replacement by ``weights`` (uniform if None); returns it in eval mode with its mean L1 per logged
    interval."""
    torch.manual_seed(seed % 2**63)
    model = BlueprintGenerator(width)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, steps))
    gen = torch.Generator().manual_seed(seed % 2**63)
    p = torch.full((len(cond),), 1.0 / len(cond)) if weights is None else torch.as_tensor(weights, dtype=torch.float64)
    losses, running = [], []
    model.train()
    for _ in range(steps):
        idx = torch.multinomial(p, batch_size, replacement=True, generator=gen)
        loss = reconstruction_loss(model(cond[idx]), images[idx].float() / 255.0)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        running.append(float(loss.detach()))
        if len(running) == log_every:
            losses.append(float(np.mean(running)))
            running = []
    if running:
        losses.append(float(np.mean(running)))
    return model.eval(), losses


@torch.no_grad()
def generate(model: BlueprintGenerator, cond: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Images (n, 3, size, size) uint8 generated from conditions (n, 9, size, size)."""
    model.eval()
    if len(cond) == 0:
        return torch.zeros((0, 3, *cond.shape[-2:]), dtype=torch.uint8)
    out = torch.cat([model(cond[b:b + batch_size]) for b in range(0, len(cond), batch_size)])
    return (out * 255).round().clamp(0, 255).to(torch.uint8)
