"""Batched causal-LM scoring: per-token log-probabilities and predictive entropies.

Sequences are sorted by length and right-padded into batches; the decoder runs once per
batch and the output layer is applied only at the positions whose next token is
scored, in chunks, so a 49k-token vocabulary never materialises logits for the whole
batch. Works with any Hugging Face causal LM that exposes ``base_model`` (the decoder
stack with its final norm) and ``get_output_embeddings()`` (the LM head).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SequenceScores:
    """Scores of the tokens ``start..len-1`` of one sequence."""

    token_ids: np.ndarray
    logprobs: np.ndarray
    entropies: np.ndarray

    @property
    def total_logprob(self) -> float:
        """log p(x_start..x_end | x_<start)."""
        return float(self.logprobs.sum())


def _starts(start: int | Sequence[int], lengths: Sequence[int]) -> list[int]:
    starts = [start] * len(lengths) if isinstance(start, int) else list(start)
    if len(starts) != len(lengths):
        raise ValueError(f"got {len(starts)} start positions for {len(lengths)} sequences")
    for i, (s, n) in enumerate(zip(starts, lengths, strict=True)):
        if not 1 <= s <= n:
            raise ValueError(f"sequence {i}: start {s} must be in [1, {n}] (token 0 has no context)")
    return starts


def _head_scores(head: Any, hidden: Any, targets: Any, chunk: int) -> tuple[Any, Any]:
    """Log-prob of each target and entropy of each predictive distribution, ``chunk`` rows at a time."""
    import torch

    logprobs, entropies = [hidden.new_zeros(0)], [hidden.new_zeros(0)]
    for lo in range(0, hidden.shape[0], chunk):
        logp = torch.log_softmax(head(hidden[lo:lo + chunk]).float(), dim=-1)
        logprobs.append(logp.gather(1, targets[lo:lo + chunk, None])[:, 0])
        entropies.append(-(logp.exp() * logp).sum(dim=-1))
    return torch.cat(logprobs), torch.cat(entropies)


def score_sequences(model: Any, sequences: Sequence[Sequence[int]], start: int | Sequence[int] = 1,
                    batch_size: int = 8, head_chunk: int = 1024, progress: bool = False) -> list[SequenceScores]:
    """Score tokens ``start..`` of every sequence (log p(x_t | x_<t) and H(p(· | x_<t)), in nats)."""
    import torch
    from tqdm.auto import tqdm

    lengths = [len(s) for s in sequences]
    starts = _starts(start, lengths)
    decoder, head = model.base_model, model.get_output_embeddings()
    device = next(model.parameters()).device
    order = sorted(range(len(sequences)), key=lambda i: -lengths[i])
    results: list[SequenceScores | None] = [None] * len(sequences)
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    with torch.inference_mode():
        for batch in tqdm(batches, desc="scoring", unit="batch", disable=not progress):
            width = lengths[batch[0]]
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, :lengths[i]] = torch.as_tensor(sequences[i], dtype=torch.long)
                mask[row, :lengths[i]] = 1
            hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
            # hidden state at position t predicts token t + 1
            rows = [(row, i, torch.arange(starts[i] - 1, lengths[i] - 1)) for row, i in enumerate(batch)]
            picked = torch.cat([hidden[row, pos] for row, _, pos in rows])
            targets = torch.cat([ids[row, pos + 1] for row, _, pos in rows]).to(device)
            logprobs, entropies = _head_scores(head, picked, targets, head_chunk)
            offset = 0
            for row, i, pos in rows:
                n = len(pos)
                results[i] = SequenceScores(token_ids=ids[row, pos + 1].numpy(),
                                            logprobs=logprobs[offset:offset + n].cpu().numpy(),
                                            entropies=entropies[offset:offset + n].cpu().numpy())
                offset += n
    return [r for r in results if r is not None]


def perplexity(scores: Sequence[SequenceScores]) -> float:
    """exp of the mean negative log-prob over every scored token of every sequence."""
    total = sum(float(s.logprobs.sum()) for s in scores)
    count = sum(len(s.logprobs) for s in scores)
    if count == 0:
        raise ValueError("no scored tokens")
    return math.exp(-total / count)
