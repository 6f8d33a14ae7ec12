"""The policy (TinyGPT + value head), the generative reward model's sequence format, batched decoding.

Sequences are right-padded: with causal attention, padding after a row's end never
changes that row's earlier positions, so rows of different lengths decode together
(each row writes its next token at its own length; no cache, no pad mask needed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from stages.core.tokenizer import SmallTokenizer
from stages.core.transformer import TinyGPT
from stages.text2grad.critic import SCORE_WORDS

SEP, CRIT, SCORE = "<sep>", "<crit>", "<score>"
LABEL_TOKENS = {v: f"<{w}>" for v, w in SCORE_WORDS.items()}
EXTRA_SPECIALS = (SEP, CRIT, SCORE, *LABEL_TOKENS.values())


def trunk(lm: TinyGPT, tokens: Tensor) -> Tensor:
    """TinyGPT's hidden states before the readout (its forward, stopped after the final norm)."""
    x = lm.tok(tokens) + lm.pos(torch.arange(tokens.shape[1], device=tokens.device))
    for block in lm.blocks:
        x = block(x)
    return lm.ln(x)


class PolicyWithValue(nn.Module):
    """Causal LM policy with a scalar value head on the trunk's features (PPO's actor-critic).

    The value head reads the features detached: the value regression (returns of several units)
    would otherwise dominate the clipped gradient norm and pull the shared trunk away from the policy.
    """

    def __init__(self, lm: TinyGPT, d_model: int) -> None:
        super().__init__()
        self.lm = lm
        self.value_head = nn.Linear(d_model, 1)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """(next-token log-probs [B, T, V], state values [B, T])."""
        h = trunk(self.lm, tokens)
        return F.log_softmax(self.lm.head(h), dim=-1), self.value_head(h.detach()).squeeze(-1)


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int, width: int | None = None) -> Tensor:
    """Right-padded LongTensor of id rows."""
    width = width or max(len(r) for r in rows)
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, :len(r)] = torch.as_tensor(list(r), dtype=torch.long)
    return out


def gather_token_logprobs(logp: Tensor, tokens: Tensor) -> Tensor:
    """log π(y_t | y_<t) for t ≥ 1, shape [B, T−1] (position t−1 predicts token t)."""
    return logp[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)


