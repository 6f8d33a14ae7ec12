"""Step ``train``: one class-conditional next-scale transformer per seed, teacher-forced on the train tokens."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.trainer import build_trainer
from stages.core.workers import in_worker, map_runs
from stages.ssg.config import PAPER, TrainConfig, load_train
from stages.ssg.expectations import train_log_suite
from stages.ssg.io import N_CLASSES, read_tokens
from stages.ssg.multiscale_vq import load_vq, next_scale_inputs, split_codes
from stages.ssg.var import NextScaleTransformer


@dataclass(frozen=True)
class Paths:
    tokenizer: Path = inp("tokenizer folder (the codebook builds the next-scale inputs)")
    tokens: Path = inp("token sequences of every image")
    var: Path = out("folder: var_s<i>.safetensors per seed and manifest.json")
    train_log: Path = out("loss per seed and logged step (Parquet)")


class NextScaleModule(lightning.LightningModule):
    """Cross-entropy of every scale's codes given coarser scales; the label is dropped with some probability."""

    def __init__(self, model: NextScaleTransformer, cfg: TrainConfig) -> None:
        super().__init__()
        self.model, self.cfg = model, cfg
        self.log_rows: list[tuple[int, float]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens, inputs, labels = batch
        drop = torch.rand(len(labels)) < self.cfg.label_dropout
        labels = labels.masked_fill(drop, self.model.null_class)
        logits = self.model(labels, inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))
        if self.global_step % self.cfg.trainer.log_every_n_steps == 0:
            self.log_rows.append((int(self.global_step), float(loss.detach())))
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay,
                                foreach=True)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.cfg.lr, total_steps=self.cfg.trainer.max_steps,
                                                    pct_start=0.1)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def teacher_inputs(codebook: torch.Tensor, tokens: torch.Tensor, scales: list[int]) -> torch.Tensor:
    """The next-scale inputs of every sequence, in batches."""
    return torch.cat([next_scale_inputs(codebook, split_codes(tokens[i:i + 1000], scales), scales, scales[-1])
                      for i in range(0, len(tokens), 1000)])


def batch_loader(data: tuple[torch.Tensor, ...], batch_size: int, seed: int) -> torch.utils.data.DataLoader:
    """Shuffled batches that index the tensors once per batch (no per-sample collate); the seed fixes the order."""
    sampler = torch.utils.data.BatchSampler(
        torch.utils.data.RandomSampler(range(len(data[0])), generator=torch.Generator().manual_seed(seed)),
        batch_size, drop_last=False)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*data), batch_size=None, sampler=sampler)


def step_flops(model: NextScaleTransformer, data: tuple[torch.Tensor, ...], batch_size: int) -> float:
    """FLOPs of one training step (forward and backward of one batch; torch's counter: matrix products, attention)."""
    tokens, inputs, labels = (t[:batch_size] for t in data)
    with FlopCounterMode(display=False) as counter:
        logits = model(labels, inputs)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1)).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


@torch.inference_mode()
def mean_loss(model: NextScaleTransformer, tokens: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> float:
    """Mean per-token cross-entropy (nats) with the true labels, in batches."""
    total = 0.0
    for i in range(0, len(tokens), 500):
        logits = model(labels[i:i + 500], inputs[i:i + 500])
        total += float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[i:i + 500].reshape(-1),
                                       reduction="sum"))
    return total / tokens.numel()


@dataclass(frozen=True)
class Shared:
    """What every run reads: the config, the train and validation tensors, the tokenizer's sizes and the seed."""

    cfg: TrainConfig
    train: tuple[torch.Tensor, ...]
    val: tuple[torch.Tensor, ...]
    codebook_size: int
    code_dim: int
    scales: list[int]
    seed: int


def build_model(sh: Shared) -> NextScaleTransformer:
    """A fresh transformer of the configured shape (initialised from torch's global generator)."""
    cfg = sh.cfg
    return NextScaleTransformer(sh.codebook_size, sh.code_dim, N_CLASSES, sh.scales, cfg.d_model, cfg.n_layers,
                                cfg.n_heads)


def train_run(s: int, sh: Shared) -> tuple[dict[str, torch.Tensor], list[tuple[int, float]], dict[str, Any]]:
    """One seed index from scratch, seeded from it alone: the weights, the logged losses and the summary."""
    cfg = sh.cfg
    seed = derive_seed(sh.seed, PAPER, "train", s) % 2**32
    lightning.seed_everything(seed, workers=True, verbose=False)
    model = build_model(sh)
    module = NextScaleModule(model, cfg)
    loader = batch_loader(sh.train, cfg.batch_size, seed)
    epochs = -(-cfg.trainer.max_steps * cfg.batch_size // len(sh.train[0]))
    bar = cfg.trainer.enable_progress_bar and not in_worker()
    build_trainer(cfg.trainer, max_epochs=epochs, enable_progress_bar=bar).fit(module, loader)
    model.eval()
    summary = {"seed_index": s, "train_loss": mean_loss(model, *sh.train), "val_loss": mean_loss(model, *sh.val),
               "steps": int(module.global_step)}
    return dict(model.state_dict()), module.log_rows, summary


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train ``n_seeds`` transformers (a seed: initialisation, batch order and label dropout) over
    ``threads / max_threads`` processes; validation loss; FLOPs of one step and the manifest here."""
    threads = cap_threads(cfg.max_threads)
    vq, manifest = load_vq(paths.tokenizer)
    scales, seq_len = manifest["scales"], manifest["seq_len"]
    codebook = vq.codebook.weight.detach()
    data = {}
    for split in ("train", "val"):
        tokens, labels = read_tokens(paths.tokens, manifest["codebook_size"], seq_len, split)
        data[split] = (tokens, teacher_inputs(codebook, tokens, scales), labels)
    shared = Shared(cfg, data["train"], data["val"], manifest["codebook_size"], manifest["code_dim"], scales,
                    ctx.seed)
    jobs = list(range(cfg.n_seeds))
    results = map_runs(train_run, jobs, shared, threads=ctx.threads, max_threads=cfg.max_threads,
                       desc="ssg runs (seed)")
    cap_threads(cfg.max_threads)
    rows, seeds = [], []
    with atomic_dir(paths.var) as folder:
        for s, (state, log_rows, summary) in zip(jobs, results, strict=True):
            rows += [{"seed_index": s, "step": step, "loss": loss} for step, loss in log_rows]
            seeds.append(summary)
            save_safetensors(state, folder / f"var_s{s}.safetensors")
        model = build_model(shared)  # the FLOP count depends on the shapes only, not on the trained weights
        n_params = sum(p.numel() for p in model.parameters())
        flops = step_flops(model.train(), data["train"], cfg.batch_size)
        write_json({"codebook_size": manifest["codebook_size"], "code_dim": manifest["code_dim"],
                    "n_classes": N_CLASSES, "scales": scales, "d_model": cfg.d_model, "n_layers": cfg.n_layers,
                    "n_heads": cfg.n_heads, "n_seeds": cfg.n_seeds, "n_parameters": n_params,
                    "n_train_sequences": len(data["train"][0]), "batch_size": cfg.batch_size,
                    "max_steps": cfg.trainer.max_steps, "lr": cfg.lr, "threads": threads,
                    "step_flops": flops, "seeds": seeds},
                   folder / "manifest.json", finite=True)
    log = pd.DataFrame(rows)
    validate_table(log, f"{PAPER}.train_log", train_log_suite(len(log)))
    write_parquet(log, paths.train_log)
    return {"n_parameters": n_params, "val_loss": [s["val_loss"] for s in seeds]}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
