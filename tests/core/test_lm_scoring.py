"""Batched LM scoring equals one-sequence-at-a-time scoring from full logits."""

from __future__ import annotations

import numpy as np
import pytest

from stages.core.lm_scoring import perplexity, score_sequences

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny_lm():
    """A randomly initialised Llama with the SmolLM2 architecture, shrunk."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      tie_word_embeddings=True)
    return LlamaForCausalLM(cfg).eval()


def _reference(model, seq: list[int], start: int) -> tuple[np.ndarray, np.ndarray]:
    """Full logits of a single unpadded sequence, the textbook way."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([seq])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    pos = torch.arange(start - 1, len(seq) - 1)
    lp = logp[pos, torch.tensor(seq)[pos + 1]]
    ent = -(logp[pos].exp() * logp[pos]).sum(-1)
    return lp.numpy(), ent.numpy()


def _sequences(n: int, seed: int = 1) -> list[list[int]]:
    g = np.random.default_rng(seed)
    return [g.integers(0, 97, size=int(g.integers(2, 40))).tolist() for _ in range(n)]


@pytest.mark.parametrize("batch_size", [1, 3, 16])
def test_batched_matches_unbatched(tiny_lm, batch_size):
    seqs = _sequences(11)
    scores = score_sequences(tiny_lm, seqs, batch_size=batch_size, head_chunk=7)
    assert len(scores) == len(seqs)
    for seq, s in zip(seqs, scores, strict=True):
        lp, ent = _reference(tiny_lm, seq, 1)
        assert s.token_ids.tolist() == seq[1:]
        np.testing.assert_allclose(s.logprobs, lp, atol=1e-4)
        np.testing.assert_allclose(s.entropies, ent, atol=1e-4)
        assert np.all(s.entropies >= 0) and np.all(s.entropies <= np.log(97) + 1e-4)


def test_start_positions_score_only_the_continuation(tiny_lm):
    seqs = _sequences(5, seed=2)
    starts = [max(1, len(s) // 2) for s in seqs]
    scores = score_sequences(tiny_lm, seqs, start=starts, batch_size=2)
    for seq, st, s in zip(seqs, starts, scores, strict=True):
        lp, _ = _reference(tiny_lm, seq, st)
        assert len(s.logprobs) == len(seq) - st
        np.testing.assert_allclose(s.logprobs, lp, atol=1e-4)
        assert s.total_logprob == pytest.approx(float(lp.sum()), abs=1e-3)


def test_sequence_with_nothing_to_score(tiny_lm):
    scores = score_sequences(tiny_lm, [[5], [1, 2, 3], [7, 8]], start=[1, 3, 2], batch_size=3)
    assert [len(s.logprobs) for s in scores] == [0, 0, 0]
    assert scores[0].entropies.shape == (0,)


def test_perplexity_and_bad_starts(tiny_lm):
    seqs = _sequences(4, seed=3)
    scores = score_sequences(tiny_lm, seqs)
    all_lp = np.concatenate([_reference(tiny_lm, s, 1)[0] for s in seqs])
    assert perplexity(scores) == pytest.approx(float(np.exp(-all_lp.mean())), rel=1e-4)
    with pytest.raises(ValueError, match="start 0"):
        score_sequences(tiny_lm, seqs, start=0)
    with pytest.raises(ValueError, match="start positions"):
        score_sequences(tiny_lm, seqs, start=[1, 1])
