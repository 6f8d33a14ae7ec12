"""Predictive uncertainty and its reduction: the entropy side of EntropyLong (§3.1 and §3.3).

Entropy H_t of the model's next-token distribution at each document position; the
adaptive threshold τ = μ_H + α·σ_H per document (§3.1); the information gain
ΔI = (H − H′)/H of a context that, prepended, lowers the entropy at a position to H′,
and the keep rule ΔI > ε (§3.3, model-in-the-loop verification), here also required to clear
the ΔI that random pool chunks give at the same position (a null the paper does not use).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def predictive_entropy(probs: np.ndarray) -> np.ndarray:
    """H(p) = −Σ_v p_v log p_v in nats along the last axis (Eq. 1), with 0·log 0 = 0."""
    p = np.asarray(probs, dtype=float)
    logp = np.log(np.where(p > 0, p, 1.0))
    return -(p * logp).sum(axis=-1)


def entropy_threshold(entropies: np.ndarray, alpha: float) -> float:
    """τ = μ_H + α·σ_H over one document's token entropies (Eq. 2, population σ)."""
    h = np.asarray(entropies, dtype=float)
    return float(h.mean() + alpha * h.std())


def entropy_zscores(entropies: np.ndarray) -> np.ndarray:
    """(H_t − μ_H)/σ_H: position t passes the threshold of Eq. 2 at α iff its z-score exceeds α."""
    h = np.asarray(entropies, dtype=float)
    sd = h.std()
    return (h - h.mean()) / sd if sd > 0 else np.zeros_like(h)


def select_positions(entropies: np.ndarray, alpha: float, min_position: int, max_positions: int,
                     min_separation: int, first_position: int = 1) -> list[int]:
    """High-entropy positions: H_t > τ(α) (Eq. 2), highest first, ≥ ``min_separation`` apart, at most ``max_positions``.

    ``entropies[i]`` is the entropy of the prediction of token ``first_position + i``;
    positions before ``min_position`` are skipped (their query window is cut short).
    """
    z = entropy_zscores(entropies)
    order = np.argsort(-np.asarray(entropies, dtype=float), kind="stable")
    picked: list[int] = []
    for i in order:
        if z[i] <= alpha or len(picked) >= max_positions:
            break
        pos = int(i) + first_position
        if pos >= min_position and all(abs(pos - q) >= min_separation for q in picked):
            picked.append(pos)
    return sorted(picked)


def information_gain(h_before: np.ndarray | float, h_after: np.ndarray | float) -> np.ndarray:
    """ΔI = (H − H′)/H, the relative entropy reduction from a prepended context (Eq. 4); needs H > 0."""
    h, h2 = np.asarray(h_before, dtype=float), np.asarray(h_after, dtype=float)
    if np.any(h <= 0):
        raise ValueError("information gain needs a strictly positive entropy before the context")
    return (h - h2) / h


def keep_context(delta_i: np.ndarray | float, epsilon: float) -> np.ndarray:
    """The verification rule: keep a context when ΔI > ε (Eq. 5)."""
    return np.asarray(delta_i, dtype=float) > epsilon


def null_threshold(null_delta_i: np.ndarray, quantile: float) -> float:
    """The ``quantile`` of ΔI that random pool chunks give at one position: the noise level of Eq. 5's test."""
    d = np.asarray(null_delta_i, dtype=float)
    if d.size == 0:
        raise ValueError("the ΔI null needs at least one random chunk at the position")
    return float(np.quantile(d, quantile))


def keep_verified(delta_i: np.ndarray | float, epsilon: float, null_level: np.ndarray | float) -> np.ndarray:
    """Keep a context when ΔI > ε (Eq. 5) AND ΔI exceeds the null quantile of random chunks at the same position."""
    return keep_context(delta_i, epsilon) & (np.asarray(delta_i, dtype=float) > np.asarray(null_level, dtype=float))


def entropies_at_positions(model: Any, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                           batch_size: int = 8, progress: bool = False) -> list[np.ndarray]:
    """H of the prediction of token ``p`` of each sequence, for every ``p`` in its positions (nats).

    One decoder pass per sequence (right-padded, length-sorted batches); the output layer
    runs only at the positions asked for, so one forward pass per (document, candidate)
    gives the entropies at all of that document's selected positions (exact by causality).
    Any causal LM exposing ``base_model`` and ``get_output_embeddings()`` works.
    """
    import torch
    from tqdm.auto import tqdm

    if len(sequences) != len(positions):
        raise ValueError(f"{len(sequences)} sequences but {len(positions)} position lists")
    for i, (seq, pos) in enumerate(zip(sequences, positions, strict=True)):
        if any(not 1 <= p < len(seq) for p in pos):
            raise ValueError(f"sequence {i}: positions must lie in [1, {len(seq) - 1}], got {list(pos)}")
    decoder, head = model.base_model, model.get_output_embeddings()
    device = next(model.parameters()).device
    order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i]))
    out: list[np.ndarray] = [np.zeros(0)] * len(sequences)
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    with torch.inference_mode():
        for batch in tqdm(batches, desc="verifying", unit="batch", disable=not progress):
            width = len(sequences[batch[0]])
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, :len(sequences[i])] = torch.as_tensor(list(sequences[i]), dtype=torch.long)
                mask[row, :len(sequences[i])] = 1
            hidden = decoder(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
            # the hidden state at p − 1 predicts token p
            picked = torch.cat([hidden[row, torch.as_tensor(list(positions[i]), dtype=torch.long) - 1]
                                for row, i in enumerate(batch)])
            logp = torch.log_softmax(head(picked).float(), dim=-1)
            ent = (-(logp.exp() * logp).sum(-1)).cpu().numpy().astype(float)
            offset = 0
            for i in batch:
                n = len(positions[i])
                out[i] = ent[offset:offset + n]
                offset += n
    return out
