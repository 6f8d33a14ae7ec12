"""The small causal LM trained on each variant (``stages.core.transformer.TinyGPT``) and its losses."""

from __future__ import annotations

from collections.abc import Sequence

import lightning
import numpy as np
import torch
from torch.nn import functional as F

from stages.core.transformer import TinyGPT
from stages.entropylong.config import ModelSpec


def build_lm(spec: ModelSpec, vocab_size: int, seed: int | None = None) -> TinyGPT:
    """A fresh TinyGPT (seeded initialisation when ``seed`` is given)."""
    if seed is not None:
        torch.manual_seed(seed)
    return TinyGPT(vocab_size, spec.d_model, spec.n_layers, spec.n_heads, spec.max_len)


class NextTokenLM(lightning.LightningModule):
    """Next-token cross-entropy over every position of the training sequences; AdamW with linear warm-up."""

    def __init__(self, model: TinyGPT, lr: float, warmup_steps: int) -> None:
        super().__init__()
        self.model, self.lr, self.warmup_steps = model, lr, warmup_steps
        self.losses: list[float] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens = batch[0]
        logp = self.model(tokens)
        loss = F.nll_loss(logp[:, :-1].reshape(-1, logp.shape[-1]), tokens[:, 1:].reshape(-1))
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> dict:
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.01)
        warm = max(1, self.warmup_steps)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


@torch.inference_mode()
def span_nll(model: TinyGPT, sequences: Sequence[Sequence[int]], starts: Sequence[int], ends: Sequence[int],
             batch_size: int = 8) -> list[np.ndarray]:
    """−log p(x_t | x_<t) for t in [start, end) of each sequence (the document tokens), in nats."""
    out: list[np.ndarray] = [np.zeros(0)] * len(sequences)
    order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
    for lo in range(0, len(order), batch_size):
        batch = order[lo:lo + batch_size]
        width = len(sequences[batch[0]])
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            ids[row, :len(sequences[i])] = torch.as_tensor(list(sequences[i]), dtype=torch.long)
        logp = model(ids)
        for row, i in enumerate(batch):
            t = torch.arange(starts[i], ends[i])
            out[i] = (-logp[row, t - 1, ids[row, t]]).double().numpy()
    return out


@torch.inference_mode()
def continuation_logprobs(model: TinyGPT, prompt: Sequence[int], choices: Sequence[Sequence[int]]) -> list[float]:
    """log p(choice | prompt), summed over the choice's tokens, for each candidate (one batch)."""
    seqs = [[*prompt, *c] for c in choices]
    nll = span_nll(model, seqs, [len(prompt)] * len(seqs), [len(s) for s in seqs], batch_size=len(seqs))
    return [-float(x.sum()) for x in nll]
