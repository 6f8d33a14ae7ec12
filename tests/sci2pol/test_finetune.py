"""LoRA fine-tuning pieces: examples mask the prompt, early stopping, the learning-rate choice, one real run."""

import math

import pytest
import torch

from stages.sci2pol.data import gold_brief, make_papers
from stages.sci2pol.finetune import (
    Fit,
    add_lora,
    brief_prompt,
    fit_with_early_stopping,
    greedy_generate,
    heldout_loss,
    select_learning_rate,
    should_stop,
    training_examples,
    unfiltered_sample,
)
from stages.sci2pol.funnel import Pair
from stages.sci2pol.judges import lm_option_logliks

PAPERS = make_papers("corpus", 4, 0)
TEXTS = {p.pid: p.body for p in PAPERS}
PAIRS = [Pair(f"d{i}", p.pid, gold_brief(p).text, False, "gold", p.pid) for i, p in enumerate(PAPERS)]


class WordTokenizer:
    eos_token_id = 0

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [1 + len(w) for w in text.split()]}


def test_training_examples_start_the_loss_after_the_prompt():
    exs = training_examples(PAIRS, TEXTS, WordTokenizer(), max_tokens=10_000)
    ids, start = exs[0]
    assert start == len(brief_prompt(PAPERS[0].body).split())
    assert len(ids) == start + len(PAIRS[0].text.split()) + 1 and ids[-1] == 0
    # a cut that leaves no target token drops the example
    assert training_examples(PAIRS[:1], TEXTS, WordTokenizer(), max_tokens=start) == []


def test_unfiltered_sample_is_deterministic_and_without_replacement():
    a = unfiltered_sample(PAIRS, 3, 0)
    assert a == unfiltered_sample(PAIRS, 3, 0) and len({p.did for p in a}) == 3


def test_early_stopping_rule_by_hand():
    assert not should_stop([3.0, 2.0], patience=2)  # too few evaluations
    assert not should_stop([3.0, 2.0, 1.5], patience=2)  # improving
    assert not should_stop([3.0, 2.0, 2.5, 1.9], patience=2)  # the last one improves on 2.0
    assert should_stop([3.0, 2.0, 2.5, 2.0], patience=2)  # 2.5 and 2.0 never beat the best before them (2.0)
    assert should_stop([3.0, 3.1], patience=1)


def test_learning_rate_choice_is_the_lowest_heldout_loss_first_on_ties():
    fits = [Fit(lr=1e-4, best_val=2.0), Fit(lr=3e-4, best_val=1.5), Fit(lr=1e-3, best_val=1.5)]
    assert select_learning_rate(fits) == 1


class Linear(torch.nn.Module):
    """A bigram model with a ``loss`` like a Hugging Face causal LM (labels shifted by one)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(16, 16)

    def forward(self, input_ids, attention_mask=None, labels=None):
        logits = self.emb(input_ids)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 16), labels[:, 1:].reshape(-1),
                                                 ignore_index=-100)
        return type("Out", (), {"loss": loss, "logits": logits})()


def test_heldout_loss_weights_batches_by_brief_tokens():
    model = Linear()
    a, b = ([1, 2, 3, 4], 1), ([5, 6], 1)  # 3 and 1 brief tokens
    la, lb = heldout_loss(model, [a], 0), heldout_loss(model, [b], 0)
    assert heldout_loss(model, [a, b], 0, batch_size=1) == pytest.approx((3 * la + lb) / 4)


def test_early_stopping_keeps_the_best_adapters():
    torch.manual_seed(0)
    model = Linear()
    train = [([1, 2, 3, 4, 5], 1)] * 4
    val = [([1, 9, 9, 9, 9], 1)]  # the training data moves the model away from this
    fit = fit_with_early_stopping(model, train, val, lr=0.5, max_steps=20, batch_size=2, eval_every=2, patience=2,
                                  seed=0, pad_id=0)
    assert fit.best_step == 0 and len(fit.train) == 4  # stopped after two evaluations without improvement
    assert heldout_loss(model, val, 0) == pytest.approx(fit.val[0][1])  # step-0 weights restored


def test_one_lora_run_on_smollm2_moves_only_the_adapters(smoke_repo):
    from stages.assets.loaders import load_causal_lm

    torch.set_num_threads(1)
    model, tok = load_causal_lm(smoke_repo.paths("sci2pol-bench").model)  # the smoke DAG's SmolLM2
    lm = add_lora(model, r=2, alpha=4)
    frozen = {n: p.detach().clone() for n, p in lm.named_parameters() if not p.requires_grad and "q_proj" in n}
    lora_b = {n: p.detach().clone() for n, p in lm.named_parameters() if "lora_B" in n}
    assert lora_b and all(float(v.abs().sum()) == 0 for v in lora_b.values())
    exs = training_examples(PAIRS[:1], TEXTS, tok, max_tokens=1024)  # the whole paper and its brief
    fit = fit_with_early_stopping(lm, exs, exs, lr=1e-2, max_steps=1, batch_size=1, eval_every=1, patience=1,
                                  seed=0, pad_id=tok.eos_token_id)
    assert len(fit.train) == 1 and math.isfinite(fit.train[0]) and [s for s, _ in fit.val] == [0, 1]
    assert fit.val[1][1] < fit.val[0][1]  # one step on the same example lowers its loss
    assert any(float(p.detach().abs().sum()) > 0 for n, p in lm.named_parameters() if "lora_B" in n)
    assert all(torch.equal(frozen[n], p) for n, p in lm.named_parameters() if n in frozen)
    outs = greedy_generate(lm, tok, ["Brief:", "Paper: a study.\nBrief:"], 2, batch_size=2)
    assert len(outs) == 2 and all(isinstance(o, str) for o in outs)
    ll = lm_option_logliks(lm, tok, "The capital of France is", ["Paris", "banana"])  # through the peft wrapper
    assert ll[0] > ll[1]
