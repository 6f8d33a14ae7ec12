"""Step ``train``: LoRA continued training of SmolLM2-135M on each variant, ``n_seeds`` times (Lightning)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import numpy as np
import pandas as pd
import torch

from stages.assets.loaders import load_causal_lm
from stages.core.io import atomic_dir, read_parquet, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.trainer import build_trainer
from stages.entropylong.config import PAPER, TrainConfig, load_train
from stages.entropylong.lm import AdaptedLM, adapter_name, add_lora, lora_state, reset_lora


@dataclass(frozen=True)
class Paths:
    entropy_model: Path = inp("SmolLM2-135M asset (the base model)")
    sequences: Path = inp("training sequences of every variant")
    models: Path = out("folder: <variant>_s<seed>_lr<i>.safetensors (adapter weights) and manifest.json")
    train_log: Path = out("training loss per step (Parquet)")


def init_seed(seed: int, s: int) -> int:
    """The seed of run ``s``; shared by every variant (same adapter initialisation and data order: paired)."""
    return derive_seed(seed, PAPER, "train", s) % 2**32  # numpy / Lightning accept 32-bit seeds


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train fresh adapters for every (variant, seed, learning rate) on exactly the same number of tokens; write
    them and the loss curves."""
    seqs = read_parquet(paths.sequences, columns=["variant", "doc_id", "copy", "tokens", "n_tokens"])
    model, _ = load_causal_lm(paths.entropy_model)
    adapted = add_lora(model, cfg.lora)
    logs = []
    with atomic_dir(paths.models) as folder:
        for variant in cfg.variants:
            data = seqs[seqs.variant == variant].sort_values(["doc_id", "copy"])
            if data.empty:
                raise ValueError(f"no training sequences for variant '{variant}'")
            x = torch.as_tensor(np.stack(data.tokens.to_numpy()), dtype=torch.long)
            for s in range(cfg.n_seeds):
                for i, lr in enumerate(cfg.lrs):
                    seed = init_seed(ctx.seed, s)  # the same for every lr and variant: paired
                    lightning.seed_everything(seed, workers=True, verbose=False)
                    reset_lora(model, seed)
                    module = AdaptedLM(model.train(), lr, cfg.warmup_steps)
                    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=cfg.batch_size,
                                                         shuffle=True,
                                                         generator=torch.Generator().manual_seed(seed))
                    build_trainer(cfg.trainer).fit(module, loader)
                    state = lora_state(model)
                    if not all(torch.isfinite(t).all() for t in state.values()):
                        raise ValueError(f"training {variant} seed {s} lr {lr} gave non-finite adapter weights")
                    save_safetensors(state, folder / adapter_name(variant, s, i),
                                     metadata={"variant": variant, "seed_index": str(s), "lr": str(lr)})
                    logs.append(pd.DataFrame({"variant": variant, "seed_index": s, "lr": lr,
                                              "step": range(1, len(module.losses) + 1), "loss": module.losses}))
        write_json({"variants": cfg.variants, "n_seeds": cfg.n_seeds, "lrs": cfg.lrs, "lora": cfg.lora.model_dump(),
                    "adapted_layers": len(adapted), "sequences": int(len(seqs) // seqs.variant.nunique()),
                    "seq_len": int(seqs.n_tokens.iloc[0]),
                    "trainable_parameters": int(sum(t.numel() for t in lora_state(model).values())),
                    "tokens_seen_per_run": cfg.trainer.max_steps * cfg.batch_size * int(seqs.n_tokens.iloc[0])},
                   folder / "manifest.json")
    log = pd.concat(logs, ignore_index=True)
    write_parquet(log, paths.train_log)
    return {"runs": len(logs), "final_loss": float(log.groupby(["variant", "seed_index", "lr"]).loss.last().mean())}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
