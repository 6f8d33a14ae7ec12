"""LoRA fine-tuning pieces: examples mask the prompt, unfiltered sampling, one real LoRA step."""

import math

import torch

from stages.sci2pol.data import gold_brief, make_papers
from stages.sci2pol.finetune import (
    add_lora,
    brief_prompt,
    greedy_generate,
    train_lora,
    training_examples,
    unfiltered_sample,
)
from stages.sci2pol.funnel import Pair
from stages.sci2pol.judges import lm_option_logliks

PAPERS = make_papers("corpus", 4, 0)
TEXTS = {p.pid: p.text for p in PAPERS}
PAIRS = [Pair(f"d{i}", p.pid, gold_brief(p).text, False, "gold", p.pid) for i, p in enumerate(PAPERS)]


class WordTokenizer:
    eos_token_id = 0

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": [1 + len(w) for w in text.split()]}


def test_training_examples_start_the_loss_after_the_prompt():
    exs = training_examples(PAIRS, TEXTS, WordTokenizer(), max_tokens=10_000)
    ids, start = exs[0]
    assert start == len(brief_prompt(PAPERS[0].text).split())
    assert len(ids) == start + len(PAIRS[0].text.split()) + 1 and ids[-1] == 0
    # a cut that leaves no target token drops the example
    assert training_examples(PAIRS, TEXTS, WordTokenizer(), max_tokens=start) == []


def test_unfiltered_sample_is_deterministic_and_without_replacement():
    a = unfiltered_sample(PAIRS, 3, 0)
    assert a == unfiltered_sample(PAIRS, 3, 0) and len({p.did for p in a}) == 3


def test_one_lora_step_on_smollm2_moves_only_the_adapters(smoke_repo):
    from stages.assets.loaders import load_causal_lm

    torch.set_num_threads(1)
    model, tok = load_causal_lm(smoke_repo.paths("sci2pol-bench").model)  # the smoke DAG's SmolLM2
    lm = add_lora(model, r=2, alpha=4)
    frozen = {n: p.detach().clone() for n, p in lm.named_parameters() if not p.requires_grad and "q_proj" in n}
    lora_b = {n: p.detach().clone() for n, p in lm.named_parameters() if "lora_B" in n}
    assert lora_b and all(float(v.abs().sum()) == 0 for v in lora_b.values())
    exs = training_examples(PAIRS[:1], TEXTS, tok, max_tokens=96)
    losses = train_lora(lm, exs, steps=1, batch_size=1, lr=1e-3, seed=0, pad_id=tok.eos_token_id)
    assert len(losses) == 1 and math.isfinite(losses[0])
    assert any(float(p.detach().abs().sum()) > 0 for n, p in lm.named_parameters() if "lora_B" in n)
    assert all(torch.equal(frozen[n], p) for n, p in lm.named_parameters() if n in frozen)
    assert isinstance(greedy_generate(lm, tok, "Brief:", 2), str)
    ll = lm_option_logliks(lm, tok, "The capital of France is", ["Paris", "banana"])  # through the peft wrapper
    assert ll[0] > ll[1]
