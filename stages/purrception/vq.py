"""The VQ tokenizer (a small VQ-VAE): encoder, codebook quantiser, decoder, and its losses.

van den Oord et al. (2017), "Neural Discrete Representation Learning": z_e = E(x),
k = argmin_j ‖z_e − e_j‖, z_q = e_k, x̂ = D(z_q); loss = ‖x − x̂‖² + ‖sg[z_e] − e‖² + β‖z_e − sg[e]‖²,
with the straight-through gradient. The latent grid is the image downsampled 4×.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from stages.core.io import load_safetensors, read_json

DOWNSAMPLE = 4


def nearest_code(z: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    """k = argmin_j ‖z − e_j‖² over the codebook rows, for vectors z (..., D); shape (...)."""
    flat = z.reshape(-1, z.shape[-1])
    dist = flat.pow(2).sum(-1, keepdim=True) - 2 * flat @ codebook.T + codebook.pow(2).sum(-1)[None]
    return dist.argmin(-1).reshape(z.shape[:-1])


def vq_losses(z_e: torch.Tensor, z_q: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(codebook loss ‖sg[z_e] − e‖², commitment loss β‖z_e − sg[e]‖²) of the VQ-VAE objective."""
    return F.mse_loss(z_q, z_e.detach()), beta * F.mse_loss(z_e, z_q.detach())


class VQVAE(nn.Module):
    """Conv encoder (two stride-2 convs) → nearest-code quantiser → transposed-conv decoder."""

    def __init__(self, codebook_size: int, code_dim: int, channels: int) -> None:
        super().__init__()
        c = channels
        self.encoder = nn.Sequential(
            nn.Conv2d(1, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, 2 * c, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(2 * c, 2 * c, 3, 1, 1), nn.ReLU(), nn.Conv2d(2 * c, code_dim, 1))
        self.decoder = nn.Sequential(
            nn.Conv2d(code_dim, 2 * c, 3, 1, 1), nn.ReLU(), nn.Conv2d(2 * c, 2 * c, 3, 1, 1), nn.ReLU(),
            nn.ConvTranspose2d(2 * c, c, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(c, 1, 4, 2, 1))
        self.codebook = nn.Embedding(codebook_size, code_dim)
        nn.init.uniform_(self.codebook.weight, -1.0 / codebook_size, 1.0 / codebook_size)

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """z_e, channels last: (B, h, w, D) for images (B, H, W) in [0, 1]."""
        return self.encoder(images[:, None] * 2 - 1).permute(0, 2, 3, 1)

    def quantize(self, z_e: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(codes (B, h, w), z_q (B, h, w, D)): each latent vector replaced by its nearest code."""
        codes = nearest_code(z_e, self.codebook.weight)
        return codes, self.codebook(codes)

    def decode(self, z_q: torch.Tensor) -> torch.Tensor:
        """Images (B, H, W) in [0, 1] from quantised latents (B, h, w, D)."""
        return torch.sigmoid(self.decoder(z_q.permute(0, 3, 1, 2)))[:, 0]

    def decode_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """Images from code indices (B, h, w)."""
        return self.decode(self.codebook(codes))

    def forward(self, images: torch.Tensor, beta: float) -> dict[str, torch.Tensor]:
        """Reconstruction with the straight-through estimator, and the three loss terms."""
        z_e = self.encode(images)
        codes, z_q = self.quantize(z_e)
        codebook_loss, commitment = vq_losses(z_e, z_q, beta)
        recon = self.decode(z_e + (z_q - z_e).detach())
        return {"recon": recon, "codes": codes, "z_e": z_e, "reconstruction": F.mse_loss(recon, images),
                "codebook": codebook_loss, "commitment": commitment}


def codebook_perplexity(codes: torch.Tensor, codebook_size: int) -> float:
    """exp(entropy) of the code usage histogram: the effective number of codes used."""
    p = torch.bincount(codes.reshape(-1), minlength=codebook_size).double()
    p = p / p.sum()
    return float(torch.exp(-(p[p > 0] * p[p > 0].log()).sum()))


def load_tokenizer_model(folder: Path) -> tuple[VQVAE, dict[str, Any]]:
    """The trained VQ-VAE and its manifest."""
    manifest = read_json(Path(folder) / "manifest.json")
    model = VQVAE(manifest["codebook_size"], manifest["code_dim"], manifest["channels"])
    model.load_state_dict(load_safetensors(Path(folder) / "vqvae.safetensors"))
    return model.eval(), manifest


@torch.inference_mode()
def tokenize(model: VQVAE, images: torch.Tensor, batch: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes (n, h, w), reconstructions (n, H, W)) in batches."""
    codes, recon = [], []
    for i in range(0, len(images), batch):
        c, z_q = model.quantize(model.encode(images[i:i + batch]))
        codes.append(c)
        recon.append(model.decode(z_q))
    return torch.cat(codes), torch.cat(recon)
