"""Span-level PPO (§3.3): rollouts, reward-model word scores → token rewards, GAE, clipped updates.

Per step: sample summaries from π_old, let the reward model score their words, map word
scores to token scores s_t (scheme a-d, or the critic's own labels for the oracle arms),
add the omission penalty on the last token (every scheme alike), form
r_t = s_t − β(log π_old − log π_ref) with the rollout's log-probs fixed, take GAE advantages
from the value head, and run a few epochs of clipped policy + clipped value updates. Arms
(a)-(d) take their span scores from a trained reward model only; the two oracle arms take
the programmatic critic's labels, as per-token rewards or as their sum on the last token, to isolate credit assignment.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from stages.core.rl import clipped_token_loss, clipped_value_loss, gae
from stages.core.tokenizer import SmallTokenizer
from stages.core.transformer import TinyGPT
from stages.text2grad.alignment import (
    RewardScheme,
    add_terminal,
    align_words_to_tokens,
    length_normalised_dense_scores,
    omission_penalty,
    scheme_token_scores,
    token_rewards_with_kl,
    word_scores_to_token_scores,
)
from stages.text2grad.config import PpoConfig
from stages.text2grad.critic import annotate
from stages.text2grad.models import (
    EXTRA_SPECIALS,
    PolicyWithValue,
    RewardFormat,
    gather_token_logprobs,
    pad_batch,
    predict_word_scores,
    sample,
)
from stages.text2grad.task import fact_f1, missing_facts, parse_source, reference_words, rouge_l_prf


@dataclass
class Rollout:
    """A batch of prompt+summary sequences in action coordinates [B, L−1] (index t−1 acts token t)."""

    tokens: Tensor
    mask: Tensor
    logp_old: Tensor
    values_old: Tensor
    logp_ref: Tensor
    scores: Tensor


def special_ids(tok: SmallTokenizer) -> set[int]:
    """Ids that align to no word (they get score 0)."""
    return {tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id, *(tok.token_id(s) for s in EXTRA_SPECIALS)}


ORACLE: tuple[RewardScheme, ...] = ("oracle_token", "oracle_terminal")


def output_token_scores(tok: SmallTokenizer, output_ids: Sequence[int], word_scores: Sequence[int],
                        scheme: RewardScheme, ref_words: int) -> list[float]:
    """Word scores of one output (length-normalised dense labels for scheme c) mapped to its tokens."""
    specials = special_ids(tok)
    texts = [tok.decode([i]) for i in output_ids]
    words = tok.decode(list(output_ids)).split()
    scores = length_normalised_dense_scores(word_scores, ref_words) if scheme == "dense" else list(word_scores)
    alignment = align_words_to_tokens(words, texts, [i in specials for i in output_ids])
    return word_scores_to_token_scores(scores, alignment, texts)


def action_tensors(prompts: Sequence[list[int]], outputs: Sequence[list[int]], token_scores: Sequence[list[float]],
                   pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """(tokens [B, L], action mask [B, L−1], scores [B, L−1]) for prompt+output rows."""
    tokens = pad_batch([p + o for p, o in zip(prompts, outputs, strict=True)], pad_id)
    mask = torch.zeros(tokens.shape[0], tokens.shape[1] - 1)
    scores = torch.zeros_like(mask)
    for i, (p, o, s) in enumerate(zip(prompts, outputs, token_scores, strict=True)):
        mask[i, len(p) - 1:len(p) - 1 + len(o)] = 1.0
        scores[i, len(p) - 1:len(p) - 1 + len(o)] = torch.as_tensor(s, dtype=torch.float32)
    return tokens, mask, scores


def whiten(x: Tensor, mask: Tensor, eps: float = 1e-8) -> Tensor:
    """(x − mean) / std over the unmasked entries (PPO's advantage normalisation)."""
    n = mask.sum().clamp_min(1.0)
    mean = (x * mask).sum() / n
    var = ((x - mean).pow(2) * mask).sum() / n
    return (x - mean) / (var.sqrt() + eps) * mask


class SpanPPO:
    """One PPO run of one reward scheme: policy + value head, frozen reference and reward model."""

    def __init__(self, cfg: PpoConfig, scheme: RewardScheme, tok: SmallTokenizer, sft_lm: TinyGPT,
                 reward_lm: TinyGPT | None, reward_fmt: RewardFormat | None, seed: int) -> None:
        if (reward_lm is None) != (scheme in ORACLE):
            raise ValueError(f"scheme {scheme!r}: oracle schemes take no reward model, the others need one")
        self.cfg, self.scheme, self.tok = cfg, scheme, tok
        torch.manual_seed(seed)
        self.policy = PolicyWithValue(copy.deepcopy(sft_lm), sft_lm.tok.embedding_dim)
        self.ref = copy.deepcopy(sft_lm).eval().requires_grad_(False)
        self.reward_lm = reward_lm.eval().requires_grad_(False) if reward_lm is not None else None
        self.reward_fmt = reward_fmt
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=cfg.lr)
        self.gen = torch.Generator().manual_seed(seed)

    def word_scores(self, sources: Sequence[str], texts: Sequence[str]) -> list[list[int]]:
        """Word scores from the reward model, or the critic's own labels for the oracle schemes."""
        if self.reward_lm is None:
            return [annotate(t, parse_source(s)).word_labels for s, t in zip(sources, texts, strict=True)]
        return predict_word_scores(self.reward_lm, self.reward_fmt, sources, texts, self.cfg.max_critique)[0]

    def collect(self, prompts: Sequence[list[int]], sources: Sequence[str]) -> tuple[Rollout, float]:
        """Sample summaries, score them (RM or oracle) plus the omission penalty; record π_old, V_old, π_ref."""
        cfg, tok = self.cfg, self.tok
        self.policy.eval()
        outputs = sample(self.policy.lm, prompts, cfg.max_new_tokens, tok.eos_id, tok.pad_id, cfg.temperature,
                         self.gen)
        texts = [tok.decode(o) for o in outputs]
        examples = [parse_source(s) for s in sources]
        word_scores = self.word_scores(sources, texts)
        token_scores = [output_token_scores(tok, o, w, self.scheme, reference_words(ex))
                        for o, w, ex in zip(outputs, word_scores, examples, strict=True)]
        tokens, mask, scores = action_tensors(prompts, outputs, token_scores, tok.pad_id)
        penalty = torch.tensor([omission_penalty(missing_facts(t, ex), cfg.omission_penalty)
                                for t, ex in zip(texts, examples, strict=True)])
        with torch.no_grad():
            logp, values = self.policy(tokens)
            logp_ref = gather_token_logprobs(self.ref(tokens), tokens)
        final = add_terminal(scheme_token_scores(scores, mask, self.scheme), mask, penalty)
        rollout = Rollout(tokens, mask, gather_token_logprobs(logp, tokens), values[:, :-1], logp_ref, final)
        return rollout, float((final * mask).sum(-1).mean())

    def update(self, ro: Rollout) -> dict[str, float]:
        """Token rewards with KL, GAE, then ``epochs`` passes of clipped policy and value minibatch steps."""
        cfg = self.cfg
        rewards = token_rewards_with_kl(ro.scores, ro.logp_old, ro.logp_ref, ro.mask, cfg.beta)
        adv, returns = gae(rewards, ro.values_old, ro.mask, cfg.gamma, cfg.lam)
        adv = whiten(adv, ro.mask)
        self.policy.train()
        n = ro.tokens.shape[0]
        losses = []
        for _ in range(cfg.epochs):
            order = torch.randperm(n, generator=self.gen)
            for start in range(0, n, cfg.minibatch):
                idx = order[start:start + cfg.minibatch]
                logp_all, values = self.policy(ro.tokens[idx])
                logp = gather_token_logprobs(logp_all, ro.tokens[idx])
                pg = clipped_token_loss(logp - ro.logp_old[idx], adv[idx], ro.mask[idx], cfg.clip_eps,
                                        normalise="token")
                vf = clipped_value_loss(values[:, :-1], ro.values_old[idx], returns[idx], ro.mask[idx],
                                        cfg.value_clip)
                loss = pg + cfg.vf_coef * vf
                self.opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
                self.opt.step()
                losses.append(float(loss.detach()))
        return {"loss": float(np.mean(losses))}


