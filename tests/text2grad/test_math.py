"""Word-to-token mapping, token rewards with KL, the reward schemes, PPO clipping, the critic, the task."""

import json

import numpy as np
import pytest
import torch

from stages.core.rl import clipped_token_loss, gae
from stages.text2grad.alignment import (
    add_terminal,
    align_words_to_tokens,
    dense_word_scores,
    length_normalised_dense_scores,
    omission_penalty,
    scheme_token_scores,
    token_rewards_with_kl,
    word_scores_to_token_scores,
)
from stages.text2grad.critic import MAX_SPANS, annotate
from stages.text2grad.models import Decoder, pad_batch, sample
from stages.text2grad.task import (
    Example,
    Noise,
    fact_f1,
    missing_facts,
    noisy_summary,
    parse_source,
    reference_words,
    rouge_l,
    rouge_l_prf,
    sample_example,
)

# --- word-to-token alignment on hand-made tokenisations ---


def test_multi_token_words_take_their_word_score():
    words = ["tom", "saw", "lena", "."]
    tokens = ["tom", " saw", " l", "ena", " ."]
    assert align_words_to_tokens(words, tokens) == [0, 1, 2, 2, 3]
    assert word_scores_to_token_scores([1, -1, 1, 0], [0, 1, 2, 2, 3], tokens) == [1.0, -1.0, 1.0, 1.0, 0.0]


def test_punctuation_and_special_tokens_get_zero():
    words = ["tom", "saw", "car."]
    tokens = ["<bos>", "tom", " saw", " car", ".", "<eos>"]
    special = [True, False, False, False, False, True]
    align = align_words_to_tokens(words, tokens, special)
    assert align == [None, 0, 1, 2, 2, None]
    # the stop belongs to the word "car." but is punctuation: 0, not the word's −1
    assert word_scores_to_token_scores([1, 1, -1], align, tokens) == [0.0, 1.0, 1.0, -1.0, 0.0, 0.0]


def test_repeated_words_align_in_order():
    words = ["tom", "has", "tom", "."]
    tokens = [" tom", " has", " tom", " ."]
    assert align_words_to_tokens(words, tokens) == [0, 1, 2, 3]
    assert word_scores_to_token_scores([1, 0, -1, 0], [0, 1, 2, 3], tokens) == [1.0, 0.0, -1.0, 0.0]


def test_unmatched_tokens_get_none_and_unmatched_words_give_no_score():
    words = ["tom", "saw", "red", "car"]
    # "saw" never appears (the tokeniser produced "seen"); "red" is found again after it
    tokens = [" tom", " seen", " red", " car"]
    align = align_words_to_tokens(words, tokens)
    assert align == [0, None, 2, 3]
    assert word_scores_to_token_scores([1, 5, -1, 1], align, tokens) == [1.0, 0.0, -1.0, 1.0]


def test_tokens_after_the_last_word_are_unaligned():
    assert align_words_to_tokens(["a"], [" a", " b"]) == [0, None]


# --- reward schemes and token rewards with KL ---


def test_dense_labelling_gives_plus_one_outside_poor_spans():
    assert dense_word_scores([1, 0, -1, 0]) == [1.0, 1.0, -1.0, 1.0]


def test_length_normalised_dense_scores_by_hand():
    # c = 10 reference words: a 5-word output keeps ±1; a 20-word output is scaled by 10/20
    assert length_normalised_dense_scores([1, 0, -1, 0, 0], 10) == [1.0, 1.0, -1.0, 1.0, 1.0]
    assert length_normalised_dense_scores([0] * 20, 10) == [0.5] * 20
    assert length_normalised_dense_scores([], 10) == []
    # a longer output of all-positive words earns no more in total than one of reference length
    assert sum(length_normalised_dense_scores([0] * 24, 10)) == pytest.approx(10.0)
    assert sum(length_normalised_dense_scores([0] * 10, 10)) == pytest.approx(10.0)


def test_omission_penalty_on_a_hand_made_case():
    ex = parse_source("tom saw red car . maybe ann has old hat . bob wants big dog .")
    assert reference_words(ex) == 10
    assert missing_facts("tom saw red car . bob wants big dog .", ex) == 0
    assert missing_facts("tom saw red car . ann has old hat .", ex) == 1      # bob's fact left out
    assert missing_facts("tom saw red cake .", ex) == 2                       # altered: not stated
    assert missing_facts("", ex) == 2
    assert omission_penalty(missing_facts("tom saw red car .", ex), 2.0) == -2.0
    assert omission_penalty(0, 2.0) == 0.0
    # the critic's "missing N" counts the same facts
    assert "missing 1 ." in annotate("tom saw red car . ann has old hat .", ex).critique


