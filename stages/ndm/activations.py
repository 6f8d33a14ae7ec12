"""Step ``activations``: the residual stream at the chosen site on the fitting prompts; the competence gate.

Fitting activations are taken from both the clean and the corrupted fitting prompts (the values a patch
can carry). The patching prompts' clean logit differences decide which of them are kept (positive only).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import read_parquet, save_safetensors, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.ndm.config import PAPER, TASKS, ActivationsConfig, load_activations
from stages.ndm.expectations import competence_suite, prompts_suite
from stages.ndm.lm import answer_ids, encode, same_length_batches
from stages.ndm.patching import last_position_residual, logit_difference


@dataclass(frozen=True)
class Paths:
    prompts: Path = inp("prompts")
    lm: Path = inp("SmolLM2-135M asset")
    activations: Path = out("fitting activations at the site (safetensors: x, task)")
    competence: Path = out("clean logit difference of every patching prompt, and whether it is kept (Parquet)")


@torch.no_grad()
def clean_logit_differences(model: Any, tokenizer: Any, prompts: pd.DataFrame, batch_size: int) -> np.ndarray:
    """Logit difference at the last position of each prompt's clean run (full forward pass)."""
    ids = [encode(tokenizer, t) for t in prompts.text]
    unembed = model.get_output_embeddings().weight
    out = np.zeros(len(ids))
    for rows, batch in same_length_batches(ids, batch_size):
        hidden = model.model(input_ids=batch, use_cache=False).last_hidden_state[:, -1, :]
        for j, i in enumerate(rows):
            p = prompts.iloc[i]
            ld = logit_difference(hidden[j], unembed, answer_ids(tokenizer, list(p.good)),
                                  answer_ids(tokenizer, list(p.bad)))
            out[i] = float(ld)
    return out


def run(cfg: ActivationsConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Fitting activations (clean and corrupted) and the patching prompts' competence table."""
    cap_threads(cfg.max_threads)
    prompts = read_parquet(paths.prompts)
    validate_table(prompts, "ndm.prompts", prompts_suite)
    model, tokenizer = load_causal_lm(paths.lm)
    n_layers = len(model.model.layers)
    if cfg.layer > n_layers:
        raise ValueError(f"layer {cfg.layer} exceeds the model's {n_layers} blocks")
    for p in prompts.itertuples():
        if len(encode(tokenizer, p.text)) != len(encode(tokenizer, p.corrupted)):
            raise ValueError(f"{p.prompt_id}: clean and corrupted prompts differ in token length")

    fit = prompts[prompts.split == "fit"]
    texts = fit.text.tolist() + fit.corrupted.tolist()
    tasks = fit.task.tolist() * 2
    ids = [encode(tokenizer, t) for t in texts]
    x = torch.zeros(len(ids), model.config.hidden_size)
    batches = list(same_length_batches(ids, cfg.batch_size))
    for rows, batch in tqdm(batches, desc=f"residual at layer {cfg.layer}", unit="batch"):
        x[rows] = last_position_residual(model, batch, cfg.layer).float()
    task_index = torch.tensor([TASKS.index(t) for t in tasks])
    save_safetensors({"x": x, "task": task_index}, paths.activations,
                     metadata={"layer": str(cfg.layer), "position": "last"})

    patch = prompts[prompts.split == "patch"].reset_index(drop=True)
    ld = clean_logit_differences(model, tokenizer, patch, cfg.batch_size)
    competence = pd.DataFrame({"prompt_id": patch.prompt_id, "task": patch.task, "clean_ld": ld, "kept": ld > 0})
    validate_table(competence, "ndm.competence", competence_suite)
    write_parquet(competence, paths.competence)
    kept = competence.groupby("task").kept.sum().to_dict()
    return {"fit_activations": len(x), **{f"kept_{t}": int(kept.get(t, 0)) for t in TASKS}}


main = Step(PAPER, "activations", run, load_activations, Paths)


if __name__ == "__main__":
    main()
