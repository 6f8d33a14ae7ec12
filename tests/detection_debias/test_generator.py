"""The blueprint generator's condition, its output and a tiny training run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stages.detection_debias.blueprint_generator import (
    N_INPUT,
    BlueprintGenerator,
    appearance_of,
    generate,
    generator_input,
    reconstruction_loss,
    train_generator,
)
from stages.detection_debias.scenes import (
    BLUEPRINT_COLOURS,
    Bins,
    Obj,
    Scene,
    blueprint,
    dress,
    layout_from_groups,
    render,
)

BINS = Bins(48, ((5, 8), (11, 15), (20, 28)), 2, 2)


def test_blueprint_uses_each_class_colour_only_inside_its_box():
    layout = [(1, (5, 6, 17, 18)), (2, (26, 2, 34, 10)), (0, (30, 30, 44, 44))]
    bp = blueprint(layout, 48)
    for cls, (x0, y0, x1, y1) in layout:
        inside = bp[:, y0:y1, x0:x1].reshape(3, -1)
        assert (inside == BLUEPRINT_COLOURS[cls][:, None]).all()
    colours = {tuple(c) for c in bp.reshape(3, -1).T.tolist()}
    assert colours == {(0.0, 0.0, 0.0), *(tuple(BLUEPRINT_COLOURS[c].tolist()) for c, _ in layout)}


def test_condition_by_hand():
    layout = [(3, (10, 20, 14, 22))]
    cond = generator_input(layout, [np.array([0.2, 0.4, 0.6])], np.array([0.1, 0.1, 0.1]), 48)
    assert cond.shape == (N_INPUT, 48, 48)
    assert cond[3, 20, 10:14].tolist() == pytest.approx([0.125, 0.375, 0.625, 0.875])   # u: pixel centres
    assert cond[4, 20:22, 10].tolist() == pytest.approx([0.25, 0.75])
    assert cond[5:8, 21, 13].tolist() == pytest.approx([0.2, 0.4, 0.6]) and (cond[5:8, 0, 0] == 0).all()
    assert (cond[8:11] == np.float32(0.1)).all()                            # background colour everywhere
    assert (cond[3:5, :20] == 0).all() and (cond[3:5, :, 14:] == 0).all()   # no position outside the box


def test_appearance_is_read_off_a_render():
    obj = Obj(0, (10, 10, 30, 30), (0.8, 0.2, 0.4), "solid")
    img = render(Scene((obj,), "flat", ((0.1, 0.3, 0.2), (0.1, 0.3, 0.2)), 0), 48)
    colours, background = appearance_of(img, [(0, (10, 10, 30, 30))])
    assert colours[0] == pytest.approx([0.8, 0.2, 0.4], abs=0.01)
    assert background == pytest.approx([0.1, 0.3, 0.2], abs=0.01)


def test_generator_output_shape_and_range():
    model = BlueprintGenerator(4)
    cond = torch.rand(3, N_INPUT, 48, 48)
    out = model(cond)
    assert out.shape == (3, 3, 48, 48) and out.min() >= 0 and out.max() <= 1
    img = generate(model, cond)
    assert img.dtype == torch.uint8 and img.shape == (3, 3, 48, 48)
    assert generate(model, cond[:0]).shape == (0, 3, 48, 48)


def test_training_lowers_the_reconstruction_error():
    gen = np.random.default_rng(0)
    layouts = [layout_from_groups(BINS, [int(g) for g in gen.integers(BINS.n_groups, size=2)], gen) for _ in range(24)]
    images = torch.from_numpy(np.stack([render(dress(BINS, lay, gen), 48) for lay in layouts]))
    cond = torch.from_numpy(np.stack([generator_input(lay, *appearance_of(im, lay), 48)
                                      for lay, im in zip(layouts, images.numpy(), strict=True)]))
    torch.manual_seed(1)
    untrained = BlueprintGenerator(4).eval()
    trained, losses = train_generator(cond, images, 4, 2e-2, 8, 30, seed=1, log_every=10)
    target = images.float() / 255
    with torch.no_grad():
        assert reconstruction_loss(trained(cond), target) < reconstruction_loss(untrained(cond), target)
    assert losses[-1] < losses[0] and len(losses) == 3
