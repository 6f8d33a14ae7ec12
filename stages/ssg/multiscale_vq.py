"""The multi-scale residual VQ tokenizer of a VAR model (Tian et al., 2024, "Visual Autoregressive Modeling").

An encoder maps an image to a feature map f (D × h × w). Scale by scale (side s_1 = 1 < s_2 < ... < s_K = h),
the residual still to explain is area-downsampled to s_k × s_k and each vector replaced by its nearest code
of one shared codebook; the code map, upsampled back to h × w, is added to the reconstruction f̂ and removed
from the residual. f = Σ_k up(e[r_k]) + the final residual; the decoder reads f̂.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from stages.core.io import load_safetensors, read_json


def nearest_code(z: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    """k = argmin_j ‖z − e_j‖² for vectors z (..., D) against the codebook rows; shape (...)."""
    flat = z.reshape(-1, z.shape[-1])
    dist = flat.pow(2).sum(-1, keepdim=True) - 2 * flat @ codebook.T + codebook.pow(2).sum(-1)[None]
    return dist.argmin(-1).reshape(z.shape[:-1])


def downsample(f: torch.Tensor, side: int) -> torch.Tensor:
    """Area-average a map (B, D, h, w) to side × side (identity when already that size)."""
    return f if f.shape[-1] == side else F.interpolate(f, size=(side, side), mode="area")


def upsample(f: torch.Tensor, side: int) -> torch.Tensor:
    """Bilinear upsampling of a map (B, D, s, s) to side × side (identity when already that size)."""
    return f if f.shape[-1] == side else F.interpolate(f, size=(side, side), mode="bilinear", align_corners=False)


def code_map(codebook: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """The code vectors of a code grid (B, s, s) as a map (B, D, s, s)."""
    return codebook[codes].permute(0, 3, 1, 2)


def residual_quantize(f: torch.Tensor, codebook: torch.Tensor,
                      scales: list[int]) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    """(codes per scale [(B, s_k, s_k)], f̂ = Σ_k up(e[r_k]), final residual f − f̂): VAR's multi-scale quantisation."""
    grid = f.shape[-1]
    rest, f_hat, codes = f, torch.zeros_like(f), []
    for side in scales:
        r = nearest_code(downsample(rest, side).permute(0, 2, 3, 1), codebook)
        z = upsample(code_map(codebook, r), grid)
        codes.append(r)
        f_hat = f_hat + z
        rest = rest - z
    return codes, f_hat, rest


def reconstruct(codebook: torch.Tensor, codes: list[torch.Tensor], grid: int) -> torch.Tensor:
    """f̂ = Σ_k up(e[r_k]) at grid × grid from the code grids of every scale."""
    return sum(upsample(code_map(codebook, r), grid) for r in codes)


def next_scale_inputs(codebook: torch.Tensor, codes: list[torch.Tensor], scales: list[int],
                      grid: int) -> torch.Tensor:
    """Teacher-forcing inputs (B, Σ_{k≥2} s_k², D): for scale k, f̂ of scales < k area-downsampled to s_k × s_k."""
    f_hat = torch.zeros(codes[0].shape[0], codebook.shape[1], grid, grid)
    parts = []
    for k in range(1, len(scales)):
        f_hat = f_hat + upsample(code_map(codebook, codes[k - 1]), grid)
        parts.append(downsample(f_hat, scales[k]).flatten(2).transpose(1, 2))
    return torch.cat(parts, dim=1)


def flatten_codes(codes: list[torch.Tensor]) -> torch.Tensor:
    """Code grids of every scale as one token sequence (B, Σ s_k²), coarse scale first, row-major."""
    return torch.cat([c.reshape(len(c), -1) for c in codes], dim=1)


def split_codes(tokens: torch.Tensor, scales: list[int]) -> list[torch.Tensor]:
    """Inverse of :func:`flatten_codes`: a sequence (B, Σ s_k²) back to grids [(B, s_k, s_k)]."""
    out, start = [], 0
    for s in scales:
        out.append(tokens[:, start:start + s * s].reshape(-1, s, s))
        start += s * s
    return out


class MultiScaleVQ(nn.Module):
    """Conv encoder (two stride-2 convs) → multi-scale residual quantiser (shared codebook) → conv decoder."""

    def __init__(self, codebook_size: int, code_dim: int, channels: int, scales: list[int]) -> None:
        super().__init__()
        c = channels
        self.scales = list(scales)
        self.encoder = nn.Sequential(
            nn.Conv2d(1, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, 2 * c, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(2 * c, 2 * c, 3, 1, 1), nn.ReLU(), nn.Conv2d(2 * c, code_dim, 1))
        self.decoder = nn.Sequential(
            nn.Conv2d(code_dim, 2 * c, 3, 1, 1), nn.ReLU(), nn.Conv2d(2 * c, 2 * c, 3, 1, 1), nn.ReLU(),
            nn.ConvTranspose2d(2 * c, c, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(c, 1, 4, 2, 1))
        self.codebook = nn.Embedding(codebook_size, code_dim)
        nn.init.uniform_(self.codebook.weight, -1.0 / codebook_size, 1.0 / codebook_size)

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """f (B, D, h, w) for images (B, H, W) in [0, 1]."""
        return self.encoder(images[:, None] * 2 - 1)

    def decode(self, f_hat: torch.Tensor) -> torch.Tensor:
        """Images (B, H, W) in [0, 1] from a latent map (B, D, h, w)."""
        return torch.sigmoid(self.decoder(f_hat))[:, 0]

    def decode_codes(self, codes: list[torch.Tensor]) -> torch.Tensor:
        """Images from the code grids of every scale."""
        return self.decode(reconstruct(self.codebook.weight, codes, self.scales[-1]))

    def forward(self, images: torch.Tensor, beta: float) -> dict[str, Any]:
        """Reconstruction through f̂ with the straight-through estimator, and the VQ-VAE loss terms."""
        f = self.encode(images)
        codes, f_hat, _ = residual_quantize(f, self.codebook.weight, self.scales)
        recon = self.decode(f + (f_hat - f).detach())
        return {"codes": codes, "f": f, "reconstruction": F.mse_loss(recon, images),
                "codebook": F.mse_loss(f_hat, f.detach()), "commitment": beta * F.mse_loss(f, f_hat.detach())}


def load_vq(folder: Path) -> tuple[MultiScaleVQ, dict[str, Any]]:
    """The trained tokenizer (``vq.safetensors``, ``manifest.json``), eval mode, and its manifest."""
    m = read_json(Path(folder) / "manifest.json")
    model = MultiScaleVQ(m["codebook_size"], m["code_dim"], m["channels"], m["scales"])
    model.load_state_dict(load_safetensors(Path(folder) / "vq.safetensors"))
    return model.eval(), m


@torch.inference_mode()
def tokenize(model: MultiScaleVQ, images: torch.Tensor, batch: int = 500) -> tuple[torch.Tensor, torch.Tensor]:
    """(token sequences (n, Σ s_k²), reconstructions (n, H, W)) in batches."""
    tokens, recon = [], []
    for i in range(0, len(images), batch):
        codes, f_hat, _ = residual_quantize(model.encode(images[i:i + batch]), model.codebook.weight, model.scales)
        tokens.append(flatten_codes(codes))
        recon.append(model.decode(f_hat))
    return torch.cat(tokens), torch.cat(recon)
