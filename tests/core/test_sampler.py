"""The shared KV-cache sampler gives the same tokens as recomputing the full forward at every step."""

import pytest
import torch

from stages.core.sampler import left_pad, sample, sample_without_cache
from stages.core.transformer import TinyGPT

VOCAB, EOS, PAD = 12, 2, 0


def tiny_lm(seed: int = 0) -> TinyGPT:
    torch.manual_seed(seed)
    return TinyGPT(VOCAB, d_model=16, n_layers=2, n_heads=2, max_len=32).eval()


def test_left_pad_positions_and_mask():
    ids, pos, pad = left_pad([[5, 6, 7], [8]], PAD)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert pos.tolist() == [[0, 1, 2], [0, 0, 0]]
    assert pad.tolist() == [[False, False, False], [True, True, False]]


@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.7])
def test_cache_equals_full_recompute_for_the_same_seed(temperature):
    lm = tiny_lm()
    prompts = [[1, 4, 5], [1, 6, 7], [1, 8, 3], [1, 9, 9]]
    a = sample(lm, prompts, 12, EOS, PAD, temperature, torch.Generator().manual_seed(3))
    b = sample_without_cache(lm, prompts, 12, EOS, PAD, temperature, torch.Generator().manual_seed(3))
    assert a == b
    assert all(len(r) >= 1 for r in a)


def test_padded_rows_give_what_each_row_gives_alone():
    lm = tiny_lm(1)
    prompts = [[1, 4, 5, 6, 7], [1, 8], [1, 3, 3]]
    together = sample(lm, prompts, 10, EOS, PAD, 0.0)
    for p, row in zip(prompts, together, strict=True):
        assert sample_without_cache(lm, [p], 10, EOS, PAD, 0.0) == [row]


def test_stops_at_eos_and_keeps_it():
    lm = tiny_lm(2)
    with torch.no_grad():
        lm.head.bias.fill_(-50.0)
        lm.head.bias[EOS] = 50.0      # eos is always the argmax
    assert sample(lm, [[1, 4], [1, 5, 6]], 8, EOS, PAD, 0.0) == [[EOS], [EOS]]


def test_refuses_sequences_longer_than_the_model():
    with pytest.raises(ValueError, match="max_len"):
        sample(tiny_lm(), [[1] * 30], 8, EOS, PAD, 0.0)
