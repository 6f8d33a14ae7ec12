"""Step ``train``: every model × seed on next-token prediction of the training sequences (Lightning)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch
from torch.nn import functional as F

from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.trainer import build_trainer
from stages.core.workers import in_worker, map_runs
from stages.mtd_mirror_descent.config import PAPER, TrainConfig, load_train
from stages.mtd_mirror_descent.io import load_split, read_tables
from stages.mtd_mirror_descent.models import build_model, init_seed, lr_factor


@dataclass(frozen=True)
class Paths:
    pi: Path = inp("π*")
    sequences: Path = inp("sequences with λ")
    tokens: Path = inp("tokens")
    models: Path = out("folder: <model>_s<seed>.safetensors and manifest.json (specs, seeds, sizes)")
    train_log: Path = out("training loss per step (Parquet)")


class NextTokenModule(lightning.LightningModule):
    """Cross-entropy of y_{t+1} under the model's prediction at t, over all positions."""

    def __init__(self, model: torch.nn.Module, cfg: TrainConfig) -> None:
        super().__init__()
        self.model, self.cfg = model, cfg
        self.losses: list[float] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        tokens = batch[0]
        logp = self.model(tokens)
        loss = F.nll_loss(logp[:, :-1].reshape(-1, logp.shape[-1]), tokens[:, 1:].reshape(-1))
        self.losses.append(float(loss.detach()))
        return loss

    def configure_optimizers(self) -> dict[str, Any]:
        cfg = self.cfg
        opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(s, cfg.warmup_steps, cfg.trainer.max_steps, cfg.cosine_decay))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def train_one(module: NextTokenModule, train_tokens: torch.Tensor, cfg: TrainConfig, seed: int,
              progress_bar: bool = True) -> None:
    """Fit one model with the shared TrainerConfig; data order seeded."""
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_tokens), batch_size=cfg.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed))
    bar = progress_bar and cfg.trainer.enable_progress_bar
    build_trainer(cfg.trainer, enable_progress_bar=bar).fit(module, loader)


@dataclass(frozen=True)
class Shared:
    """What every training run reads: the config, the training tokens and the task's sizes."""

    cfg: TrainConfig
    tokens: torch.Tensor
    q: int
    m: int
    seq_len: int


def train_run(job: tuple[Any, int, int], sh: Shared) -> tuple[dict[str, torch.Tensor], list[float]]:
    """One (model, seed index, seed) run, seeded from the job alone: its weights and per-step losses."""
    spec, _, seed = job
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = NextTokenModule(build_model(spec, sh.q, sh.m, sh.seq_len, seed), sh.cfg)
    train_one(module, sh.tokens, sh.cfg, seed, not in_worker())
    return dict(module.model.state_dict()), module.losses


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train every (model, seed) over ``threads / max_threads`` processes; write weights and the loss curves."""
    pi, sequences, tokens, m = read_tables(paths)
    train_tokens, _ = load_split(sequences, tokens, "train")
    q, seq_len = pi.shape[0], train_tokens.shape[1]
    jobs = [(spec, s, init_seed(ctx.seed, spec.name, s)) for spec in cfg.models for s in range(cfg.n_seeds)]
    shared = Shared(cfg, torch.as_tensor(train_tokens), q, m, seq_len)
    results = map_runs(train_run, jobs, shared, threads=ctx.threads, max_threads=cfg.max_threads,
                       desc="mtd runs (model × seed)")
    logs = []
    with atomic_dir(paths.models) as folder:
        for (spec, s, _), (state, losses) in zip(jobs, results, strict=True):
            save_safetensors(state, folder / f"{spec.name}_s{s}.safetensors",
                             metadata={"model": spec.name, "seed_index": str(s)})
            logs.append(pd.DataFrame({"model": spec.name, "seed_index": s,
                                      "step": range(1, len(losses) + 1), "loss": losses}))
        write_json({"models": [s.model_dump() for s in cfg.models], "n_seeds": cfg.n_seeds, "q": q, "m": m,
                    "seq_len": seq_len}, folder / "manifest.json")
    log = pd.concat(logs, ignore_index=True)
    write_parquet(log, paths.train_log)
    return {"runs": len(logs), "final_loss": float(log.groupby(["model", "seed_index"]).loss.last().mean())}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
