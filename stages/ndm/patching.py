"""Activation patching at one layer and the last position of a causal LM, reusing the clean run's keys/values.

The residual stream "at layer L" is the output of decoder block L−1 (``hidden_states[L]`` in the
Hugging Face convention). Patching only the last position leaves every earlier position of the clean
run unchanged, so each patched run is one token's forward pass over the cached keys/values of the
clean prefix; many patched variants of one prompt run as one batch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch


class _Stop(Exception):
    """Raised by a capture hook to end a forward pass once the patched layer is reached."""


@contextmanager
def layer_hook(model: Any, layer: int, fn: Any) -> Iterator[None]:
    """Register ``fn(output) -> output | None`` on the output of decoder block ``layer − 1``."""
    if not 1 <= layer <= len(model.model.layers):
        raise ValueError(f"layer must be in 1..{len(model.model.layers)}, got {layer}")
    handle = model.model.layers[layer - 1].register_forward_hook(lambda _m, _i, out: fn(out))
    try:
        yield
    finally:
        handle.remove()


@torch.no_grad()
def last_position_residual(model: Any, input_ids: torch.Tensor, layer: int) -> torch.Tensor:
    """The residual stream at ``layer`` and the last position, (batch, d); the pass stops at that layer."""
    captured: list[torch.Tensor] = []

    def grab(out: torch.Tensor) -> None:
        captured.append(out[:, -1, :].clone())
        raise _Stop

    with layer_hook(model, layer, grab):
        try:
            model.model(input_ids=input_ids, use_cache=False)
        except _Stop:
            pass
    return captured[0]


def logit_difference(final_hidden: torch.Tensor, unembed: torch.Tensor, good: Sequence[int],
                     bad: Sequence[int]) -> torch.Tensor:
    """Mean logit of the right answers minus mean logit of the wrong ones, from the final (normed) hidden state."""
    logits_good = final_hidden @ unembed[list(good)].T
    logits_bad = final_hidden @ unembed[list(bad)].T
    return logits_good.mean(dim=-1) - logits_bad.mean(dim=-1)


@torch.no_grad()
def prefix_cache(model: Any, input_ids: torch.Tensor) -> Any:
    """Keys/values of every position but the last (one prompt, batch 1)."""
    return model.model(input_ids=input_ids[:, :-1], use_cache=True).past_key_values


@torch.no_grad()
def patched_last_position(model: Any, input_ids: torch.Tensor, cache: Any, layer: int,
                          residuals: torch.Tensor | None, good: Sequence[int],
                          bad: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Logit differences when the last position's residual at ``layer`` is replaced by each row of ``residuals``.

    ``residuals`` (B, d) or None (no patch, batch 1). Returns the logit differences (B,) and the residual
    that the unpatched run had there (d,). The prefix cache is copied, never changed.
    """
    batch = 1 if residuals is None else len(residuals)
    past = copy.deepcopy(cache)
    if batch > 1:
        past.batch_repeat_interleave(batch)
    seen: list[torch.Tensor] = []

    def patch(out: torch.Tensor) -> torch.Tensor:
        seen.append(out[0, -1, :].clone())
        if residuals is None:
            return out
        out = out.clone()
        out[:, -1, :] = residuals.to(out.dtype)
        return out

    last = input_ids[:, -1:].expand(batch, 1)
    with layer_hook(model, layer, patch):
        hidden = model.model(input_ids=last, cache=past, use_cache=True).last_hidden_state[:, -1, :]
    unembed = model.get_output_embeddings().weight
    return logit_difference(hidden, unembed, good, bad), seen[0]


def subspace_patches(clean: torch.Tensor, corrupted: torch.Tensor, rotation: torch.Tensor,
                     sizes: Sequence[int]) -> torch.Tensor:
    """One patched residual per subspace S: h_clean + P_S (h_corrupted − h_clean), P_S = R_S R_Sᵀ."""
    delta = (corrupted - clean).to(rotation.dtype)
    coords = delta @ rotation  # (d,) in the rotated basis
    rows = []
    start = 0
    for size in sizes:
        part = rotation[:, start:start + size] @ coords[start:start + size]
        rows.append(clean + part.to(clean.dtype))
        start += size
    return torch.stack(rows)
