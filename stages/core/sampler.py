"""Autoregressive sampling from a :class:`~stages.core.transformer.TinyGPT` with a key/value cache.

Shared by the papers that sample from a small causal LM trained here (dupo first). The cache
holds each block's keys and values, so every new token costs one position, not a forward pass
over the whole sequence; the maths is exactly the model's own forward (same weights, same
order of operations per position). Prompts of different lengths are left-padded and each row
carries its own positions counted from its first real token, so a padded row gives the same
numbers as that row alone. :func:`sample_without_cache` recomputes the full forward at every
step and is the reference the cache is tested against.

Usage::

    from stages.core.sampler import sample

    outs = sample(lm, prompts, max_new=40, eos_id=2, pad_id=0, temperature=1.0, generator=gen)
    # one list of new token ids per prompt, ending with eos_id unless max_new was reached
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch.nn import functional as F

from stages.core.transformer import TinyGPT

MASKED_SCORE = -1e9  # not -inf, so a query row whose keys are all padding stays finite


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """(ids [B, P] left-padded, positions [B, P] counted from each row's first token, pad mask [B, P])."""
    if not rows or min(len(r) for r in rows) == 0:
        raise ValueError("every prompt needs at least one token")
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.as_tensor(list(r), dtype=torch.long)
    offset = torch.tensor([width - len(r) for r in rows])
    cols = torch.arange(width)
    return ids, (cols[None] - offset[:, None]).clamp_min(0), cols[None] < offset[:, None]


class CachedDecoder:
    """Incremental decoding of a TinyGPT: feed the prompts once, then one token per row at a time."""

    def __init__(self, lm: TinyGPT, prompts: Sequence[Sequence[int]], pad_id: int) -> None:
        self.lm = lm
        ids, positions, self.key_pad = left_pad(prompts, pad_id)
        self.cache: list[tuple[Tensor, Tensor]] = []
        self.next_pos = positions[:, -1] + 1
        self.last = self._step(ids, positions)

    def _step(self, ids: Tensor, positions: Tensor) -> Tensor:
        """Feed ``ids`` [B, n] at ``positions``; the next-token log-probs [B, V] after the last one."""
        lm, n = self.lm, ids.shape[1]
        x = lm.tok(ids) + lm.pos(positions)
        total = self.key_pad.shape[1]
        future = torch.ones(n, total, dtype=torch.bool).triu(total - n + 1)
        masked = future[None, None] | self.key_pad[:, None, None, :]
        new_cache = []
        for layer, block in enumerate(lm.blocks):
            attn = block.attn
            b, d = x.shape[0], x.shape[2]
            q, k, v = attn.qkv(block.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, n, attn.n_heads, d // attn.n_heads).transpose(1, 2) for z in (q, k, v))
            if self.cache:
                k, v = torch.cat([self.cache[layer][0], k], 2), torch.cat([self.cache[layer][1], v], 2)
            new_cache.append((k, v))
            scores = (q @ k.transpose(-2, -1) / math.sqrt(d // attn.n_heads)).masked_fill(masked, MASKED_SCORE)
            x = x + attn.proj((F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n, d))
            x = x + block.mlp(block.ln2(x))
        self.cache = new_cache
        return F.log_softmax(lm.head(lm.ln(x[:, -1])), dim=-1)

    def feed(self, tokens: Tensor) -> Tensor:
        """Append one token per row [B]; the next-token log-probs [B, V]."""
        self.key_pad = torch.cat([self.key_pad, torch.zeros(len(tokens), 1, dtype=torch.bool)], 1)
        self.last = self._step(tokens[:, None], self.next_pos[:, None])
        self.next_pos = self.next_pos + 1
        return self.last


def draw(logp: Tensor, temperature: float, generator: torch.Generator | None) -> Tensor:
    """One token per row from log-probs [B, V]: softmax(logp / T) sampling, or argmax at T = 0."""
    if temperature > 0:
        return torch.multinomial((logp / temperature).softmax(-1), 1, generator=generator).squeeze(-1)
    return logp.argmax(-1)


def _check_length(lm: TinyGPT, prompts: Sequence[Sequence[int]], max_new: int) -> None:
    if max_new < 1:
        raise ValueError(f"max_new must be at least 1, got {max_new}")
    if max_new + max(len(p) for p in prompts) > lm.max_len:
        raise ValueError(f"prompt + {max_new} new tokens exceed the model's max_len {lm.max_len}")


def _collect(out: Tensor, n_out: Tensor) -> list[list[int]]:
    return [out[i, :int(n_out[i])].tolist() for i in range(len(out))]


@torch.no_grad()
def sample(lm: TinyGPT, prompts: Sequence[Sequence[int]], max_new: int, eos_id: int, pad_id: int,
           temperature: float, generator: torch.Generator | None = None) -> list[list[int]]:
    """Continue each prompt until ``eos_id`` or ``max_new`` tokens (T = 0: greedy), with the KV cache; eos kept."""
    _check_length(lm, prompts, max_new)
    dec = CachedDecoder(lm, prompts, pad_id)
    logp = dec.last
    out = torch.full((len(prompts), max_new), pad_id, dtype=torch.long)
    n_out = torch.zeros(len(prompts), dtype=torch.long)
    active = torch.ones(len(prompts), dtype=torch.bool)
    for step in range(max_new):
        nxt = draw(logp, temperature, generator)
        out[active, step] = nxt[active]
        n_out += active.long()
        active = active & (nxt != eos_id)
        if not active.any() or step == max_new - 1:
            break
        logp = dec.feed(nxt)
    return _collect(out, n_out)


@torch.no_grad()
def sample_without_cache(lm: TinyGPT, prompts: Sequence[Sequence[int]], max_new: int, eos_id: int, pad_id: int,
                         temperature: float, generator: torch.Generator | None = None) -> list[list[int]]:
    """The reference for :func:`sample`: the model's full forward over the whole sequence at every step.

    Prompts must have equal lengths (TinyGPT's forward has no padding mask); draws are taken in
    the same order as :func:`sample`, so the same generator state gives the same tokens.
    """
    _check_length(lm, prompts, max_new)
    if len({len(p) for p in prompts}) != 1:
        raise ValueError("sample_without_cache needs prompts of equal length")
    seqs = torch.tensor([list(p) for p in prompts], dtype=torch.long)
    out = torch.full((len(prompts), max_new), pad_id, dtype=torch.long)
    n_out = torch.zeros(len(prompts), dtype=torch.long)
    active = torch.ones(len(prompts), dtype=torch.bool)
    for step in range(max_new):
        nxt = draw(lm(seqs)[:, -1], temperature, generator)
        out[active, step] = nxt[active]
        n_out += active.long()
        active = active & (nxt != eos_id)
        if not active.any() or step == max_new - 1:
            break
        seqs = torch.cat([seqs, nxt[:, None]], 1)
    return _collect(out, n_out)
