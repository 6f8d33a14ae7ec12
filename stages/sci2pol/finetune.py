"""LoRA fine-tuning of a causal LM on (paper, brief) pairs, and greedy generation for open tasks.

Sci2Pol-Corpus, Sec. 6: models fine-tuned on the curated pairs improve on the benchmark;
the miniature compares the curated pairs, the same number of unfiltered (linked only)
pairs, and no fine-tuning. One recipe for both sets: the learning rate is chosen from a
small grid and the number of steps by early stopping, both on the loss of held-out gold
briefs of corpus papers no training pair is about (``fit_with_early_stopping``,
``select_learning_rate``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stages.sci2pol.funnel import Pair

INSTRUCTION = "Write a policy brief for this paper."
Example = tuple[list[int], int]  # token ids, prompt length (the loss starts there)


def brief_prompt(paper_text: str) -> str:
    """The fine-tuning prompt: the paper and the instruction, then the brief."""
    return f"Paper: {paper_text}\n{INSTRUCTION}\nBrief:\n"


def training_examples(pairs: Sequence[Pair], paper_texts: dict[str, str], tokenizer: Any,
                      max_tokens: int) -> list[Example]:
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


def add_lora(model: Any, r: int, alpha: float, seed: int = 0) -> Any:
    """Wrap the model with LoRA adapters on the attention query and value projections (peft), initialised
    from ``seed``."""
    import torch
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                     task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def batch_loss(model: Any, batch: Sequence[Example], pad_id: int) -> Any:
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


def heldout_loss(model: Any, examples: Sequence[Example], pad_id: int, batch_size: int = 8) -> float:
    """Mean brief-token loss over held-out examples (each batch weighted by its brief tokens)."""
    import torch

    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for lo in range(0, len(examples), batch_size):
            batch = examples[lo:lo + batch_size]
            n = sum(len(ids) - start for ids, start in batch)  # brief tokens predicted in the batch
            total += float(batch_loss(model, batch, pad_id)) * n
            count += n
    model.train(was_training)
    return total / count


def should_stop(val_losses: Sequence[float], patience: int) -> bool:
    """Early stopping: the last ``patience`` evaluations all failed to improve on the best before them."""
    if len(val_losses) <= patience:
        return False
    best_before = min(val_losses[:-patience])
    return all(v >= best_before for v in val_losses[-patience:])


@dataclass
class Fit:
    """One LoRA run: the training loss per step, the held-out loss per evaluation, the step kept."""

    lr: float
    train: list[float] = field(default_factory=list)
    val: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out loss); step 0 = before training
    best_step: int = 0
    best_val: float = math.inf


def fit_with_early_stopping(model: Any, train: Sequence[Example], val: Sequence[Example], *, lr: float,
                            max_steps: int, batch_size: int, eval_every: int, patience: int, seed: int,
                            pad_id: int) -> Fit:
    """AdamW on the LoRA parameters; every ``eval_every`` steps the held-out brief loss is measured, training
    stops once ``patience`` evaluations bring no improvement, and the adapters of the best evaluation are
    restored (step 0, the untrained adapters, included)."""
    import torch

    if not train or not val:
        raise ValueError("no training or no held-out examples")
    torch.manual_seed(seed)
    g = np.random.default_rng(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr)
    fit = Fit(lr=lr)
    best_state = [p.detach().clone() for p in params]
    fit.best_val = heldout_loss(model, val, pad_id)
    fit.val.append((0, fit.best_val))
    model.train()
    for step in range(1, max_steps + 1):
        batch = [train[int(i)] for i in g.integers(0, len(train), size=batch_size)]
        loss = batch_loss(model, batch, pad_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
        fit.train.append(float(loss.detach()))
        if step % eval_every == 0 or step == max_steps:
            v = heldout_loss(model, val, pad_id)
            fit.val.append((step, v))
            if v < fit.best_val:
                fit.best_val, fit.best_step = v, step
                best_state = [p.detach().clone() for p in params]
            if should_stop([x for _, x in fit.val], patience):
                break
    with torch.no_grad():
        for p, b in zip(params, best_state, strict=True):
            p.copy_(b)
    model.eval()
    return fit


def select_learning_rate(fits: Sequence[Fit]) -> int:
    """Index of the run with the lowest held-out loss (the first on a tie: grids are listed small to large)."""
    return int(np.argmin([f.best_val for f in fits]))


def first_line_done(text: str) -> bool:
    """Whether a continuation already holds a complete non-empty first line."""
    return "\n" in text.lstrip()


def greedy_generate(model: Any, tokenizer: Any, prompts: Sequence[str], max_new_tokens: int,
                    batch_size: int = 8) -> list[str]:
    """Greedy continuations of ``prompts`` (new text only), left-padded in batches; a batch stops once every
    row has a complete non-empty first line or at ``max_new_tokens``."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    out: list[str] = []
    for lo in range(0, len(prompts), batch_size):
        encs = [tokenizer(p)["input_ids"] for p in prompts[lo:lo + batch_size]]
        n = max(len(e) for e in encs)
        ids = torch.tensor([[pad] * (n - len(e)) + e for e in encs])
        mask = torch.tensor([[0] * (n - len(e)) + [1] * len(e) for e in encs])

        class LineDone(StoppingCriteria):
            def __init__(self, start: int) -> None:
                self.start = start

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.tensor([first_line_done(tokenizer.decode(row[self.start:], skip_special_tokens=True))
                                     for row in input_ids], dtype=torch.bool)

        with torch.inference_mode():
            gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=pad, stopping_criteria=StoppingCriteriaList([LineDone(n)]))
        out.extend(tokenizer.decode(row[n:], skip_special_tokens=True) for row in gen)
    return out
