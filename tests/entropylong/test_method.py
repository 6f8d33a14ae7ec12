"""The EntropyLong method on hand-made numbers: entropy, threshold, ΔI and its null, keep rule, retrieval,
construction, LoRA and the held-out gains."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from stages.entropylong.contexts import (
    is_self_retrieval,
    ngram_overlap,
    query_window,
    shared_entities,
    target_in_context,
    top_k_candidates,
)
from stages.entropylong.sequences import assemble, truncate_document, with_and_without_context
from stages.entropylong.uncertainty import (
    entropies_at_positions,
    entropy_threshold,
    entropy_zscores,
    information_gain,
    keep_context,
    keep_verified,
    null_threshold,
    predictive_entropy,
    select_positions,
)


def test_entropy_of_known_distributions():
    assert predictive_entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8))
    assert predictive_entropy(np.array([1.0, 0.0, 0.0])) == pytest.approx(0.0)
    assert predictive_entropy(np.array([0.5, 0.25, 0.25])) == pytest.approx(1.5 * math.log(2))


def test_threshold_rule():
    h = np.array([1.0, 1.0, 1.0, 1.0, 5.0])  # μ = 1.8, σ = 1.6
    assert entropy_threshold(h, 2.0) == pytest.approx(1.8 + 2.0 * 1.6)
    assert entropy_threshold(h, 1.5) == pytest.approx(1.8 + 1.5 * 1.6)
    np.testing.assert_allclose(entropy_zscores(h), (h - 1.8) / 1.6)
    # z(5.0) = 2.0 exactly: strictly above α = 1.9 passes, α = 2.0 does not
    assert select_positions(h, 1.9, 0, 10, 1) == [5]
    assert select_positions(h, 2.0, 0, 10, 1) == []


def test_position_selection_caps_separates_and_skips_the_start():
    h = np.zeros(40)
    h[[2, 10, 11, 25, 30]] = [9.0, 8.0, 7.5, 7.0, 6.0]  # entropies of tokens 3, 11, 12, 26, 31
    assert select_positions(h, 1.0, 0, 10, 1) == [3, 11, 12, 26, 31]
    assert select_positions(h, 1.0, 0, 10, 4) == [3, 11, 26, 31]  # 12 is within 4 of 11
    assert select_positions(h, 1.0, 5, 10, 4) == [11, 26, 31]  # 3 is before min_position
    assert select_positions(h, 1.0, 5, 2, 4) == [11, 26]  # the two highest that qualify


def test_information_gain_and_keep_rule():
    di = information_gain(np.array([4.0, 2.0, 1.0]), np.array([1.0, 1.9, 1.5]))
    np.testing.assert_allclose(di, [0.75, 0.05, -0.5])
    assert keep_context(di, 0.4).tolist() == [True, False, False]
    assert keep_context(0.4, 0.4).item() is False  # strictly greater
    assert information_gain(3.0, 0.0) == pytest.approx(1.0)  # ΔI ≤ 1 always
    with pytest.raises(ValueError, match="positive"):
        information_gain(0.0, 0.0)


class CopyLM(torch.nn.Module):
    """A tiny exact induction model: after token a, predict what followed the last earlier a (else uniform)."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab = vocab
        self.scale = torch.nn.Parameter(torch.tensor(12.0))
        self.base_model = self._decoder

    def _decoder(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        b, t = input_ids.shape
        logits = torch.zeros(b, t, self.vocab)
        for i in range(b):
            for p in range(t):
                prev = [j for j in range(p) if input_ids[i, j] == input_ids[i, p]]
                if prev:
                    logits[i, p, input_ids[i, prev[-1] + 1]] = self.scale
        return type("Out", (), {"last_hidden_state": logits})()

    def get_output_embeddings(self) -> torch.nn.Module:
        return torch.nn.Identity()


def test_verification_keeps_the_context_with_the_answer_and_rejects_an_unrelated_one():
    model = CopyLM(vocab=20)
    doc = [5, 6, 7, 8, 9]
    pos = [3]  # predicting token 8 after 7: the document alone gives no clue
    answer_ctx, unrelated_ctx = [7, 8, 0], [1, 2, 3]
    h = entropies_at_positions(model, [doc], [pos])[0]
    assert h[0] == pytest.approx(math.log(20), abs=1e-5)
    h_ctx = entropies_at_positions(model, [answer_ctx + doc, unrelated_ctx + doc],
                                   [[p + 3 for p in pos], [p + 3 for p in pos]], batch_size=2)
    di = information_gain(h, np.concatenate(h_ctx))
    assert keep_context(di, 0.4).tolist() == [True, False]
    assert di[0] > 0.9 and di[1] == pytest.approx(0.0, abs=1e-6)


def test_one_forward_gives_every_position_exactly_as_separate_truncated_passes():
    model = CopyLM(vocab=20)
    seq = [3, 4, 5, 3, 4, 6, 5, 7, 3]
    together = entropies_at_positions(model, [seq], [[2, 4, 7, 8]])[0]
    apart = [entropies_at_positions(model, [seq[:p + 1]], [[p]])[0][0] for p in (2, 4, 7, 8)]
    np.testing.assert_allclose(together, apart, atol=1e-6)


def test_self_retrieval_is_excluded():
    doc_text = "Aldren is a market town on the river Tamsel and it was founded by Maren Holt long ago."
    doc = pd.Series({"doc_id": "d0", "article_id": "wiki-1", "title": "Aldren", "text": doc_text})
    chunks = pd.DataFrame({"chunk_id": [0, 1, 2, 3], "article_id": ["wiki-1", "wiki-2", "wiki-3", "wiki-4"],
                           "title": ["Aldren", "ALDREN", "Tamsel", "Bexmoor"],
                           "text": ["own article chunk", "same title, other id",
                                    "Aldren is a market town on the river Tamsel and it was founded by Maren",
                                    "Bexmoor lies downstream of Aldren on the Tamsel."]})
    hits = top_k_candidates(np.array([0.99, 0.95, 0.9, 0.5]), np.array([0, 1, 2, 3]), chunks, doc, k=3, n=8,
                            max_overlap=0.2)
    assert hits == [(3, 0.5)]  # own article, same title and the near-duplicate are all dropped
    assert ngram_overlap(chunks.text[2], doc_text, 8) == 1.0
    assert is_self_retrieval("wiki-9", "Other", "nothing in common here at all", "wiki-1", "Aldren", doc_text, 8, 0.2) \
        is False


def test_query_window_and_dependency_helpers():
    assert query_window(list(range(100)), 50, 16) == (34, 67)
    assert query_window(list(range(20)), 3, 16) == (0, 20)
    assert shared_entities("Maren Holt founded Aldren.", "Aldren and Bexmoor; Holt") == 2
    assert target_in_context(" Tamsel", "the river Tamsel floods") and not target_in_context(" the", "the river")


def test_construction_length_order_and_equal_token_counts():
    gen = np.random.default_rng(0)
    doc = [100 + i for i in range(10)]
    contexts = [[1, 1, 1], [2, 2], [3, 3, 3, 3]]
    filler = [[50 + i] * 5 for i in range(10)]
    built = {name: assemble(doc, ctx, filler, 40, 0, np.random.default_rng(7))
             for name, ctx in (("el", contexts), ("nv", [*contexts, [4] * 6]), ("concat", []))}
    for b in built.values():
        assert len(b.tokens) == 40
        assert b.tokens[b.doc_start:] == [*doc, 0]  # the document comes last, then the separator
    assert len({sum(len(b.tokens) for b in [v]) for v in built.values()}) == 1
    pieces, current = [], []
    for t in built["el"].tokens[:built["el"].doc_start]:
        if t == 0:
            pieces.append(tuple(current))
            current = []
        else:
            current.append(t)
    assert sorted(pieces[-3:]) == sorted(map(tuple, contexts))  # every context, once, just before the doc
    orders = {tuple(assemble(doc, contexts, filler, 40, 0, np.random.default_rng(s)).tokens) for s in range(12)}
    assert len(orders) > 1  # contexts are shuffled
    assert truncate_document(list(range(50)), 40, 20) == list(range(19))
    with_ctx, without, control = with_and_without_context(doc, contexts, filler, 40, 0, gen)
    assert with_ctx.tokens[with_ctx.doc_start:] == [*doc, 0] and without.tokens == [0, *doc, 0]
    assert len(control.tokens) == len(with_ctx.tokens) and control.doc_start == with_ctx.doc_start
    assert control.tokens[control.doc_start:] == [*doc, 0] and not set(control.tokens[:control.doc_start]) & {1, 2, 3}


def test_null_level_and_the_rule_that_needs_both_epsilon_and_the_null():
    null = np.array([0.05, 0.30, -0.10, 0.12, 0.20])
    assert null_threshold(null, 1.0) == pytest.approx(0.30)  # the largest random chunk
    assert null_threshold(null, 0.5) == pytest.approx(0.12)  # the median
    assert null_threshold(null, 0.9) == pytest.approx(0.20 + 0.6 * (0.30 - 0.20))  # linear interpolation
    with pytest.raises(ValueError, match="at least one"):
        null_threshold(np.array([]), 0.9)
    # ΔI 0.25 clears ε = 0.1 but not a null level of 0.30; 0.35 clears both; 0.08 clears a null of 0.0 but not ε
    kept = keep_verified(np.array([0.25, 0.35, 0.08]), 0.1, np.array([0.30, 0.30, 0.0]))
    assert kept.tolist() == [False, True, False]
    assert keep_verified(0.3, 0.1, 0.3).item() is False  # strictly above the null level


def test_evaluation_gains_and_token_weighted_spans():
    from stages.entropylong.evaluate import content_gains, summarise

    assert content_gains({"without_context": 3.0, "with_context": 2.5, "random_context": 2.9}) == \
        pytest.approx({"gain": 0.5, "content_gain": 0.4})
    # two documents: 10 and 20 tokens; the body excludes the first 4 of each (6 and 16 tokens)
    rows = []
    for doc, n, body, allv in (("a", 10, 1.0, 2.0), ("b", 20, 3.0, 4.0)):
        for cond, shift in (("without_context", 0.5), ("with_context", 0.0), ("random_context", 0.2)):
            rows.append({"doc_id": doc, "condition": cond, "all": allv + shift, "body": body + shift, "n_tokens": n})
    res = summarise(pd.DataFrame(rows), exclude_first=4)
    assert res["nll_with"] == pytest.approx((6 * 1.0 + 16 * 3.0) / 22)
    assert res["nll_with_all"] == pytest.approx((10 * 2.0 + 20 * 4.0) / 30)
    assert res["content_gain"] == pytest.approx(0.2) and res["gain"] == pytest.approx(0.5)
    assert res["content_gain_all"] == pytest.approx(0.2)


def test_lora_starts_at_the_base_layer_saves_and_loads_only_the_adapters():
    from stages.entropylong.config import LoraSpec
    from stages.entropylong.lm import LoRALinear, add_lora, load_lora, lora_state, reset_lora

    torch.manual_seed(0)
    model = torch.nn.Sequential()
    model.add_module("q_proj", torch.nn.Linear(6, 4))
    model.add_module("o_proj", torch.nn.Linear(4, 3))
    x = torch.randn(5, 6)
    before = model(x).detach().clone()
    names = add_lora(model, LoraSpec(rank=2, alpha=4.0, targets=["q_proj"]))
    assert names == ["q_proj"] and isinstance(model.q_proj, LoRALinear)
    reset_lora(model, 3)
    torch.testing.assert_close(model(x), before)  # B = 0: exactly the base model
    assert {n for n, p in model.named_parameters() if p.requires_grad} == {"q_proj.lora_a", "q_proj.lora_b"}
    with torch.no_grad():
        model.q_proj.lora_b.fill_(0.5)
    a, b = model.q_proj.lora_a, model.q_proj.lora_b
    h = model.q_proj.base(x) + 2.0 * (x @ a.T @ b.T)  # scale α/r = 4/2
    torch.testing.assert_close(model.q_proj(x), h)
    state = lora_state(model)
    assert set(state) == {"q_proj.lora_a", "q_proj.lora_b"}
    reset_lora(model, 3)
    load_lora(model, state)
    torch.testing.assert_close(model.q_proj.lora_b, torch.full((4, 2), 0.5))
    with pytest.raises(ValueError, match="not finite"):
        load_lora(model, {k: v * float("nan") for k, v in state.items()})
    with pytest.raises(ValueError, match="do not match"):
        load_lora(model, {"q_proj.lora_a": state["q_proj.lora_a"]})


def test_variant_contexts_of_a_document_without_candidates_is_empty_not_an_error():
    from stages.entropylong.construct import variant_contexts

    cands = pd.DataFrame({"doc_id": ["d0", "d0", "d0"], "pos": [40, 40, 20], "rank": [0, 1, 0], "chunk_id": [7, 8, 9]})
    kept = pd.DataFrame({"doc_id": ["d0"], "pos": [40], "rank": [1], "chunk_id": [8]})
    main_pos = {("d0", 40)}  # position 20 is not a main position (start band)
    assert variant_contexts("d0", cands, kept, main_pos) == {"entropylong": [8], "no_verification": [7, 8],
                                                             "concatenation": []}
    assert variant_contexts("d1", cands, kept, main_pos) == {"entropylong": [], "no_verification": [],
                                                             "concatenation": []}


def test_learning_rate_is_chosen_by_mean_validation_loss_over_variants_and_seeds():
    from stages.entropylong.evaluate import choose_lr

    losses = {("entropylong", 0, 0): 2.60, ("concatenation", 0, 0): 2.50, ("entropylong", 1, 0): 2.55,
              ("entropylong", 0, 1): 2.52, ("concatenation", 0, 1): 2.58, ("entropylong", 1, 1): 2.56}
    chosen, means = choose_lr(losses, 2)
    assert means == pytest.approx([2.55, 2.5533333])
    assert chosen == 0  # lr 1 wins one variant's seed 0 but loses on the mean
    assert choose_lr({("a", 0, 0): 1.0, ("a", 0, 1): 1.0}, 2)[0] == 0  # ties: the first


def test_per_seed_metrics_gate_forgetting_and_paired_differences():
    from stages.entropylong.evaluate import BASE, per_seed_metrics

    def row(cg: float, alone: float) -> dict[str, float]:
        return {"content_gain": cg, "nll_without": alone}

    results = {BASE: [row(0.02, 2.5)],
               "entropylong": [row(0.05, 2.6), row(0.03, 2.4)],
               "no_verification": [row(0.04, 2.7), row(0.01, 2.5)],
               "concatenation": [row(0.01, 2.5), row(0.02, 2.45)]}
    ps = per_seed_metrics(results, 2)
    np.testing.assert_allclose(ps["base_content_gain"], [0.02, 0.02])
    np.testing.assert_allclose(ps["gain_entropylong_minus_no_verification"], [0.01, 0.02])
    np.testing.assert_allclose(ps["gain_entropylong_minus_concatenation"], [0.04, 0.01])
    np.testing.assert_allclose(ps["gain_no_verification_minus_concatenation"], [0.03, -0.01])
    np.testing.assert_allclose(ps["gain_entropylong_minus_base"], [0.03, 0.01])
    np.testing.assert_allclose(ps["content_gain_min"], [0.01, 0.01])
    np.testing.assert_allclose(ps["alone_loss_rise_max"], [0.2, 0.0])  # worst variant per seed vs the base
    assert list(ps) == sorted(ps)


def test_validation_split_prefers_documents_without_a_verified_context():
    from stages.entropylong.construct import validation_split

    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(6)],
                         "split": ["train", "train", "train", "train", "heldout", "train"]})
    kept, eligible = {"d0", "d1", "d5"}, {"d0", "d1", "d2", "d3", "d4", "d5"}
    val = validation_split(docs, kept, eligible, 2, np.random.default_rng(0))
    assert sorted(val) == ["d2", "d3"]  # the two training documents no training sequence needs
    val = validation_split(docs, kept, eligible, 3, np.random.default_rng(0))
    assert {"d2", "d3"} < set(val) and "d4" not in val
    assert "d3" not in validation_split(docs, kept, eligible - {"d3"}, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="val_docs"):
        validation_split(docs, kept, eligible, 5, np.random.default_rng(0))
