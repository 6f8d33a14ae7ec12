"""The adapted model: SmolLM2-135M with low-rank adapters (LoRA) on its attention projections, and its losses.

Continued training of a model that already reads its context (the paper continues training a
pretrained Llama-3-8B); only the adapters learn, so every variant starts from the same model and
the base model is the shared starting point (adapters with B = 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import lightning
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from stages.entropylong.config import LoraSpec


class LoRALinear(nn.Module):
    """y = W x + (α/r)·B A x with W frozen, A (r × in) random, B (out × r) zero at the start (LoRA)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base, self.scale = base, alpha / rank
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.zeros(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))

    def reset(self, generator: torch.Generator) -> None:
        """A ~ U(±1/√in) (Kaiming-uniform bound at a = √5), B = 0: the adapted layer starts equal to the base."""
        bound = 1 / math.sqrt(self.lora_a.shape[1])
        with torch.no_grad():
            self.lora_a.copy_((torch.rand(self.lora_a.shape, generator=generator) * 2 - 1) * bound)
            self.lora_b.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale


def adapter_name(variant: str, seed_index: int, lr_index: int) -> str:
    """The file of one run's adapter weights (train writes it, evaluate reads it)."""
    return f"{variant}_s{seed_index}_lr{lr_index}.safetensors"


def add_lora(model: nn.Module, spec: LoraSpec) -> list[str]:
    """Replace every ``spec.targets`` projection by a LoRALinear around it; freeze everything else; the names."""
    for p in model.parameters():
        p.requires_grad_(False)
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear) and n.split(".")[-1] in spec.targets]
    if not names:
        raise ValueError(f"no linear layer named one of {spec.targets} in the model")
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name)
        setattr(parent, child, LoRALinear(getattr(parent, child), spec.rank, spec.alpha))
    return names


def lora_layers(model: nn.Module) -> Iterator[tuple[str, LoRALinear]]:
    """Every adapter of the model, by module name."""
    return ((n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear))


def reset_lora(model: nn.Module, seed: int) -> None:
    """Fresh adapters (seeded A, zero B) on every adapted layer: the model is the base model again."""
    gen = torch.Generator().manual_seed(seed)
    for _, layer in lora_layers(model):
        layer.reset(gen)


def lora_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapter weights only (what a training run changes)."""
    return {f"{n}.{k}": getattr(m, k).detach().clone() for n, m in lora_layers(model) for k in ("lora_a", "lora_b")}


def load_lora(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Set every adapter from ``state``; refuse a missing, extra or non-finite tensor."""
    expected = set(lora_state(model))
    if set(state) != expected:
        raise ValueError(f"adapter weights do not match the model: missing {sorted(expected - set(state))[:3]}, "
                         f"extra {sorted(set(state) - expected)[:3]}")
    for key, value in state.items():
        if not torch.isfinite(value).all():
            raise ValueError(f"adapter weight {key} is not finite")
    with torch.no_grad():
        for n, m in lora_layers(model):
            m.lora_a.copy_(state[f"{n}.lora_a"])
            m.lora_b.copy_(state[f"{n}.lora_b"])


class AdaptedLM(lightning.LightningModule):
    """Next-token cross-entropy over every position of the training sequences; AdamW on the adapters only."""

    def __init__(self, model: Any, lr: float, warmup_steps: int) -> None:
        super().__init__()
        self.model, self.lr, self.warmup_steps = model, lr, warmup_steps
        self.losses: list[float] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens = batch[0]
        logits = self.model(input_ids=tokens).logits
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1))
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> dict:
        params = [p for _, m in lora_layers(self.model) for p in (m.lora_a, m.lora_b)]
        opt = torch.optim.AdamW(params, lr=self.lr, weight_decay=0.0)
        warm = max(1, self.warmup_steps)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def span_nll(model: Any, sequences: Sequence[Sequence[int]], starts: Sequence[int], ends: Sequence[int],
             batch_size: int = 8) -> list[np.ndarray]:
    """−log p(x_t | x_<t) for t in [start, end) of each sequence (the document tokens), in nats."""
    from stages.core.lm_scoring import score_sequences

    scores = score_sequences(model, sequences, start=list(starts), batch_size=batch_size)
    # scores cover tokens start .. len − 1; keep those before ``end``
    return [-s.logprobs[:e - b].astype(float) for s, b, e in zip(scores, starts, ends, strict=True)]
