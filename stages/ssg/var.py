"""The next-scale prediction transformer of a VAR model (Tian et al., 2024), class-conditional.

The sequence holds one position per token of every scale, coarse first. Positions of scale 1 read the class
embedding (the start token); positions of scale k ≥ 2 read f̂ of scales < k area-downsampled to s_k × s_k
(:func:`stages.ssg.multiscale_vq.next_scale_inputs`). Attention is block-causal (a position sees every
position of its own and coarser scales), and the logits at scale k's positions predict the codes r_k.
The blocks are ``stages.core.transformer.Block`` with the block-causal mask in place of the causal one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from stages.core.io import load_safetensors, read_json
from stages.core.transformer import Block, SelfAttention


def scale_of_position(scales: list[int]) -> torch.Tensor:
    """The scale index k of every position of the flattened sequence (length Σ s_k²)."""
    return torch.cat([torch.full((s * s,), k, dtype=torch.long) for k, s in enumerate(scales)])


def block_causal_mask(scales: list[int]) -> torch.Tensor:
    """(L, L) True where attention is forbidden: a query at scale a may read keys at scales b ≤ a only."""
    level = scale_of_position(scales)
    return level[None, :] > level[:, None]


class BlockCausalAttention(SelfAttention):
    """The core self-attention with a fixed block-causal mask over the (prefix of the) sequence."""

    def __init__(self, d_model: int, n_heads: int, mask: torch.Tensor) -> None:
        super().__init__(d_model, n_heads, causal=False)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~self.mask[:t, :t])
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class NextScaleTransformer(nn.Module):
    """Class token + scale inputs → block-causal core blocks → logits over the codebook at every position."""

    def __init__(self, codebook_size: int, code_dim: int, n_classes: int, scales: list[int], d_model: int,
                 n_layers: int, n_heads: int) -> None:
        super().__init__()
        self.scales, self.n_classes = list(scales), n_classes
        length = sum(s * s for s in scales)
        self.class_emb = nn.Embedding(n_classes + 1, d_model)  # the last row is the dropped label (guidance)
        self.word_embed = nn.Linear(code_dim, d_model)
        self.pos = nn.Parameter(torch.randn(length, d_model) * 0.02)
        self.level_emb = nn.Embedding(len(scales), d_model)
        self.register_buffer("level", scale_of_position(scales), persistent=False)
        mask = block_causal_mask(scales)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            block = Block(d_model, n_heads, causal=False)
            block.attn = BlockCausalAttention(d_model, n_heads, mask)
            self.blocks.append(block)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, codebook_size)

    @property
    def null_class(self) -> int:
        """The label id of the unconditional branch."""
        return self.n_classes

    def forward(self, labels: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for the first T = s_1² + inputs.shape[1] positions; inputs (B, T − s_1², D)."""
        c = self.class_emb(labels)[:, None]
        first = c.expand(-1, self.scales[0] ** 2, -1)
        x = torch.cat([first, self.word_embed(inputs)], dim=1)
        t = x.shape[1]
        x = x + self.pos[:t] + self.level_emb(self.level[:t]) + c
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))

    def forward_cached(self, labels: torch.Tensor, new_inputs: torch.Tensor,
                       cache: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Logits of the next positions only, reusing the keys and values of earlier ones (``cache``, one (k, v) per
        block, extended in place); equals the matching rows of :meth:`forward` on the whole prefix.

        The first call (empty cache) adds the class positions of scale 1 before ``new_inputs`` (B, t, D).
        """
        c = self.class_emb(labels)[:, None]
        start = cache[0][0].shape[2] if cache else 0
        x = self.word_embed(new_inputs)
        if start == 0:
            x = torch.cat([c.expand(-1, self.scales[0] ** 2, -1), x], dim=1)
        b, t, d = x.shape
        x = x + self.pos[start:start + t] + self.level_emb(self.level[start:start + t]) + c
        for i, block in enumerate(self.blocks):
            attn = block.attn
            q, k, v = attn.qkv(block.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, attn.n_heads, d // attn.n_heads).transpose(1, 2) for z in (q, k, v))
            if i < len(cache):
                k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)
                cache[i] = (k, v)
            else:
                cache.append((k, v))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=~attn.mask[start:start + t, :start + t])
            x = x + attn.proj(out.transpose(1, 2).reshape(b, t, d))
            x = x + block.mlp(block.ln2(x))
        return self.head(self.ln(x))


def load_var(folder: Path, seed_index: int) -> tuple[NextScaleTransformer, dict[str, Any]]:
    """One seed's trained transformer (``var_s<i>.safetensors``) from the train folder, eval mode, and the manifest."""
    m = read_json(Path(folder) / "manifest.json")
    model = NextScaleTransformer(m["codebook_size"], m["code_dim"], m["n_classes"], m["scales"], m["d_model"],
                                 m["n_layers"], m["n_heads"])
    model.load_state_dict(load_safetensors(Path(folder) / f"var_s{seed_index}.safetensors"))
    return model.eval(), m
