"""Supervised training of a TinyGPT on (prefix, target) id pairs: loss on the target tokens only (Lightning)."""

from __future__ import annotations

from collections.abc import Sequence

import lightning
import torch
from torch.nn import functional as F

from stages.core.trainer import TrainerConfig, build_trainer
from stages.core.transformer import TinyGPT
from stages.text2grad.config import ModelSpec
from stages.text2grad.models import pad_batch


def build_lm(spec: ModelSpec, vocab_size: int, seed: int) -> TinyGPT:
    """A freshly initialised TinyGPT (initialisation seeded)."""
    torch.manual_seed(seed)
    return TinyGPT(vocab_size, spec.d_model, spec.n_layers, spec.n_heads, spec.max_len)


def masked_lm_loss(lm: TinyGPT, tokens: torch.Tensor, target_mask: torch.Tensor) -> torch.Tensor:
    """Mean −log p(y_t | y_<t) over the positions t marked as target."""
    logp = lm(tokens)
    nll = F.nll_loss(logp[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    mask = target_mask[:, 1:].float()
    return (nll * mask).sum() / mask.sum().clamp_min(1.0)


class TargetLMModule(lightning.LightningModule):
    """Next-token training on the target part of each sequence."""

    def __init__(self, lm: TinyGPT, lr: float) -> None:
        super().__init__()
        self.lm, self.lr = lm, lr
        self.losses: list[float] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = masked_lm_loss(self.lm, batch[0], batch[1])
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.lm.parameters(), lr=self.lr, weight_decay=0.0)


def sequences(prefixes: Sequence[list[int]], targets: Sequence[list[int]], pad_id: int,
              max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded prefix+target ids and the target mask; refuses sequences longer than ``max_len``."""
    rows = [p + t for p, t in zip(prefixes, targets, strict=True)]
    longest = max(len(r) for r in rows)
    if longest > max_len:
        raise ValueError(f"a training sequence has {longest} tokens, more than the model's max_len {max_len}")
    tokens = pad_batch(rows, pad_id)
    mask = torch.zeros_like(tokens, dtype=torch.bool)
    for i, (p, t) in enumerate(zip(prefixes, targets, strict=True)):
        mask[i, len(p):len(p) + len(t)] = True
    return tokens, mask


def trim_collate(rows: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
    """Stack a batch and cut the columns after its longest target (they are padding)."""
    tokens, mask = torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])
    width = int(mask.any(0).nonzero().max()) + 1
    return [tokens[:, :width], mask[:, :width]]


def fit(lm: TinyGPT, tokens: torch.Tensor, mask: torch.Tensor, batch_size: int, lr: float,
        trainer: TrainerConfig, seed: int, progress_bar: bool = True) -> list[float]:
    """Train ``lm`` in place; return the loss per step."""
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = TargetLMModule(lm, lr)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(tokens, mask), batch_size=batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed),
                                         collate_fn=trim_collate)
    build_trainer(trainer, enable_progress_bar=progress_bar and trainer.enable_progress_bar).fit(module, loader)
    return module.losses
