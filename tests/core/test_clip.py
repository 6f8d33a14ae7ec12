"""The shared CLIP on cached features: the loss by hand, the metrics, the projectors, and EfficientNet-Lite0's shape."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stages.core.clip import FeatureCLIP, multi_positive_infonce, recall_at_k, zero_shot_predict
from stages.core.efficientnet_lite import FEATURE_DIM, EfficientNetLite0, SameConv2d


def test_infonce_of_a_perfectly_aligned_batch_goes_to_zero_with_the_scale():
    emb = torch.eye(4)
    pos = torch.eye(4, dtype=torch.bool)
    # logits s on the diagonal, 0 elsewhere: each row's loss is log(1 + 3 e^{-s})
    for s in (1.0, 10.0):
        expected = math.log(1 + 3 * math.exp(-s))
        assert multi_positive_infonce(emb, emb, pos, s).item() == pytest.approx(expected, rel=1e-3)
    assert multi_positive_infonce(emb, emb, pos, 100.0).item() < 1e-10


def test_infonce_with_two_positives_by_hand():
    # image 0 has texts 0 and 1 as positives; image 1 text 1 only; logits = scale * identity-like scores
    img = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    txt = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    pos = torch.tensor([[True, True], [False, True]])
    s = 2.0
    lse = math.log(math.exp(s) + 1)
    i2t = ((-(s - lse) - (0 - lse)) / 2 + -(s - lse)) / 2
    # text 0: positive image 0 only; text 1: images 0 and 1
    t2i = (-(s - lse) + (-(0 - lse) - (s - lse)) / 2) / 2
    assert multi_positive_infonce(img, txt, pos, s).item() == pytest.approx((i2t + t2i) / 2, rel=1e-6)


def test_infonce_refuses_a_row_without_positive():
    with pytest.raises(ValueError, match="at least one positive"):
        multi_positive_infonce(torch.eye(2), torch.eye(2), torch.tensor([[True, False], [False, False]]), 1.0)


def test_recall_of_an_identity_embedding_is_one_and_of_a_constant_is_zero_at_one():
    emb = np.eye(6, dtype=np.float32)
    assert recall_at_k(emb, emb, np.arange(6)) == {1: 1.0, 5: 1.0}
    const = np.ones((6, 3), dtype=np.float32)
    r = recall_at_k(const, const, np.arange(6), ks=(1, 6))
    assert r == {1: 0.0, 6: 1.0}  # ties count against the query


def test_recall_of_a_swapped_pair():
    emb = np.eye(3, dtype=np.float32)
    assert recall_at_k(emb, emb, np.array([1, 0, 2]), ks=(1, 2)) == {1: pytest.approx(1 / 3), 2: pytest.approx(1 / 3)}


def test_zero_shot_picks_the_closest_class():
    classes = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert zero_shot_predict(np.array([[0.9, 0.1], [0.2, 0.8]]), classes).tolist() == [0, 1]


def test_feature_clip_heads_are_separate_and_unit_norm():
    torch.manual_seed(0)
    model = FeatureCLIP(10, 6, 4, image_heads=("taxonomy", "caption"), hidden=8)
    x = torch.randn(5, 10)
    a, b = model.embed_images(x, "taxonomy"), model.embed_images(x, "caption")
    assert not torch.allclose(a, b)
    torch.testing.assert_close(a.norm(dim=1), torch.ones(5))
    torch.testing.assert_close(model.embed_texts(torch.randn(3, 6)).norm(dim=1), torch.ones(3))
    assert model.logit_scale().item() == pytest.approx(1 / 0.07)
    with pytest.raises(ValueError, match="unique"):
        FeatureCLIP(10, 6, 4, image_heads=("a", "a"))


def test_same_padding_keeps_ceil_of_size_over_stride():
    conv = SameConv2d(1, 1, 3, stride=2, bias=False)
    assert conv(torch.zeros(1, 1, 7, 8)).shape[-2:] == (4, 4)


def test_lite0_feature_shape_on_112_pixels():
    model = EfficientNetLite0().eval()
    with torch.no_grad():
        f = model.features(torch.full((2, 3, 112, 112), 128.0))
    assert f.shape == (2, FEATURE_DIM) and torch.isfinite(f).all()
