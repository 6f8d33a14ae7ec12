"""Patching on the real SmolLM2 asset: the cached single-position path is exact, and a no-op patch changes nothing."""

from __future__ import annotations

import pytest
import torch

from stages.assets.loaders import load_causal_lm
from stages.ndm.lm import answer_ids, encode
from stages.ndm.ndm import random_rotation
from stages.ndm.patching import (
    last_position_residual,
    logit_difference,
    patched_last_position,
    prefix_cache,
    subspace_patches,
)

TEXT = "When Mary and John went to the store, John gave a drink to"
CORRUPTED = "When Anna and Paul went to the store, Paul gave a drink to"


@pytest.fixture(scope="module")
def lm(smollm2_asset):
    torch.set_num_threads(1)
    return load_causal_lm(smollm2_asset)


def test_cached_last_position_matches_the_full_forward_pass(lm):
    model, tok = lm
    ids = torch.tensor([encode(tok, TEXT)])
    good, bad = answer_ids(tok, [" Mary"]), answer_ids(tok, [" John"])
    with torch.no_grad():
        full = model.model(input_ids=ids, output_hidden_states=True)
    ld_full = logit_difference(full.last_hidden_state[0, -1], model.get_output_embeddings().weight, good, bad)
    ld, h = patched_last_position(model, ids, prefix_cache(model, ids), 12, None, good, bad)
    assert float(ld[0]) == pytest.approx(float(ld_full), abs=1e-3)
    assert torch.allclose(h, full.hidden_states[12][0, -1], atol=1e-4)
    assert torch.allclose(last_position_residual(model, ids, 12)[0], h, atol=1e-4)


def test_patching_a_subspace_with_the_clean_activation_changes_nothing(lm):
    model, tok = lm
    ids = torch.tensor([encode(tok, TEXT)])
    good, bad = answer_ids(tok, [" Mary"]), answer_ids(tok, [" John"])
    cache = prefix_cache(model, ids)
    clean, h = patched_last_position(model, ids, cache, 20, None, good, bad)
    rot = random_rotation(h.shape[0], torch.Generator().manual_seed(0)).double()
    rows = subspace_patches(h.double(), h.double(), rot, [64] * 9).float()
    ld, _ = patched_last_position(model, ids, cache, 20, rows, good, bad)
    assert torch.allclose(ld, clean.expand_as(ld), atol=1e-4)
    # the cache is copied, never changed: the clean run is the same afterwards
    again, _ = patched_last_position(model, ids, cache, 20, None, good, bad)
    assert float(again[0]) == pytest.approx(float(clean[0]), abs=1e-5)


def test_patching_every_subspace_with_the_corrupted_activation_is_the_full_patch(lm):
    model, tok = lm
    ids, cids = torch.tensor([encode(tok, TEXT)]), torch.tensor([encode(tok, CORRUPTED)])
    good, bad = answer_ids(tok, [" Mary"]), answer_ids(tok, [" John"])
    cache = prefix_cache(model, ids)
    _, h = patched_last_position(model, ids, cache, 24, None, good, bad)
    hc = last_position_residual(model, cids, 24)[0]
    rot = random_rotation(h.shape[0], torch.Generator().manual_seed(1)).double()
    parts = subspace_patches(h.double(), hc.double(), rot, [288, 288])
    assert torch.allclose((parts - h.double()).sum(dim=0) + h.double(), hc.double(), atol=1e-4)
