"""Attention-only transformers with relative-position attention, and the paper's construction.

The model class (Sec. 4): token one-hot embedding into a residual stream; L − 1 residual
multi-head attention layers; a final single-head attention whose values are
distributions, so the output is a mixture of next-token distributions. With weights set
by :func:`set_one_step_mirror_descent` a 3-layer model computes one step of mirror
descent exactly: layer 1's attention is the responsibilities γ_k(g), layer 2 averages
them over positions, layer 3's softmax gives λ̂ and mixes the rows of π*.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def offset_buckets(t: int, max_offset: int, device: torch.device | None = None) -> torch.Tensor:
    """The clipped relative offset min(i − j, max_offset) for j ≤ i (0 above the diagonal): shape (t, t)."""
    i = torch.arange(t, device=device)
    return (i[:, None] - i[None, :]).clamp(0, max_offset)


def offset_mass(attn: torch.Tensor, max_offset: int) -> torch.Tensor:
    """Attention mass of each query on each clipped offset: diagonals 0..max_offset−1, the rest last."""
    near = [F.pad(torch.diagonal(attn, offset=-o, dim1=-2, dim2=-1), (o, 0)) for o in range(max_offset)]
    near = torch.stack(near, dim=-1)
    return torch.cat([near, (1.0 - near.sum(dim=-1, keepdim=True)).clamp_min(0.0)], dim=-1)


class RelativeScores(nn.Module):
    """Attention weights a_ij ∝ exp((W_Q x_i)·(W_K x_j + r^K_{i−j}) / √d_h + b_{i−j}), j ≤ i."""

    def __init__(self, d_model: int, n_heads: int, d_head: int, max_offset: int) -> None:
        super().__init__()
        self.n_heads, self.d_head, self.max_offset = n_heads, d_head, max_offset
        self.scale = 1.0 / math.sqrt(d_head)
        self.query = nn.Linear(d_model, n_heads * d_head)
        self.key = nn.Linear(d_model, n_heads * d_head)
        self.rel_key = nn.Parameter(torch.zeros(n_heads, max_offset + 1, d_head))
        self.rel_bias = nn.Parameter(torch.zeros(n_heads, max_offset + 1))
        nn.init.normal_(self.rel_key, std=0.02)

    def forward(self, x: torch.Tensor, buckets: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.query(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
        k = self.key(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
        content = q @ k.transpose(-2, -1)
        rel = torch.gather(q @ self.rel_key.transpose(-2, -1), -1, buckets.expand(b, self.n_heads, t, t))
        future = torch.full((t, t), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        return F.softmax((content + rel) * self.scale + self.rel_bias[:, buckets] + future, dim=-1)


class RelativeAttention(nn.Module):
    """A residual attention layer; values W_V x_j + r^V_{i−j} carry content and relative position."""

    def __init__(self, d_model: int, n_heads: int, d_head: int, max_offset: int) -> None:
        super().__init__()
        self.scores = RelativeScores(d_model, n_heads, d_head, max_offset)
        self.value = nn.Linear(d_model, n_heads * d_head)
        self.rel_value = nn.Parameter(torch.zeros(n_heads, max_offset + 1, d_head))
        self.out = nn.Linear(n_heads * d_head, d_model, bias=False)
        nn.init.normal_(self.rel_value, std=0.02)

    def forward(self, x: torch.Tensor, buckets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, _ = x.shape
        h, d = self.scores.n_heads, self.scores.d_head
        attn = self.scores(x, buckets)
        v = self.value(x).view(b, t, h, d).transpose(1, 2)
        mixed = attn @ v + offset_mass(attn, self.scores.max_offset) @ self.rel_value
        return self.out(mixed.transpose(1, 2).reshape(b, t, h * d)), attn


class AttentionOnlyTransformer(nn.Module):
    """L layers: L − 1 residual relative-attention layers, then the mixture-of-distributions readout."""

    def __init__(self, vocab_size: int, n_layers: int, d_model: int, n_heads: int, d_head: int,
                 max_offset: int) -> None:
        super().__init__()
        if n_layers < 2:
            raise ValueError("an attention-only model needs at least 2 layers (one residual + readout)")
        self.max_offset = max_offset
        self.embed = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList(RelativeAttention(d_model, n_heads, d_head, max_offset)
                                    for _ in range(n_layers - 1))
        self.readout_scores = RelativeScores(d_model, 1, d_head, max_offset)
        self.readout_values = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Next-token log-probabilities (batch, time, vocab); optionally every layer's attention."""
        buckets = offset_buckets(tokens.shape[1], self.max_offset, tokens.device)
        x = self.embed(tokens)
        maps = []
        for layer in self.layers:
            delta, attn = layer(x, buckets)
            x = x + delta
            maps.append(attn)
        attn = self.readout_scores(x, buckets)[:, 0]
        maps.append(attn[:, None])
        probs = attn @ F.softmax(self.readout_values(x), dim=-1)
        logp = torch.log(probs.clamp_min(torch.finfo(probs.dtype).tiny))
        return (logp, maps) if return_attention else logp