@torch.no_grad()
def evaluate_policy(lm: TinyGPT, ref: TinyGPT, tok: SmallTokenizer, prompts: Sequence[list[int]],
                    sources: Sequence[str], references: Sequence[str], cfg: PpoConfig, seed: int) -> dict[str, float]:
    """Test ROUGE-L (P, R, F), fact F1, words and KL(π ‖ π_ref) of sampled summaries (same eval seed per seed)."""
    lm.eval()
    gen = torch.Generator().manual_seed(seed)
    rouge, prec, rec, f1, length, kl = [], [], [], [], [], []
    for _ in range(cfg.eval_samples):
        outputs = sample(lm, prompts, cfg.max_new_tokens, tok.eos_id, tok.pad_id, cfg.temperature, gen)
        texts = [tok.decode(o) for o in outputs]
        prf = rouge_l_prf(texts, references)
        prec += [x[0] for x in prf]
        rec += [x[1] for x in prf]
        rouge += [x[2] for x in prf]
        f1 += [fact_f1(t, parse_source(s)) for t, s in zip(texts, sources, strict=True)]
        length += [len(t.split()) for t in texts]
        tokens, mask, _ = action_tensors(prompts, outputs, [[0.0] * len(o) for o in outputs], tok.pad_id)
        delta = gather_token_logprobs(lm(tokens), tokens) - gather_token_logprobs(ref(tokens), tokens)
        kl += (delta * mask).sum(-1).tolist()
    return {"rouge_l": float(np.mean(rouge)), "rouge_p": float(np.mean(prec)), "rouge_r": float(np.mean(rec)),
            "fact_f1": float(np.mean(f1)), "length": float(np.mean(length)),
            "kl": float(np.mean(kl))}


def train_scheme(runner: SpanPPO, train_prompts: Sequence[list[int]], train_sources: Sequence[str],
                 eval_args: dict[str, Any], seed: int) -> list[dict[str, float]]:
    """``steps`` PPO steps on prompts drawn with the run's seed; test metrics every ``eval_every`` steps."""
    cfg = runner.cfg
    draw = np.random.default_rng(seed)
    curve, reward = [], float("nan")
    for step in range(cfg.steps + 1):
        if step % cfg.eval_every == 0 or step == cfg.steps:
            metrics = evaluate_policy(runner.policy.lm, runner.ref, runner.tok, cfg=cfg, **eval_args)
            curve.append({"step": step, "reward": reward, **metrics})
        if step == cfg.steps:
            break
        idx = draw.choice(len(train_prompts), size=cfg.rollouts, replace=False)
        rollout, reward = runner.collect([train_prompts[i] for i in idx], [train_sources[i] for i in idx])
        runner.update(rollout)
    return curve
