"""Step ``tokenizer``: train the multi-scale residual VQ once, tokenise every image, report reconstruction quality."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import numpy as np
import torch

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.trainer import build_trainer
from stages.ssg.config import PAPER, TokenizerConfig, TokenizerInputs, load_tokenizer
from stages.ssg.expectations import tokens_suite
from stages.ssg.io import N_CLASSES, read_images, tokens_table
from stages.ssg.multiscale_vq import MultiScaleVQ, split_codes, tokenize


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    tokenizer: Path = out("folder: vq.safetensors and manifest.json")
    tokens: Path = out("multi-scale token sequence of every image, long format (Parquet)")
    tokenizer_metrics: Path = out("reconstruction quality and codebook usage per scale (JSON)")


class VQModule(lightning.LightningModule):
    """Multi-scale VQ training; codes unused for ``restart_every`` steps are restarted at random encoder outputs."""

    def __init__(self, model: MultiScaleVQ, cfg: TokenizerConfig) -> None:
        super().__init__()
        self.model, self.cfg = model, cfg
        self.usage = torch.zeros(cfg.codebook_size)
        self.restarts = 0

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        out_ = self.model(batch[0], self.cfg.beta)
        for r in out_["codes"]:
            self.usage += torch.bincount(r.reshape(-1), minlength=self.cfg.codebook_size).float()
        if (self.global_step + 1) % self.cfg.restart_every == 0:
            f = out_["f"].detach()
            self._restart_dead(f.permute(0, 2, 3, 1).reshape(-1, f.shape[1]))
        return out_["reconstruction"] + out_["codebook"] + out_["commitment"]

    @torch.no_grad()
    def _restart_dead(self, vectors: torch.Tensor) -> None:
        dead = (self.usage == 0).nonzero().flatten()
        if len(dead):
            pick = torch.randint(0, len(vectors), (len(dead),))
            self.model.codebook.weight[dead] = vectors[pick] * 0.5  # residuals shrink scale by scale
            self.restarts += len(dead)
        self.usage.zero_()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.model.parameters(), lr=self.cfg.lr)


def psnr(mse: float) -> float:
    """Peak signal-to-noise ratio (dB) of images in [0, 1]."""
    return float(10 * np.log10(1.0 / max(mse, 1e-12)))


def run(inputs: TokenizerInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train on the train split; tokenise every split; measure reconstructions and per-scale code usage."""
    cfg = inputs.tokenizer
    cap_threads(cfg.max_threads)
    data = read_images(paths.images, paths.index)
    train_x = data["train"][0]
    seed = derive_seed(ctx.seed, PAPER, "tokenizer") % 2**32
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = VQModule(MultiScaleVQ(cfg.codebook_size, cfg.code_dim, cfg.channels, cfg.scales), cfg)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x), batch_size=cfg.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed))
    build_trainer(cfg.trainer).fit(module, loader)
    model = module.model.eval()
    tokens, metrics = {}, {}
    for split, (x, labels) in data.items():
        t, recon = tokenize(model, x)
        tokens[split] = (t, labels)
        mse = float((recon - x).pow(2).mean())
        metrics[split] = {"mse": mse, "psnr_db": psnr(mse),
                          "codes_used_per_scale": [int(r.unique().numel()) for r in split_codes(t, cfg.scales)]}
    seq_len = sum(s * s for s in cfg.scales)
    table = tokens_table(tokens)
    validate_table(table, f"{PAPER}.tokens", tokens_suite(len(table), cfg.codebook_size, seq_len, N_CLASSES))
    result = {"reconstruction": metrics, "codebook_size": cfg.codebook_size, "code_dim": cfg.code_dim,
              "scales": cfg.scales, "seq_len": seq_len, "restarted_codes": module.restarts,
              "steps": int(module.global_step)}
    with atomic_dir(paths.tokenizer) as folder:
        save_safetensors(dict(model.state_dict()), folder / "vq.safetensors")
        write_json({"codebook_size": cfg.codebook_size, "code_dim": cfg.code_dim, "channels": cfg.channels,
                    "scales": cfg.scales, "image_size": inputs.image_size, "seq_len": seq_len},
                   folder / "manifest.json")
    write_parquet(table, paths.tokens)
    write_json(result, paths.tokenizer_metrics, finite=True)
    return {"test_psnr_db": metrics["test"]["psnr_db"]}


main = Step(PAPER, "tokenizer", run, load_tokenizer, Paths)


if __name__ == "__main__":
    main()
