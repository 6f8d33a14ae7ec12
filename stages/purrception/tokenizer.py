"""Step ``tokenizer``: train the VQ-VAE once, tokenise every image, report reconstruction quality."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.trainer import build_trainer
from stages.purrception.config import PAPER, TokenizerConfig, load_tokenizer
from stages.purrception.expectations import codes_suite
from stages.purrception.io import read_images
from stages.purrception.vq import DOWNSAMPLE, VQVAE, codebook_perplexity, tokenize


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    tokenizer: Path = out("folder: vqvae.safetensors and manifest.json")
    codes: Path = out("code grid of every image, long format (Parquet)")
    tokenizer_metrics: Path = out("reconstruction quality and codebook usage (JSON)")


class VQModule(lightning.LightningModule):
    """VQ-VAE training; unused codes are restarted at random encoder outputs every ``restart_every`` steps."""

    def __init__(self, model: VQVAE, cfg: TokenizerConfig) -> None:
        super().__init__()
        self.model, self.cfg = model, cfg
        self.usage = torch.zeros(cfg.codebook_size)
        self.restarts = 0

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        out_ = self.model(batch[0], self.cfg.beta)
        self.usage += torch.bincount(out_["codes"].reshape(-1), minlength=self.cfg.codebook_size).float()
        if (self.global_step + 1) % self.cfg.restart_every == 0:
            self._restart_dead(out_["z_e"].detach().reshape(-1, out_["z_e"].shape[-1]))
        return out_["reconstruction"] + out_["codebook"] + out_["commitment"]

    @torch.no_grad()
    def _restart_dead(self, z_e: torch.Tensor) -> None:
        dead = (self.usage == 0).nonzero().flatten()
        if len(dead):
            pick = torch.randint(0, len(z_e), (len(dead),))
            self.model.codebook.weight[dead] = z_e[pick]
            self.restarts += len(dead)
        self.usage.zero_()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.model.parameters(), lr=self.cfg.lr)


def codes_table(codes: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Long format (split, image, pos, code) of the flattened code grids."""
    frames = []
    for split, c in codes.items():
        flat = c.reshape(len(c), -1).numpy()
        n, seq_len = flat.shape
        frames.append(pd.DataFrame({"split": split, "image": np.repeat(np.arange(n), seq_len),
                                    "pos": np.tile(np.arange(seq_len), n), "code": flat.ravel()}))
    return pd.concat(frames, ignore_index=True)


def psnr(mse: float) -> float:
    """Peak signal-to-noise ratio (dB) of images in [0, 1]."""
    return float(10 * np.log10(1.0 / max(mse, 1e-12)))


def run(cfg: TokenizerConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train the VQ-VAE on the train split; tokenise both splits; measure reconstructions."""
    data = read_images(paths.images, paths.index)
    train_x, test_x = data["train"][0], data["test"][0]
    size = train_x.shape[-1]
    seed = derive_seed(ctx.seed, PAPER, "tokenizer") % 2**32
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = VQModule(VQVAE(cfg.codebook_size, cfg.code_dim, cfg.channels), cfg)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x), batch_size=cfg.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed))
    build_trainer(cfg.trainer).fit(module, loader)
    model = module.model.eval()
    codes, metrics = {}, {}
    for split, x in (("train", train_x), ("test", test_x)):
        c, recon = tokenize(model, x)
        codes[split] = c
        mse = float((recon - x).pow(2).mean())
        metrics[split] = {"mse": mse, "psnr_db": psnr(mse), "codes_used": int(c.unique().numel()),
                          "perplexity": codebook_perplexity(c, cfg.codebook_size)}
    grid = size // DOWNSAMPLE
    table = codes_table(codes)
    validate_table(table, f"{PAPER}.codes", codes_suite(len(table), cfg.codebook_size, grid * grid))
    result = {"reconstruction": metrics, "codebook_size": cfg.codebook_size, "code_dim": cfg.code_dim,
              "grid": grid, "image_size": size, "restarted_codes": module.restarts,
              "steps": int(module.global_step)}
    with atomic_dir(paths.tokenizer) as folder:
        save_safetensors(dict(model.state_dict()), folder / "vqvae.safetensors")
        write_json({"codebook_size": cfg.codebook_size, "code_dim": cfg.code_dim, "channels": cfg.channels,
                    "grid": grid, "image_size": size}, folder / "manifest.json")
    write_parquet(table, paths.codes)
    write_json(result, paths.tokenizer_metrics)
    return {"test_psnr_db": metrics["test"]["psnr_db"], "codes_used": metrics["train"]["codes_used"]}


main = Step(PAPER, "tokenizer", run, load_tokenizer, Paths)


if __name__ == "__main__":
    main()