@torch.no_grad()
def set_one_step_mirror_descent(model: AttentionOnlyTransformer, pi: np.ndarray, m: int, eta: float,
                                big: float = 40.0) -> None:
    """Sec. 4 construction: hand-set weights so the 3-layer model predicts with one MD step.

    Residual stream subspaces: token one-hot [0, q), γ [q, q+m), γ̄ [q+m, q+2m), flag q+2m.
    """
    q = pi.shape[0]
    tok, gam, gbar, flag = 0, q, q + m, q + 2 * m
    l1, l2 = model.layers[0], model.layers[1]
    d_head = l1.scores.d_head
    if len(model.layers) != 2 or model.embed.embedding_dim < q + 2 * m + 1 or l1.scores.n_heads < 2 \
            or d_head < max(q, m) or model.max_offset < m + 1:
        raise ValueError("the construction needs 3 layers, d_model ≥ q+2m+1, ≥ 2 heads, d_head ≥ max(q, m), "
                         "max_offset ≥ m+1")
    for p in model.parameters():
        p.zero_()
    model.embed.weight[:, tok:tok + q] = torch.eye(q)
    log_pi = torch.as_tensor(np.log(pi), dtype=model.embed.weight.dtype)
    root = math.sqrt(d_head)

    # layer 1, head 0: score(i, j) = log π*(y_j, y_i) on offsets 1..m, so attention = γ_i(offset);
    # the relative value of offset g writes a one-hot of g into γ
    s1 = l1.scores
    s1.query.weight[0:q, tok:tok + q] = torch.eye(q)
    s1.key.weight[0:q, tok:tok + q] = log_pi.T * root
    s1.rel_bias[0, :] = -big
    s1.rel_bias[0, 1:m + 1] = 0.0
    for g in range(1, m + 1):
        l1.rel_value[0, g, g - 1] = 1.0
        l1.out.weight[gam + g - 1, g - 1] = 1.0
    # layer 1, head 1: attends to offset m exactly when it exists: flag = 1{i ≥ m}
    s1.rel_bias[1, :] = -big
    s1.rel_bias[1, m] = 0.0
    l1.rel_value[1, m, 0] = 1.0
    l1.out.weight[flag, d_head] = 1.0

    # layer 2, head 0: weights ∝ exp(big · flag_j): the average of γ over positions with a full history
    s2 = l2.scores
    s2.query.bias[0] = 1.0
    s2.key.weight[0, flag] = big * root
    for g in range(m):
        l2.value.weight[g, gam + g] = 1.0
        l2.out.weight[gbar + g, g] = 1.0

    # readout: score(i, i − o) = η m γ̄_i(o + 1) for offsets o < m, so attention = λ̂; values = π*(y_j, ·)
    r = model.readout_scores
    r.query.weight[0:m, gbar:gbar + m] = eta * m * torch.eye(m) * root
    r.rel_key[0, :m, :m] = torch.eye(m)
    r.rel_bias[0, :] = -big
    r.rel_bias[0, :m] = 0.0
    model.readout_values.weight[:, tok:tok + q] = log_pi.T
