"""Step ``sft``: supervised warm start of the policy on noisy summaries; it is also PPO's KL reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stages.core.io import atomic_dir, save_safetensors, write_json
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.tokenizer import SmallTokenizer
from stages.text2grad.config import PAPER, SftConfig, load_sft
from stages.text2grad.io import read_tables
from stages.text2grad.models import policy_prompt
from stages.text2grad.training import build_lm, fit, sequences


@dataclass(frozen=True)
class Paths:
    sources: Path = inp("sources")
    outputs: Path = inp("noisy summaries (split sft)")
    tokenizer: Path = inp("tokenizer")
    models: Path = out("folder: policy.safetensors, manifest.json")


def run(cfg: SftConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Fit the policy LM on (source, noisy summary) pairs."""
    cap_threads(cfg.max_threads)
    _, outputs = read_tables(paths)
    tok = SmallTokenizer.load(paths.tokenizer)
    sft = outputs[outputs.split == "sft"]
    prefixes = [policy_prompt(tok, s) for s in sft.source]
    targets = [[*tok.encode(o), tok.eos_id] for o in sft.output]
    tokens, mask = sequences(prefixes, targets, tok.pad_id, cfg.model.max_len)
    seed = derive_seed(ctx.seed, PAPER, "sft") % 2**32
    lm = build_lm(cfg.model, tok.vocab_size, seed)
    losses = fit(lm, tokens, mask, cfg.batch_size, cfg.lr, cfg.trainer, seed)
    with atomic_dir(paths.models) as folder:
        save_safetensors(dict(lm.state_dict()), folder / "policy.safetensors")
        write_json({"model": cfg.model.model_dump(), "vocab_size": tok.vocab_size, "steps": len(losses),
                    "final_loss": float(np.mean(losses[-20:]))}, folder / "manifest.json")
    return {"final_loss": float(np.mean(losses[-20:]))}


main = Step(PAPER, "sft", run, load_sft, Paths)


if __name__ == "__main__":
    main()
