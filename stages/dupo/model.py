"""The one model for both tasks: a TinyGPT on characters, its text formats, decoding and scoring.

The same weights answer the primal question (problem → worked solution → ``#answer``) and the
dual question (problem with one number hidden + an answer → worked solution → ``#number``),
as in DuPO, where one LLM plays both roles.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from stages.core.io import InputError, load_safetensors
from stages.core.sampler import sample
from stages.core.tokenizer import SmallTokenizer
from stages.core.transformer import TinyGPT
from stages.dupo.config import ModelConfig
from stages.dupo.problems import dual_prompt, parse_answer, primal_prompt

TOKENIZER = "tokenizer.json"
WEIGHTS = "model.safetensors"


def build_model(spec: ModelConfig, vocab_size: int) -> TinyGPT:
    """The transformer of the configured size; refused if it exceeds ``max_params``."""
    lm = TinyGPT(vocab_size, spec.d_model, spec.n_layers, spec.n_heads, spec.max_len)
    n = sum(p.numel() for p in lm.parameters())
    if n > spec.max_params:
        raise ValueError(f"dupo.sft.model: {n:,} parameters exceed max_params={spec.max_params:,}")
    return lm


def load_model(folder: Path, spec: ModelConfig, name: str = WEIGHTS,
               tokenizer: Path | None = None) -> tuple[TinyGPT, SmallTokenizer]:
    """Weights (``folder/name``) and tokenizer (``folder``'s unless given); non-finite weights are refused."""
    tok = SmallTokenizer.load(tokenizer or Path(folder) / TOKENIZER)
    lm = build_model(spec, tok.vocab_size)
    state = load_safetensors(Path(folder) / name)
    try:
        lm.load_state_dict(state)
    except RuntimeError as err:
        raise InputError(f"{Path(folder) / name}: weights do not fit the model: {str(err).splitlines()[0]}") from None
    return lm.eval(), tok


def encode_pairs(tok: SmallTokenizer, prompts: Sequence[str], targets: Sequence[str],
                 max_len: int) -> tuple[Tensor, Tensor]:
    """Right-padded ``<bos> prompt target <eos>`` ids [B, T] and a mask [B, T] of the target tokens."""
    rows, masks = [], []
    for p, t in zip(prompts, targets, strict=True):
        pi, ti = tok.encode(p, add_bos=True), tok.encode(t, add_eos=True)
        if len(pi) + len(ti) > max_len:
            raise ValueError(f"example of {len(pi) + len(ti)} tokens exceeds max_len {max_len}: {p!r}")
        rows.append(pi + ti)
        masks.append([False] * len(pi) + [True] * len(ti))
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tok.pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, (r, m) in enumerate(zip(rows, masks, strict=True)):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(m)] = torch.tensor(m)
    return ids, mask


def target_logprobs(lm: TinyGPT, ids: Tensor, mask: Tensor) -> Tensor:
    """log π(token | prefix) of every token [B, T-1], zero outside the target mask (shifted by one)."""
    logp = lm(ids)[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
    return logp * mask[:, 1:].to(logp.dtype)


def sft_loss(lm: TinyGPT, ids: Tensor, mask: Tensor) -> Tensor:
    """Mean negative log-likelihood of the target tokens."""
    m = mask[:, 1:].to(torch.float32)
    return -(target_logprobs(lm, ids, mask)).sum() / m.sum().clamp_min(1.0)


def generate(lm: TinyGPT, tok: SmallTokenizer, prompts: Sequence[str], max_new: int, temperature: float,
             generator: torch.Generator | None = None, batch_size: int = 256) -> list[str]:
    """Decode a completion for each prompt (T = 0: greedy) with the shared KV-cache sampler."""
    outs: list[str] = []
    for start in range(0, len(prompts), batch_size):
        chunk = [tok.encode(p, add_bos=True) for p in prompts[start:start + batch_size]]
        new = max(1, min(max_new, lm.max_len - max(len(c) for c in chunk)))
        for ids in sample(lm, chunk, new, tok.eos_id, tok.pad_id, temperature, generator):
            outs.append(tok.decode(ids))
    return outs


def primal_outputs(lm: TinyGPT, tok: SmallTokenizer, problems: pd.DataFrame, max_new: int,
                   temperature: float = 0.0, generator: torch.Generator | None = None) -> list[str]:
    """The model's worked solution to each problem (greedy unless a temperature is given)."""
    return generate(lm, tok, [primal_prompt(t) for t in problems.text], max_new, temperature, generator)


def primal_accuracy(lm: TinyGPT, tok: SmallTokenizer, problems: pd.DataFrame, max_new: int) -> float:
    """Greedy exact-match accuracy of the parsed final answer."""
    outs = primal_outputs(lm, tok, problems, max_new)
    return float(np.mean([parse_answer(o) == a for o, a in zip(outs, problems.answer, strict=True)]))


def dual_accuracy(lm: TinyGPT, tok: SmallTokenizer, duals: pd.DataFrame, max_new: int) -> float:
    """Greedy accuracy of the dual task given the true answer (the reward model's competence)."""
    prompts = [dual_prompt(m, a) for m, a in zip(duals.masked_text, duals.answer, strict=True)]
    outs = generate(lm, tok, prompts, max_new, 0.0)
    return float(np.mean([parse_answer(o) == h for o, h in zip(outs, duals.hidden, strict=True)]))


def pack(prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    """Right-padded prompt+completion ids [B, T] and the completion-token mask [B, T] (sampled ids, eos kept)."""
    width = max(len(p) + len(c) for p, c in zip(prompts, completions, strict=True))
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        ids[i, :len(p) + len(c)] = torch.tensor(list(p) + list(c), dtype=torch.long)
        mask[i, len(p):len(p) + len(c)] = True
    return ids, mask
