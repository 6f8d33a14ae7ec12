"""LoRA fine-tuning of a causal LM on (paper, brief) pairs, and greedy generation for open tasks.

Sci2Pol-Corpus, Sec. 6: models fine-tuned on the curated pairs improve on the benchmark;
the miniature compares the curated pairs, the same number of unfiltered (linked only)
pairs, and no fine-tuning.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.sci2pol.funnel import Pair

INSTRUCTION = "Write a policy brief for this paper."


def brief_prompt(paper_text: str) -> str:
    """The fine-tuning prompt: the paper and the instruction, then the brief."""
    return f"Paper: {paper_text}\n{INSTRUCTION}\nBrief:\n"


def training_examples(pairs: Sequence[Pair], paper_texts: dict[str, str], tokenizer: Any,
                      max_tokens: int) -> list[tuple[list[int], int]]:
    """(token ids, prompt length) of each pair, cut to ``max_tokens``; the loss covers the brief only."""
    out = []
    eos = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    for p in pairs:
        prompt = tokenizer(brief_prompt(paper_texts[p.pid]))["input_ids"]
        target = tokenizer(p.text, add_special_tokens=False)["input_ids"] + eos
        ids = (prompt + target)[:max_tokens]
        if len(ids) > len(prompt):
            out.append((ids, len(prompt)))
    return out


def unfiltered_sample(linked: Sequence[Pair], n: int, seed: int) -> list[Pair]:
    """``n`` pairs drawn without replacement from the linked (unscreened) pairs."""
    from stages.core.seeding import rng

    idx = rng(seed, "unfiltered").permutation(len(linked))[:n]
    return [linked[int(i)] for i in sorted(idx)]


def add_lora(model: Any, r: int, alpha: float) -> Any:
    """Wrap the model with LoRA adapters on the attention query and value projections (peft)."""
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                     task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def batch_loss(model: Any, batch: Sequence[tuple[list[int], int]], pad_id: int) -> Any:
    """Mean next-token cross-entropy over the brief tokens of a right-padded batch."""
    import torch

    n = max(len(ids) for ids, _ in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), n), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), n), dtype=torch.long)
    for i, (seq, start) in enumerate(batch):
        ids[i, :len(seq)] = torch.tensor(seq)
        labels[i, start:len(seq)] = torch.tensor(seq[start:])
        mask[i, :len(seq)] = 1
    return model(input_ids=ids, attention_mask=mask, labels=labels).loss


def train_lora(model: Any, examples: Sequence[tuple[list[int], int]], steps: int, batch_size: int, lr: float,
               seed: int, pad_id: int) -> list[float]:
    """AdamW on the LoRA parameters for ``steps`` steps of ``batch_size`` examples; the loss curve."""
    import torch

    if not examples:
        raise ValueError("no training examples")
    torch.manual_seed(seed)
    g = np.random.default_rng(seed)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        batch = [examples[int(i)] for i in g.integers(0, len(examples), size=batch_size)]
        loss = batch_loss(model, batch, pad_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def greedy_generate(model: Any, tokenizer: Any, prompt: str, max_new_tokens: int) -> str:
    """Greedy continuation of ``prompt``, stopped once a non-empty first line is complete (new text only)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    enc = tokenizer(prompt, return_tensors="pt")
    n_prompt = enc["input_ids"].shape[1]

    class LineDone(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            new = tokenizer.decode(input_ids[0, n_prompt:], skip_special_tokens=True)
            return torch.tensor([("\n" in new.lstrip())], dtype=torch.bool)

    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tokenizer.eos_token_id, stopping_criteria=StoppingCriteriaList([LineDone()]))
    return tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
