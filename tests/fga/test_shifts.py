"""Corruptions and augmented views on small arrays."""

import numpy as np
import torch

from stages.fga.shifts import CORRUPTIONS, augmented_views, corrupt, to_rgb


def test_every_corruption_changes_the_image_more_at_higher_severity():
    rng = np.random.default_rng(0)
    images = (rng.random((4, 28, 28)) * 255).astype(np.uint8)
    clean = corrupt(images, "clean", 0, torch.Generator().manual_seed(0))
    for kind in CORRUPTIONS:
        d = [float((corrupt(images, kind, s, torch.Generator().manual_seed(0)) - clean).abs().mean()) for s in (1, 3)]
        assert 0 < d[0] <= d[1] + 1e-6, kind
        out = corrupt(images, kind, 2, torch.Generator().manual_seed(0))
        assert out.min() >= 0 and out.max() <= 1


def test_views_keep_the_image_as_view_zero_and_rgb_upscaling():
    x = torch.rand(3, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    v = augmented_views(x, 5, (0.5, 1.0), torch.Generator().manual_seed(1))
    assert v.shape == (3, 5, 1, 28, 28) and torch.equal(v[:, 0], x)
    assert not torch.equal(v[:, 1], x)
    rgb = to_rgb(x, 64)
    assert rgb.shape == (3, 64, 64, 3) and rgb.dtype == np.uint8
    assert (rgb[..., 0] == rgb[..., 2]).all()


def test_views_shift_by_at_most_max_shift_and_keep_the_object():
    x = torch.zeros(2, 1, 28, 28)
    x[:, :, 10:18, 10:18] = 1.0                                    # a bright square in the middle
    v = augmented_views(x, 9, (1.0, 1.0), torch.Generator().manual_seed(3), max_shift=2, flip=False)
    for view in v[:, 1:].reshape(-1, 28, 28):
        rows, cols = torch.nonzero(view > 0.5, as_tuple=True)
        assert abs(int(rows.min()) - 10) <= 2 and abs(int(cols.min()) - 10) <= 2     # moved by at most 2 px
        assert float(view.sum()) == 64.0                                               # the object is whole
    assert any(not torch.equal(view, x[0, 0]) for view in v[0, 1:, 0])                # and some views moved
    still = augmented_views(x, 4, (1.0, 1.0), torch.Generator().manual_seed(3), max_shift=0, flip=False)
    assert torch.equal(still[:, 1:], x.unsqueeze(1).expand(2, 3, 1, 28, 28))           # no crop, shift or flip
