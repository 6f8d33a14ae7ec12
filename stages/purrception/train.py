"""Step ``train``: every objective × seed on the tokenised train images, weights kept at each checkpoint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, read_json, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.trainer import build_trainer
from stages.core.workers import in_worker, map_runs
from stages.purrception.config import PAPER, TrainConfig, load_train
from stages.purrception.expectations import train_log_suite
from stages.purrception.flow_matching import FlowTransformer, build_flow_model, flow_codebook, training_loss
from stages.purrception.io import read_codes


@dataclass(frozen=True)
class Paths:
    tokenizer: Path = inp("VQ-VAE folder (its codebook is the embedding space)")
    codes: Path = inp("code grids")
    generators: Path = out("folder: <method>_s<seed>_step<k>.safetensors and manifest.json")
    train_log: Path = out("training loss per step (Parquet)")


class FlowModule(lightning.LightningModule):
    """One objective; a copy of the weights is kept at every checkpoint step."""

    def __init__(self, model: FlowTransformer, codebook: torch.Tensor, cfg: TrainConfig) -> None:
        super().__init__()
        self.model, self.cfg = model, cfg
        self.register_buffer("codebook", codebook)
        self.losses: list[float] = []
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}
        self.keep = set(cfg.checkpoints)

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = training_loss(self.model, batch[0], self.codebook, self.cfg.t_eps, self.cfg.z_loss_weight)
        self.losses.append(float(loss.detach()))
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.global_step in self.keep:
            self.snapshots[self.global_step] = {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=0.0)


def run_seed(ctx_seed: int, method: str, s: int) -> int:
    """The torch seed of one training run."""
    return derive_seed(ctx_seed, PAPER, "train", method, s) % 2**32


@dataclass(frozen=True)
class Shared:
    """What every training run reads: the config, the train code grids, the scaled codebook, the shape, the seed."""

    cfg: TrainConfig
    codes: torch.Tensor
    codebook: torch.Tensor
    shape: dict[str, int]
    seed: int


def train_run(job: tuple[str, int], sh: Shared) -> tuple[dict[int, dict[str, torch.Tensor]], list[float]]:
    """One (method, seed index) from scratch, seeded from the job alone: its checkpoint weights and step losses."""
    method, s = job
    cfg = sh.cfg
    seed = run_seed(sh.seed, method, s)
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = FlowModule(build_flow_model(sh.shape, method), sh.codebook, cfg)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(sh.codes), batch_size=cfg.batch_size,
                                         shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(seed))
    bar = cfg.trainer.enable_progress_bar and not in_worker()
    build_trainer(cfg.trainer, enable_progress_bar=bar).fit(module, loader)
    return module.snapshots, module.losses


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train every (method, seed) for the same steps over ``threads / max_threads`` processes; write the weights."""
    cap_threads(cfg.max_threads)
    tok = read_json(Path(paths.tokenizer) / "manifest.json")
    seq_len = tok["grid"] ** 2
    codebook, scale = flow_codebook(paths.tokenizer)
    codes = read_codes(paths.codes, tok["codebook_size"], seq_len)
    shape = {"codebook_size": tok["codebook_size"], "code_dim": tok["code_dim"], "seq_len": seq_len,
             "d_model": cfg.d_model, "n_layers": cfg.n_layers, "n_heads": cfg.n_heads}
    n_params = {m: sum(p.numel() for p in build_flow_model(shape, m).parameters()) for m in cfg.methods}
    jobs = [(method, s) for method in cfg.methods for s in range(cfg.n_seeds)]
    results = map_runs(train_run, jobs, Shared(cfg, codes, codebook, shape, ctx.seed), threads=ctx.threads,
                       max_threads=cfg.max_threads, desc="purrception runs (method × seed)")
    logs = []
    with atomic_dir(paths.generators) as folder:
        for (method, s), (snapshots, losses) in zip(jobs, results, strict=True):
            for step, state in snapshots.items():
                save_safetensors(state, folder / f"{method}_s{s}_step{step}.safetensors",
                                 metadata={"method": method, "seed_index": str(s), "step": str(step)})
            logs.append(pd.DataFrame({"method": method, "seed_index": s,
                                      "step": range(1, len(losses) + 1), "loss": losses}))
        write_json({**shape, "methods": list(cfg.methods), "n_seeds": cfg.n_seeds, "checkpoints": cfg.checkpoints,
                    "z_loss_weight": cfg.z_loss_weight, "codebook_scale": scale, "n_params": n_params},
                   folder / "manifest.json")
    log = pd.concat(logs, ignore_index=True)
    validate_table(log, f"{PAPER}.train_log", train_log_suite(list(cfg.methods), len(log)))
    write_parquet(log, paths.train_log)
    final_loss = log.groupby(["method", "seed_index"]).loss.last().to_dict()
    return {"runs": len(logs), "n_params": n_params, "final_loss": final_loss}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
