"""Step ``warmstart``: supervised masked-diffusion training per task; checkpoint chosen on validation success.

The paper starts RL from LLaDA-8B; the miniature starts from a small model trained here
on solved examples, stopped when its greedy success on the *validation* split first
reaches the configured band (20-50%), so RL has room to improve and signal to learn from.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch

from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.trainer import build_trainer
from stages.espo.config import PAPER, ModelConfig, WarmstartConfig, load_warmstart
from stages.espo.diffusion import MaskedDiffusionLM, masked_diffusion_loss, success_and_reward
from stages.espo.io import Examples, read_tables, task_examples


@dataclass(frozen=True)
class Paths:
    sudoku: Path = inp("Sudoku table")
    countdown: Path = inp("Countdown table")
    models: Path = out("folder: <task>.safetensors and manifest.json (model sizes, chosen step, val curve)")
    train_log: Path = out("SFT loss per step (Parquet)")


def build_model(spec: ModelConfig, max_len: int) -> MaskedDiffusionLM:
    """The masked-diffusion transformer of the given size."""
    return MaskedDiffusionLM(spec.d_model, spec.n_layers, spec.n_heads, max_len)


def choose_checkpoint(curve: list[dict[str, float]], low: float, high: float) -> int:
    """Index of the first checkpoint with low ≤ success ≤ high; else the one closest to the band's centre."""
    for i, point in enumerate(curve):
        if low <= point["val_success"] <= high:
            return i
    centre = (low + high) / 2
    return min(range(len(curve)), key=lambda i: abs(curve[i]["val_success"] - centre))


class WarmstartModule(lightning.LightningModule):
    """Masked-diffusion SFT; every ``eval_every`` steps a validation success check and a weight snapshot."""

    def __init__(self, model: MaskedDiffusionLM, cfg: WarmstartConfig, val: Examples) -> None:
        super().__init__()
        self.model, self.cfg, self.val = model, cfg, val
        self.losses: list[float] = []
        self.curve: list[dict[str, float]] = []
        self.snapshots: list[dict[str, torch.Tensor]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = masked_diffusion_loss(self.model, batch[0], batch[1])
        self.losses.append(float(loss.detach()))
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = self.global_step
        if step % self.cfg.eval_every and step != self.cfg.trainer.max_steps:
            return
        success, reward = success_and_reward(self.model, self.val, self.cfg.sampler_steps, self.cfg.n_val_eval)
        self.curve.append({"step": step, "val_success": success, "val_reward": reward})
        self.snapshots.append(copy.deepcopy(self.model.state_dict()))
        if success >= self.cfg.target_success[0]:
            self.trainer.should_stop = True  # the band's lower edge is reached: later steps are not used

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.parameters(), lr=self.cfg.lr, weight_decay=0.0)


def run(cfg: WarmstartConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train one warm start per task and keep the checkpoint chosen on validation success."""
    cap_threads(cfg.max_threads)
    tables = read_tables(paths)
    manifest, logs, result = {"model": cfg.model.model_dump(), "target_success": list(cfg.target_success),
                              "tasks": {}}, [], {}
    with atomic_dir(paths.models) as folder:
        for task in cfg.tasks:
            train, val = task_examples(tables, task, "train"), task_examples(tables, task, "val")
            seed = derive_seed(ctx.seed, PAPER, "warmstart", task) % 2**32
            lightning.seed_everything(seed, workers=True, verbose=False)
            max_len = train.prompts.shape[1] + train.completion_length
            module = WarmstartModule(build_model(cfg.model, max_len), cfg, val)
            loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train.prompts, train.completions),
                                                 batch_size=cfg.batch_size, shuffle=True,
                                                 generator=torch.Generator().manual_seed(seed))
            build_trainer(cfg.trainer, max_epochs=-1).fit(module, loader)
            chosen = choose_checkpoint(module.curve, *cfg.target_success)
            save_safetensors(module.snapshots[chosen], folder / f"{task}.safetensors", metadata={"task": task})
            manifest["tasks"][task] = {"prompt_length": train.prompts.shape[1],
                                       "completion_length": train.completion_length, "max_len": max_len,
                                       "chosen_step": module.curve[chosen]["step"],
                                       "val_success": module.curve[chosen]["val_success"],
                                       "val_reward": module.curve[chosen]["val_reward"], "val_curve": module.curve}
            logs.append(pd.DataFrame({"task": task, "step": range(1, len(module.losses) + 1), "loss": module.losses}))
            result[f"{task}_val_success"] = module.curve[chosen]["val_success"]
        write_json(manifest, folder / "manifest.json")
    write_parquet(pd.concat(logs, ignore_index=True), paths.train_log)
    return result


main = Step(PAPER, "warmstart", run, load_warmstart, Paths)


if __name__ == "__main__":
    main()