def left_pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """(ids [B, P] left-padded, positions [B, P] counted from each row's first token, pad mask [B, P])."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.as_tensor(list(r), dtype=torch.long)
    offset = torch.tensor([width - len(r) for r in rows])
    cols = torch.arange(width)
    return ids, (cols[None] - offset[:, None]).clamp_min(0), cols[None] < offset[:, None]


class Decoder:
    """Incremental decoding of a TinyGPT with a key/value cache (same weights and maths as its forward).

    Rows are left-padded and carry their own positions; padded keys are masked with a large
    negative score (not −inf, so a padded query row stays finite).
    """

    def __init__(self, lm: TinyGPT, prompts: Sequence[Sequence[int]], pad_id: int) -> None:
        self.lm = lm
        ids, positions, self.key_pad = left_pad(prompts, pad_id)
        self.cache: list[tuple[Tensor, Tensor]] = []
        self.next_pos = positions[:, -1] + 1
        self.last = self._step(ids, positions)

    def _step(self, ids: Tensor, positions: Tensor) -> Tensor:
        """Feed ``ids`` [B, n] at ``positions``; return the log-probs of the next token after the last one."""
        lm, n = self.lm, ids.shape[1]
        x = lm.tok(ids) + lm.pos(positions)
        total = self.key_pad.shape[1]
        causal = torch.ones(n, total, dtype=torch.bool).triu(total - n + 1)
        masked = causal[None, None] | self.key_pad[:, None, None, :]
        new_cache = []
        for layer, block in enumerate(lm.blocks):
            attn = block.attn
            b, d = x.shape[0], x.shape[2]
            q, k, v = attn.qkv(block.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, n, attn.n_heads, d // attn.n_heads).transpose(1, 2) for z in (q, k, v))
            if self.cache:
                k, v = torch.cat([self.cache[layer][0], k], 2), torch.cat([self.cache[layer][1], v], 2)
            new_cache.append((k, v))
            scores = (q @ k.transpose(-2, -1) / math.sqrt(d // attn.n_heads)).masked_fill(masked, -1e9)
            x = x + attn.proj((F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n, d))
            x = x + block.mlp(block.ln2(x))
        self.cache = new_cache
        return F.log_softmax(lm.head(lm.ln(x[:, -1])), dim=-1)

    def feed(self, tokens: Tensor) -> Tensor:
        """Append one token per row; return the next-token log-probs [B, V]."""
        self.key_pad = torch.cat([self.key_pad, torch.zeros(len(tokens), 1, dtype=torch.bool)], 1)
        self.last = self._step(tokens[:, None], self.next_pos[:, None])
        self.next_pos = self.next_pos + 1
        return self.last


@torch.no_grad()
def sample(lm: TinyGPT, prompts: Sequence[Sequence[int]], max_new: int, eos_id: int, pad_id: int,
           temperature: float, generator: torch.Generator | None) -> list[list[int]]:
    """Continue each prompt until ``<eos>`` or ``max_new`` tokens (temperature 0 = greedy); eos kept."""
    if max_new + max(len(p) for p in prompts) > lm.max_len:
        raise ValueError(f"prompt + {max_new} new tokens exceed the model's max_len {lm.max_len}")
    dec = Decoder(lm, prompts, pad_id)
    logp = dec.last
    out = torch.full((len(prompts), max_new), pad_id, dtype=torch.long)
    n_out = torch.zeros(len(prompts), dtype=torch.long)
    active = torch.ones(len(prompts), dtype=torch.bool)
    for step in range(max_new):
        if temperature > 0:
            nxt = torch.multinomial((logp / temperature).softmax(-1), 1, generator=generator).squeeze(-1)
        else:
            nxt = logp.argmax(-1)
        out[active, step] = nxt[active]
        n_out += active.long()
        active = active & (nxt != eos_id)
        if not active.any() or step == max_new - 1:
            break
        logp = dec.feed(nxt)
    return [out[i, :int(n_out[i])].tolist() for i in range(len(prompts))]


def policy_prompt(tok: SmallTokenizer, source: str) -> list[int]:
    """``<bos> source <sep>``: what the policy reads before it summarises."""
    return [tok.bos_id, *tok.encode(source), tok.token_id(SEP)]


@dataclass(frozen=True)
class RewardFormat:
    """Reward-model layout: ``<bos> source <sep> output [<crit> critique] <score> labels <eos>``."""

    tok: SmallTokenizer
    with_critique: bool

    def prefix(self, source: str, output: str) -> list[int]:
        """What the reward model reads before it writes (critique, then scores)."""
        ids = [self.tok.bos_id, *self.tok.encode(source), self.tok.token_id(SEP), *self.tok.encode(output)]
        return [*ids, self.tok.token_id(CRIT)] if self.with_critique else ids

    def target(self, critique: str, labels: Sequence[int]) -> list[int]:
        """What the reward model learns to write."""
        crit = self.tok.encode(critique) if self.with_critique else []
        return [*crit, self.tok.token_id(SCORE), *(self.tok.token_id(LABEL_TOKENS[v]) for v in labels),
                self.tok.eos_id]

    @property
    def label_ids(self) -> list[int]:
        """Ids of the score tokens, in the order of :data:`SCORE_VALUES`."""
        return [self.tok.token_id(LABEL_TOKENS[v]) for v in SCORE_VALUES]


SCORE_VALUES = (1, 0, -1)


@torch.no_grad()
def predict_word_scores(rm: TinyGPT, fmt: RewardFormat, sources: Sequence[str], outputs: Sequence[str],
                        max_critique: int) -> tuple[list[list[int]], list[str]]:
    """Greedy critique (if any) until ``<score>``, then one score per output word (argmax over +1/0/−1)."""
    tok = fmt.tok
    score_id = tok.token_id(SCORE)
    prompts = [fmt.prefix(s, o) for s, o in zip(sources, outputs, strict=True)]
    n_words = torch.tensor([len(o.split()) for o in outputs])
    critique_len = max_critique if fmt.with_critique else 0
    if max(len(p) for p in prompts) + critique_len + 1 + int(n_words.max()) > rm.max_len:
        raise ValueError(f"reward-model input exceeds its max_len {rm.max_len}")
    label_ids, values = torch.tensor(fmt.label_ids), torch.tensor(SCORE_VALUES)
    b = len(prompts)
    dec = Decoder(rm, prompts, tok.pad_id)
    logp = dec.last
    critique = [[] for _ in range(b)]
    scores = [[] for _ in range(b)]
    in_critique = torch.full((b,), fmt.with_critique)
    if not fmt.with_critique:
        logp = dec.feed(torch.full((b,), score_id))
    for _ in range(critique_len + 1 + int(n_words.max())):
        nxt = torch.full((b,), tok.pad_id)
        crit_logp = logp.clone()
        crit_logp[:, tok.eos_id] = float("-inf")
        too_long = torch.tensor([len(c) >= critique_len for c in critique])
        crit_next = torch.where(too_long, torch.full((b,), score_id), crit_logp.argmax(-1))
        pick = logp[:, label_ids].argmax(-1)
        for i in range(b):
            if in_critique[i]:
                nxt[i] = crit_next[i]
                if int(crit_next[i]) == score_id:
                    in_critique[i] = False
                else:
                    critique[i].append(int(crit_next[i]))
            elif len(scores[i]) < int(n_words[i]):
                nxt[i] = label_ids[pick[i]]
                scores[i].append(int(values[pick[i]]))
        if not in_critique.any() and all(len(s) == int(n) for s, n in zip(scores, n_words, strict=True)):
            break
        logp = dec.feed(nxt)
    return scores, [tok.decode(c) for c in critique]