def test_terminal_value_goes_on_the_last_generated_token_only():
    scores = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 0, 0]])
    out = add_terminal(scores, mask, torch.tensor([-2.0, -4.0]))
    assert out.tolist() == [[0.0, 1.0, 1.0, -2.0], [1.0, -4.0, 0.0, 0.0]]


def test_oracle_token_rewards_sum_to_the_oracle_terminal_reward():
    ex = parse_source("tom saw red car . maybe ann has old hat . bob wants big dog .")
    labels = annotate("tom saw red car . ann has old hat . tom saw red car .", ex).word_labels
    assert labels == [1, 1, 1, 1, 0, -1, -1, -1, -1, 0, -1, -1, -1, -1, 0]
    s = torch.tensor([[0.0, *map(float, labels)]])
    mask = torch.tensor([[0] + [1] * len(labels)])
    token = scheme_token_scores(s, mask, "oracle_token")
    terminal = scheme_token_scores(s, mask, "oracle_terminal")
    assert token.tolist() == s.tolist()
    assert terminal[0, :-1].abs().sum() == 0 and terminal[0, -1] == sum(labels) == -4
    assert torch.equal(token.sum(-1), terminal.sum(-1))


def test_scalar_scheme_puts_the_summed_scores_on_the_last_token():
    scores = torch.tensor([[0.0, 1.0, 1.0, -1.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[0, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    out = scheme_token_scores(scores, mask, "scalar")
    assert out.tolist() == [[0.0, 0.0, 0.0, 0.0, 1.0], [0.0, 2.0, 0.0, 0.0, 0.0]]
    assert scheme_token_scores(scores, mask, "text2grad").tolist() == (scores * mask).tolist()
    # the same total reward per sequence: only its placement differs
    assert torch.equal(out.sum(-1), scheme_token_scores(scores, mask, "text2grad").sum(-1))


def test_token_rewards_subtract_the_kl_penalty_on_generated_tokens_only():
    s = torch.tensor([[0.0, 1.0, -1.0]])
    old = torch.tensor([[-1.0, -0.5, -2.0]], requires_grad=True)
    ref = torch.tensor([[-1.0, -1.0, -1.0]])
    r = token_rewards_with_kl(s, old, ref, torch.tensor([[0, 1, 1]]), beta=0.1)
    # t=1: 1 − 0.1·(−0.5 + 1) = 0.95; t=2: −1 − 0.1·(−2 + 1) = −0.9
    assert torch.allclose(r, torch.tensor([[0.0, 0.95, -0.9]]))
    assert not r.requires_grad


def test_token_rewards_and_gae_by_hand():
    # two generated tokens, γ = 1, λ = 0.5: r = (1, −1), V = (0.5, 0.25)
    r = token_rewards_with_kl(torch.tensor([[1.0, -1.0]]), torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), 0.1)
    adv, ret = gae(r, torch.tensor([[0.5, 0.25]]), torch.ones(1, 2), gamma=1.0, lam=0.5)
    # δ1 = −1 − 0.25 = −1.25; δ0 = 1 + 0.25 − 0.5 = 0.75; A0 = 0.75 + 0.5·(−1.25) = 0.125
    assert torch.allclose(adv, torch.tensor([[0.125, -1.25]]))
    assert torch.allclose(ret, torch.tensor([[0.625, -1.0]]))


def test_ppo_clipping_stops_the_gradient_beyond_the_trust_region():
    log_ratio = torch.log(torch.tensor([[1.5, 0.5, 1.1]])).requires_grad_(True)
    adv = torch.tensor([[1.0, -1.0, 1.0]])
    loss = clipped_token_loss(log_ratio, adv, torch.ones(1, 3), clip_eps=0.2, normalise="token")
    # clipped terms: 1.2·1 and 0.8·(−1); the unclipped 1.1·1; loss = −(1.2 − 0.8 + 1.1)/3
    assert loss.item() == pytest.approx(-(1.2 - 0.8 + 1.1) / 3)
    loss.backward()
    assert log_ratio.grad[0, 0] == 0 and log_ratio.grad[0, 1] == 0 and log_ratio.grad[0, 2] != 0


# --- the programmatic critic ---

EX = Example(claims=(("tom", "saw", "red", "car"), ("ann", "has", "big", "dog"), ("bob", "sold", "old", "hat"),
                     ("eve", "wants", "blue", "cake")), is_fact=(True, False, True, True))


def test_critic_labels_good_and_poor_spans_by_hand():
    out = "tom saw red car . ann has big dog . bob sold green hat ."
    a = annotate(out, EX)
    assert a.good_spans == ["tom saw red car"]
    assert a.poor_spans == ["ann has big dog", "bob sold green hat"]
    assert a.word_labels == [1, 1, 1, 1, 0, -1, -1, -1, -1, 0, -1, -1, -1, -1, 0]
    assert a.critique == ("correct : tom saw red car . unconfirmed : ann has big dog . "
                          "invented : bob sold green hat . missing 2 .")
    assert json.loads(a.to_json()) == {"critique": a.critique, "good_spans": a.good_spans, "poor_spans": a.poor_spans}


def test_critic_keeps_at_most_two_spans_of_each_kind_and_flags_repeats():
    out = "tom saw red car . tom saw red car . bob sold old hat . eve wants blue cake ."
    a = annotate(out, EX)
    assert a.good_spans == ["tom saw red car", "bob sold old hat"] and a.poor_spans == ["tom saw red car"]
    assert a.word_labels[5:9] == [-1] * 4 and a.word_labels[15:19] == [0] * 4  # third fact: past the limit
    assert "repeated : tom saw red car" in a.critique and a.critique.endswith("missing 0 .")


@pytest.mark.parametrize("seed", range(40))
def test_critic_spans_are_substrings_of_the_output_and_backed_by_the_critique(seed):
    r = np.random.default_rng(seed)
    ex = sample_example(r, 2, 3)
    out = noisy_summary(ex, Noise(0.4, 0.6, 0.4, 0.4), r)
    a = annotate(out, ex)
    assert len(a.good_spans) <= MAX_SPANS and len(a.poor_spans) <= MAX_SPANS
    for span in a.good_spans + a.poor_spans:
        assert span in out and span in a.critique
    assert len(a.word_labels) == len(out.split())
    labelled = [w for w, v in zip(out.split(), a.word_labels, strict=True) if v]
    assert len(labelled) == 4 * (len(a.good_spans) + len(a.poor_spans))


# --- the task and its metrics ---


def test_source_round_trip_and_reference():
    r = np.random.default_rng(3)
    ex = sample_example(r, 2, 2)
    assert parse_source(ex.source_text()) == ex
    assert ex.reference().count(".") == 2 and "maybe" not in ex.reference()


def test_rouge_precision_and_recall_by_hand():
    # output "tom saw red car ." (5) vs reference of 10 words sharing that prefix: P = 1, R = 0.5
    p, r, f = rouge_l_prf(["tom saw red car ."], ["tom saw red car . bob wants big dog ."])[0]
    assert (p, r) == pytest.approx((1.0, 0.5)) and f == pytest.approx(2 / 3)


def test_fact_f1_and_rouge_by_hand():
    assert fact_f1("tom saw red car . bob sold old hat . eve wants blue cake .", EX) == 1.0
    # one fact of three stated, plus a distractor: P = 1/2, R = 1/3 -> F1 = 0.4
    assert fact_f1("tom saw red car . ann has big dog .", EX) == pytest.approx(0.4)
    assert fact_f1("", EX) == 0.0
    assert rouge_l(["tom saw red car ."], ["tom saw red car . bob sold old hat ."])[0] == pytest.approx(2 / 3)


# --- cached decoding equals the model's own forward ---


def test_cached_decoding_matches_the_full_forward():
    from stages.core.transformer import TinyGPT

    torch.manual_seed(0)
    lm = TinyGPT(30, 16, 2, 2, 32).eval()
    prompts = [[1, 5, 6, 7], [1, 8]]
    dec = Decoder(lm, prompts, 0)
    seqs, steps = [list(p) for p in prompts], [dec.last]
    with torch.no_grad():
        for t in range(4):
            nxt = torch.tensor([3 + t, 9])
            for s, n in zip(seqs, nxt, strict=True):
                s.append(int(n))
            steps.append(dec.feed(nxt))
        full = lm(pad_batch(seqs, 0))
    for i, p in enumerate(prompts):
        for t, logp in enumerate(steps):
            assert torch.allclose(full[i, len(p) - 1 + t], logp[i], atol=1e-5)
    out = sample(lm, prompts, 5, eos_id=2, pad_id=0, temperature=0.0, generator=None)
    assert all(1 <= len(o) <= 5 for o in out)


def test_value_loss_does_not_reach_the_policy_trunk():
    from stages.core.transformer import TinyGPT
    from stages.text2grad.models import PolicyWithValue

    torch.manual_seed(0)
    policy = PolicyWithValue(TinyGPT(20, 16, 1, 2, 12), 16)
    _, values = policy(torch.randint(0, 20, (2, 6)))
    values.pow(2).sum().backward()
    assert all(p.grad is None or p.grad.abs().sum() == 0 for p in policy.lm.parameters())
    assert policy.value_head.weight.grad.abs().sum() > 0
