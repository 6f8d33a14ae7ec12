"""From word scores to token rewards (§3.3): greedy word-to-token alignment, the four reward schemes, KL.

The reward model scores words; PPO needs one reward per generated token. Each token is
aligned greedily to the word it spells; it takes that word's score. Punctuation and
special tokens take 0, and so do tokens that match no word (an unmatched word gives
its score to no token).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

RewardScheme = Literal["scalar", "text2grad", "dense", "no_critique", "oracle_token", "oracle_terminal"]
SCHEMES: tuple[RewardScheme, ...] = ("scalar", "text2grad", "dense", "no_critique", "oracle_token", "oracle_terminal")
# schemes whose summed word scores go on the last token (one terminal reward per output)
TERMINAL: tuple[RewardScheme, ...] = ("scalar", "oracle_terminal")


def is_punctuation(text: str) -> bool:
    """A token or word made only of punctuation."""
    return bool(text) and all(c in string.punctuation for c in text)


def align_words_to_tokens(words: Sequence[str], token_texts: Sequence[str],
                          special: Sequence[bool] | None = None) -> list[int | None]:
    """Greedy alignment (§3.3): the word index each token spells, or None (special, blank, unmatched)."""
    special = special if special is not None else [False] * len(token_texts)
    out: list[int | None] = []
    w, built = 0, ""
    for text, is_special in zip(token_texts, special, strict=True):
        piece = text.strip()
        if is_special or not piece or w >= len(words):
            out.append(None)
            continue
        if words[w].startswith(built + piece):
            built += piece
        else:
            # the current word is abandoned (unmatched); resume at the next word this token starts
            nxt = next((k for k in range(w + (built != ""), len(words)) if words[k].startswith(piece)), None)
            if nxt is None:
                out.append(None)
                continue
            w, built = nxt, piece
        out.append(w)
        if built == words[w]:
            w, built = w + 1, ""
    return out


def word_scores_to_token_scores(word_scores: Sequence[float], alignment: Sequence[int | None],
                                token_texts: Sequence[str]) -> list[float]:
    """s_t = score of the word token t belongs to; 0 for punctuation, special and unaligned tokens."""
    return [0.0 if w is None or is_punctuation(t.strip()) else float(word_scores[w])
            for w, t in zip(alignment, token_texts, strict=True)]


def dense_word_scores(word_scores: Sequence[float]) -> list[float]:
    """Dense labelling (ablation c, §4.3): every word outside the poor spans scores +1."""
    return [-1.0 if s < 0 else 1.0 for s in word_scores]


def length_normalised_dense_scores(word_scores: Sequence[float], ref_words: int) -> list[float]:
    """Dense labels (ablation c, §4.3) scaled by c / max(n, c): an output longer than c words earns at most c."""
    n = len(word_scores)
    scale = ref_words / max(n, ref_words) if n else 0.0
    return [d * scale for d in dense_word_scores(word_scores)]


def omission_penalty(n_missing: int, coef: float) -> float:
    """−coef per reference fact the output leaves out (terminal term, identical for every scheme)."""
    return -coef * n_missing


def add_terminal(scores: Tensor, mask: Tensor, terminal: Tensor) -> Tensor:
    """Add one value per row to the row's last generated token (the terminal reward)."""
    mask = mask.to(scores.dtype)
    last = (mask.cumsum(-1) == mask.sum(-1, keepdim=True)) & (mask > 0)
    return scores + torch.where(last, terminal[:, None].to(scores.dtype), torch.zeros_like(scores))


def scheme_token_scores(token_scores: Tensor, mask: Tensor, scheme: RewardScheme) -> Tensor:
    """s_t under a scheme (§4.1 baseline): terminal schemes put the summed scores on the last token; others keep s_t."""
    mask = mask.to(token_scores.dtype)
    scores = token_scores * mask
    if scheme not in TERMINAL:
        return scores
    return add_terminal(torch.zeros_like(scores), mask, scores.sum(-1))


def token_rewards_with_kl(scores: Tensor, logp_old: Tensor, logp_ref: Tensor, mask: Tensor, beta: float) -> Tensor:
    """r_t = s_t − β (log π_old(y_t) − log π_ref(y_t)) on generated tokens, 0 elsewhere (§3.3, PPO)."""
    mask = mask.to(scores.dtype)
    return (scores - beta * (logp_old.detach() - logp_ref.detach())) * mask
