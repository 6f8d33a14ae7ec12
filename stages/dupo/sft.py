"""Step ``sft``: one character-level model trained on both tasks; checkpoint chosen on validation accuracy.

DuPO starts RL from an instruction-tuned LLM that can already attempt both the primal and the
dual task. The miniature trains one small model here on worked solutions of primal problems
and of their filter-passing duals, and keeps the first checkpoint whose *validation* primal
accuracy is in the target band (room for RL to move it) with a dual accuracy high enough for
the dual to be a useful reward.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.tokenizer import train_tokenizer
from stages.core.trainer import build_trainer
from stages.dupo.config import PAPER, SFTConfig, load_sft
from stages.dupo.expectations import sft_log_suite
from stages.dupo.io import read_tables, split
from stages.dupo.model import TOKENIZER, WEIGHTS, build_model, dual_accuracy, encode_pairs, primal_accuracy, sft_loss
from stages.dupo.problems import dual_prompt, primal_prompt


@dataclass(frozen=True)
class Paths:
    problems: Path = inp("problems table")
    duals: Path = inp("dual questions table")
    models: Path = out("folder: model.safetensors, tokenizer.json, manifest.json (size, chosen step, val curve)")
    sft_log: Path = out("SFT loss per step (Parquet)")


def choose_checkpoint(curve: list[dict[str, float]], band: tuple[float, float], min_dual: float) -> int:
    """First checkpoint with primal accuracy in the band and dual ≥ min_dual; else the closest to that."""
    low, high = band
    for i, p in enumerate(curve):
        if low <= p["val_primal"] <= high and p["val_dual"] >= min_dual:
            return i

    def distance(p: dict[str, float]) -> float:
        return max(low - p["val_primal"], p["val_primal"] - high, 0.0) + max(min_dual - p["val_dual"], 0.0)

    return min(range(len(curve)), key=lambda i: distance(curve[i]))


def training_pairs(problems: pd.DataFrame, duals: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(prompts, targets) of both tasks: every primal problem and every filter-passing dual, given the true answer."""
    kept = duals[duals.passes_filter == 1]
    prompts = [primal_prompt(t) for t in problems.text] + [dual_prompt(m, a) for m, a in
                                                            zip(kept.masked_text, kept.answer, strict=True)]
    return prompts, problems.solution.tolist() + kept.solution.tolist()


def with_answers(duals: pd.DataFrame, problems: pd.DataFrame) -> pd.DataFrame:
    """Duals with their problem's answer column (the dual question states the primal answer)."""
    return duals.merge(problems[["problem_id", "answer"]], on="problem_id", how="left", validate="many_to_one")


class SFTModule(lightning.LightningModule):
    """Next-token loss on target tokens; every ``eval_every`` steps validation accuracies and a snapshot."""

    def __init__(self, lm: torch.nn.Module, tok: Any, cfg: SFTConfig, val: pd.DataFrame,
                 val_duals: pd.DataFrame) -> None:
        super().__init__()
        self.lm, self.tok, self.cfg, self.val, self.val_duals = lm, tok, cfg, val, val_duals
        self.losses: list[float] = []
        self.curve: list[dict[str, float]] = []
        self.snapshots: list[dict[str, torch.Tensor]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = sft_loss(self.lm, batch[0], batch[1])
        self.losses.append(float(loss.detach()))
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        step = self.global_step
        if step % self.cfg.eval_every and step != self.cfg.trainer.max_steps:
            return
        self.lm.eval()
        point = {"step": step, "val_primal": primal_accuracy(self.lm, self.tok, self.val, self.cfg.max_new),
                 "val_dual": dual_accuracy(self.lm, self.tok, self.val_duals, self.cfg.max_new)}
        self.lm.train()
        self.curve.append(point)
        self.snapshots.append(copy.deepcopy(self.lm.state_dict()))
        low, high = self.cfg.target_primal
        if point["val_primal"] > high or (point["val_primal"] >= low and point["val_dual"] >= self.cfg.min_dual):
            self.trainer.should_stop = True   # in the band with a usable dual, or past it: later steps are unused

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.lm.parameters(), lr=self.cfg.lr, weight_decay=0.0)


def run(cfg: SFTConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train the tokenizer and the model; keep the checkpoint chosen on validation accuracy."""
    cap_threads(cfg.max_threads)
    problems, duals = read_tables(paths)
    duals = with_answers(duals, problems)
    train, train_duals = split(problems, "sft"), split(duals, "sft")
    val = split(problems, "val").head(cfg.n_val_eval)
    val_duals = split(duals, "val")
    val_duals = val_duals[val_duals.passes_filter == 1].head(cfg.n_val_eval)
    prompts, targets = training_pairs(train, train_duals)
    tok = train_tokenizer(prompts + targets, vocab_size=128, kind="char")
    seed = derive_seed(ctx.seed, PAPER, "sft") % 2**32
    lightning.seed_everything(seed, workers=True, verbose=False)
    lm = build_model(cfg.model, tok.vocab_size)
    ids, mask = encode_pairs(tok, prompts, targets, cfg.model.max_len)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids, mask), batch_size=cfg.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed))
    module = SFTModule(lm, tok, cfg, val, val_duals)
    build_trainer(cfg.trainer, max_epochs=-1).fit(module, loader)
    chosen = choose_checkpoint(module.curve, cfg.target_primal, cfg.min_dual)
    n_params = sum(p.numel() for p in lm.parameters())
    with atomic_dir(paths.models) as folder:
        save_safetensors(module.snapshots[chosen], folder / WEIGHTS, metadata={"paper": PAPER})
        tok.save(folder / TOKENIZER)
        write_json({"model": cfg.model.model_dump(), "n_params": n_params, "vocab_size": tok.vocab_size,
                    "n_primal_examples": len(train), "n_dual_examples": len(prompts) - len(train),
                    "chosen": module.curve[chosen], "val_curve": module.curve}, folder / "manifest.json")
    log = pd.DataFrame({"step": range(1, len(module.losses) + 1), "loss": module.losses})
    validate_table(log, f"{PAPER}.sft_log", sft_log_suite(len(log)))
    write_parquet(log, paths.sft_log)
    return {"n_params": n_params, **{k: v for k, v in module.curve[chosen].items()}}


main = Step(PAPER, "sft", run, load_sft, Paths)


if __name__ == "__main__":
    main()
