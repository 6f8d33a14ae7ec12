"""The method's math against hand-computed values: DCT, DSE, SSG's rule, the residual tokenizer, the mask."""

from __future__ import annotations

import math

import pytest
import torch

from stages.ssg.guidance import (
    Arm,
    Cost,
    bilinear_prior,
    cfg_logits,
    dct2,
    dct_matrix,
    dse_prior,
    idct2,
    nearest_prior,
    sample,
    scale_high_frequency_share,
    ssg_logits,
    top_k_filter,
)
from stages.ssg.multiscale_vq import flatten_codes, next_scale_inputs, reconstruct, residual_quantize, split_codes
from stages.ssg.var import NextScaleTransformer, block_causal_mask


def test_dct_matrix_by_hand_and_orthonormal():
    c = dct_matrix(2)
    assert torch.allclose(c, torch.tensor([[1, 1], [1, -1]]) / math.sqrt(2), atol=1e-6)
    c4 = dct_matrix(4)
    assert torch.allclose(c4 @ c4.T, torch.eye(4), atol=1e-6)


def test_dct_round_trip_and_dc_coefficient():
    x = torch.randn(3, 5, 7, 7)
    assert torch.allclose(idct2(dct2(x)), x, atol=1e-5)
    # the DC coefficient of an orthonormal 2-D DCT is n · mean
    assert torch.allclose(dct2(x)[..., 0, 0], 7 * x.mean((-2, -1)), atol=1e-5)


def test_dse_of_a_constant_map_equals_its_interpolations():
    coarse = torch.full((2, 3, 2, 2), 1.7)
    for side in (4, 7):
        fine = dse_prior(coarse, side)
        assert torch.allclose(fine, bilinear_prior(coarse, side), atol=1e-5)
        assert torch.allclose(fine, torch.full((2, 3, side, side), 1.7), atol=1e-5)


def test_dse_of_a_smooth_map_keeps_its_interpolation_and_its_coarse_spectrum():
    # a smooth (already band-limited) coarse map: its bilinear interpolation's DCT low block equals the coarse
    # map's (scaled), so DSE changes nothing; checked on a 1 × 1 → 2 × 2 step, where every map is smooth
    coarse = torch.randn(4, 1, 1)
    assert torch.allclose(dse_prior(coarse, 2), bilinear_prior(coarse, 2), atol=1e-6)
    # whatever the map, DSE's low-frequency block is the coarse map's spectrum scaled by side / m
    coarse = torch.randn(2, 4, 4)
    fine = dse_prior(coarse, 7)
    assert torch.allclose(dct2(fine)[..., :4, :4], dct2(coarse) * 7 / 4, atol=1e-5)


def test_dse_is_closer_than_bilinear_to_a_coarse_cosine_on_the_finer_grid():
    m, n, u = 4, 8, 2
    x = torch.arange(m, dtype=torch.float32)
    xf = torch.arange(n, dtype=torch.float32)
    coarse = torch.cos(math.pi * (2 * x + 1) * u / (2 * m))[None] * torch.ones(m, 1)
    target = torch.cos(math.pi * (2 * xf + 1) * u / (2 * n))[None] * torch.ones(n, 1)
    # the low frequencies are the cosine's own; the high ones are the interpolation's (its aliasing remains)
    assert torch.allclose(dct2(dse_prior(coarse, n))[:m, :m], dct2(target)[:m, :m], atol=1e-5)
    dse_err = float((dse_prior(coarse, n) - target).norm())
    assert dse_err < 0.6 * float((bilinear_prior(coarse, n) - target).norm())


def test_nearest_prior_replicates():
    coarse = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert torch.equal(nearest_prior(coarse, 4)[0], torch.tensor([1.0, 1.0, 2.0, 2.0]))


def test_ssg_rule_by_hand_and_beta_zero_leaves_logits_unchanged():
    logits, prior = torch.tensor([2.0, 0.0, -1.0]), torch.tensor([1.0, 1.0, 1.0])
    assert torch.equal(ssg_logits(logits, prior, 0.0), logits)
    assert torch.allclose(ssg_logits(logits, prior, 0.5), torch.tensor([2.5, -0.5, -2.0]))
    # a prior constant over the vocabulary makes SSG a temperature 1 / (1 + β) after the softmax
    const = torch.full((3,), 0.3)
    assert torch.allclose(torch.softmax(ssg_logits(logits, const, 1.0), -1), torch.softmax(logits / 0.5, -1),
                          atol=1e-6)


def test_cfg_and_top_k_by_hand():
    assert torch.allclose(cfg_logits(torch.tensor([1.0, 3.0]), torch.tensor([1.0, 1.0]), 2.0),
                          torch.tensor([1.0, 5.0]))
    out = top_k_filter(torch.tensor([0.1, 0.5, 0.3, 0.9]), 2)
    assert torch.isinf(out[0]) and torch.isinf(out[2]) and out[1] == 0.5 and out[3] == 0.9


def test_multiscale_residuals_sum_back_to_the_input_embedding():
    torch.manual_seed(0)
    f, codebook, scales = torch.randn(3, 4, 7, 7), torch.randn(16, 4), [1, 2, 4, 7]
    codes, f_hat, rest = residual_quantize(f, codebook, scales)
    assert [c.shape[-1] for c in codes] == scales
    assert torch.allclose(reconstruct(codebook, codes, 7) + rest, f, atol=1e-5)
    assert torch.allclose(f_hat, reconstruct(codebook, codes, 7), atol=1e-6)
    # a map the codebook holds at the coarsest scale is explained there exactly (later scales pick the zero code)
    book = torch.cat([torch.zeros(1, 4), torch.randn(5, 4)])
    flat = book[3][None, :, None, None].expand(2, 4, 7, 7)
    codes, f_hat, rest = residual_quantize(flat, book, scales)
    assert int(codes[0].flatten()[0]) == 3 and all(int(c.max()) == 0 for c in codes[1:])
    assert torch.allclose(f_hat, flat, atol=1e-6) and float(rest.abs().max()) < 1e-6


def test_tokens_flatten_and_split_round_trip_and_teacher_inputs_shape():
    codes = [torch.randint(0, 9, (2, s, s)) for s in (1, 2, 4)]
    back = split_codes(flatten_codes(codes), [1, 2, 4])
    assert all(torch.equal(a, b) for a, b in zip(codes, back, strict=True))
    inputs = next_scale_inputs(torch.randn(9, 3), codes, [1, 2, 4], 4)
    assert inputs.shape == (2, 4 + 16, 3)


def test_block_causal_mask():
    mask = block_causal_mask([1, 2])  # positions: 0 | 1 2 3 4
    assert not mask[0, 0] and mask[0, 1:].all()  # scale 1 cannot read scale 2
    assert not mask[1:, :].any()                 # scale 2 reads everything


def test_transformer_is_block_causal():
    torch.manual_seed(0)
    model = NextScaleTransformer(8, 3, 10, [1, 2, 3], 16, 1, 2).eval()
    labels, inputs = torch.tensor([1]), torch.randn(1, 4 + 9, 3)
    a = model(labels, inputs)
    changed = inputs.clone()
    changed[:, 4:] += 1.0  # scale 3's inputs
    b = model(labels, changed)
    assert torch.allclose(a[:, :5], b[:, :5], atol=1e-6) and not torch.allclose(a[:, 5:], b[:, 5:])


def test_cached_forward_equals_the_full_prefix_forward_scale_by_scale():
    torch.manual_seed(0)
    model = NextScaleTransformer(8, 3, 10, [1, 2, 3], 16, 2, 2).eval()
    labels, inputs = torch.tensor([1, 4]), torch.randn(2, 4 + 9, 3)
    full = model(labels, inputs)
    cache: list = []
    parts = [model.forward_cached(labels, inputs[:, :0], cache), model.forward_cached(labels, inputs[:, :4], cache),
             model.forward_cached(labels, inputs[:, 4:], cache)]
    assert [p.shape[1] for p in parts] == [1, 4, 9] and cache[0][0].shape[2] == 14
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


def test_sampler_beta_zero_equals_no_guidance_and_counts_passes():
    torch.manual_seed(0)
    model = NextScaleTransformer(8, 3, 10, [1, 2, 4], 16, 1, 2).eval()
    codebook, labels = torch.randn(8, 3), torch.arange(6) % 10
    draw = lambda arm, cost=None: sample(model, codebook, labels, arm, 1.5, 8,  # noqa: E731
                                         torch.Generator().manual_seed(3), cost)
    none, zero = draw(Arm("none")), draw(Arm("ssg_dse", "dse", 0.0))
    assert all(torch.equal(a, b) for a, b in zip(none, zero, strict=True))
    cost = Cost()
    guided = draw(Arm("ssg_dse", "dse", 4.0), cost)
    assert cost.calls == 3 and cost.forward_rows == 3 * 2 * 6
    assert not all(torch.equal(a, b) for a, b in zip(none, guided, strict=True))


def test_high_frequency_share_by_hand():
    codebook = torch.tensor([[1.0], [-1.0]])
    flat = [torch.zeros(1, 1, 1, dtype=torch.long), torch.zeros(1, 2, 2, dtype=torch.long)]
    checker = [flat[0], torch.tensor([[[0, 1], [1, 0]]])]
    assert scale_high_frequency_share(codebook, flat) == pytest.approx([0.0], abs=1e-6)
    assert scale_high_frequency_share(codebook, checker) == pytest.approx([1.0], abs=1e-6)


def test_batch_loader_covers_every_sequence_once_per_epoch_in_seeded_order():
    from stages.ssg.train import batch_loader

    data = (torch.arange(10)[:, None].repeat(1, 3), torch.zeros(10, 2, 1), torch.arange(10))
    batches = list(batch_loader(data, 4, seed=7))
    assert [len(b[2]) for b in batches] == [4, 4, 2]
    assert sorted(torch.cat([b[2] for b in batches]).tolist()) == list(range(10))
    assert all(torch.equal(b[0][:, 0], b[2]) for b in batches)  # rows stay aligned across tensors
    again = list(batch_loader(data, 4, seed=7))
    assert all(torch.equal(a[2], b[2]) for a, b in zip(batches, again, strict=True))


def test_edge_choices_name_knobs_at_the_outer_edge_of_their_grid():
    import pandas as pd

    from stages.ssg.report import edge_choices

    rows = [{"split": "val", "arm": a, "beta": b, "temperature": 1.0}
            for a in ("ssg_dse", "ssg_bilinear", "ssg_nearest") for b in (0.5, 1.0)]
    rows += [{"split": "val", "arm": "temperature", "beta": 0.0, "temperature": t} for t in (0.6, 0.8)]
    chosen = {"ssg_dse": {"beta": 1.0}, "ssg_bilinear": {"beta": 0.5}, "ssg_nearest": {"beta": 0.0},
              "temperature": {"temperature": 0.6}}
    edges = edge_choices(pd.DataFrame(rows), {"seeds": [{"seed_index": 0, "chosen": chosen}]})
    assert edges == ["ssg_dse seed 0 (β = 1, the largest)", "temperature seed 0 (T = 0.6, the smallest)"]
