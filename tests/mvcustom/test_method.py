"""The diffusion math, DFR and LCC, and the measures against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stages.mvcustom.diffusion import (
    MultiViewDenoiser,
    Rig,
    camera_rays,
    clean_estimate,
    cosine_alpha_bar,
    denoising_loss,
    pose_features,
    pose_swap_hinge,
    predicted_x0,
    q_sample,
    swap_targets,
    velocity,
)
from stages.mvcustom.inference import (
    Guidance,
    consistency_aware_latent_completion,
    ddim_timesteps,
    depth_aware_feature_rendering,
    nearest_reference,
    sample,
)
from stages.mvcustom.metrics import colour_histogram, gt_mse, identity_similarity, pose_accuracy, pose_specificity
from stages.mvcustom.scene import Camera, pixel_rays
from stages.mvcustom.training import cosine_lr_factor, ema_update, random_roles


def test_cosine_schedule_by_hand():
    ab = cosine_alpha_bar(4)
    f = [math.cos((t / 4 + 0.008) / 1.008 * math.pi / 2) ** 2 for t in range(5)]
    assert ab.tolist() == pytest.approx([*(f[t] / f[0] for t in range(1, 4)), 1e-5], rel=1e-5)   # ᾱ_T clamped
    assert bool((ab[1:] < ab[:-1]).all())


def test_predicted_x0_inverts_q_sample():
    x0, noise = torch.randn(2, 3, 4, 4), torch.randn(2, 3, 4, 4)
    ab = torch.tensor(0.3)
    xt = q_sample(x0, ab, noise)
    assert torch.allclose(xt, 0.3 ** 0.5 * x0 + 0.7 ** 0.5 * noise)
    assert torch.allclose(predicted_x0(xt, noise, ab), x0, atol=1e-5)


def test_v_prediction_by_hand():
    x0, noise, ab = torch.tensor([0.5]), torch.tensor([-1.0]), torch.tensor(0.64)
    v = velocity(x0, noise, ab)
    assert float(v) == pytest.approx(0.8 * -1.0 - 0.6 * 0.5)                  # √ᾱ ε − √(1−ᾱ) x0
    xt = q_sample(x0, ab, noise)                                              # 0.8 · 0.5 + 0.6 · -1 = -0.2
    assert float(clean_estimate(v, xt, ab, "v")) == pytest.approx(0.5)        # √ᾱ x_t − √(1−ᾱ) v
    assert float(clean_estimate(noise, xt, ab, "eps")) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="prediction"):
        clean_estimate(v, xt, ab, "x0")


def test_pose_features_by_hand():
    f = pose_features(torch.tensor([90.0]), torch.tensor([30.0]))
    assert f[0].tolist() == pytest.approx([1.0, 0.0, 0.5, math.sqrt(3) / 2], abs=1e-6)


def test_camera_rays_by_hand():
    # azimuth 0, elevation 0: the camera sits at o = (0, 0.35, 3.5) looking along -z; right = +x, up = +y.
    # 2 x 2 pixels, focal 1: pixel (row 0, column 0) looks along (-0.5, 0.5, -1) / √1.5, and its moment is
    # o × d = (0.35 · -1 − 3.5 · 0.5, 3.5 · -0.5 − 0, 0 − 0.35 · -0.5) / √1.5 = (-2.1, -1.75, 0.175) / √1.5
    r = camera_rays(torch.tensor(0.0), torch.tensor(0.0), 3.5, 1.0, 2)
    n = math.sqrt(1.5)
    assert r.shape == (6, 2, 2)
    assert r[:, 0, 0].tolist() == pytest.approx([-0.5 / n, 0.5 / n, -1 / n, -2.1 / n, -1.75 / n, 0.175 / n], abs=1e-6)
    assert r[:3, 1, 1].tolist() == pytest.approx([0.5 / n, -0.5 / n, -1 / n], abs=1e-6)    # row 1, column 1
    # azimuth 90: the camera at (3.5, 0.35, 0) looks along -x, its right is -z
    r = camera_rays(torch.tensor(90.0), torch.tensor(0.0), 3.5, 1.0, 2)
    assert r[:3, 0, 0].tolist() == pytest.approx([-1 / n, 0.5 / n, 0.5 / n], abs=1e-6)


def test_camera_rays_match_the_renderer():
    for az, el in ((0.0, 20.0), (37.0, 25.0), (300.0, 40.0)):
        origins, dirs = pixel_rays(Camera(az, el, 3.5, 16.0, 16))
        r = camera_rays(torch.tensor(az), torch.tensor(el), 3.5, 16.0, 16).reshape(6, -1).T.numpy()
        np.testing.assert_allclose(r[:, :3], dirs, atol=1e-6)
        np.testing.assert_allclose(r[:, 3:], np.cross(origins, dirs), atol=1e-5)


def test_relative_rig_rotates_the_world_to_the_first_view():
    pose = torch.tensor([[[120.0, 20.0], [150.0, 40.0]], [[0.0, 20.0], [30.0, 40.0]]])
    code, rays = Rig(3.5, 16.0, 4, relative=True).condition(pose)
    assert torch.allclose(code[0], code[1]) and torch.allclose(rays[0], rays[1])   # same relative poses
    assert code[0, 0].tolist() == pytest.approx([0.0, 1.0, math.sin(math.radians(20)), math.cos(math.radians(20))],
                                                abs=1e-6)
    _code_w, rays_w = Rig(3.5, 16.0, 4).condition(pose)
    assert torch.allclose(rays_w[1], rays[1]) and not torch.allclose(rays_w[0], rays[0])


def test_ray_conditioned_denoiser_needs_rays_and_uses_them():
    torch.manual_seed(0)
    model = MultiViewDenoiser(4, 4, 2, emb_dim=8, rays=True).eval()
    torch.nn.init.normal_(model.out[-1].weight)
    x, t, pose, is_ref = torch.rand(1, 2, 3, 4, 4), torch.rand(1, 2), torch.rand(1, 2, 4), torch.tensor([[True, False]])
    rays = torch.rand(1, 2, 6, 4, 4)
    with pytest.raises(ValueError, match="rays"):
        model(x, t, pose, is_ref)
    assert not torch.allclose(model(x, t, pose, is_ref, rays), model(x, t, pose, is_ref, rays.flip(-1)))


def test_ddim_timesteps_span_the_schedule():
    assert ddim_timesteps(100, 5) == [99, 74, 50, 25, 0]


def guidance() -> Guidance:
    rendered = torch.full((2, 3, 2, 2), 0.5)
    visible = torch.tensor([[[True, False], [False, True]], [[False, False], [True, True]]])
    return Guidance(rendered, visible)


def test_dfr_takes_the_rendering_where_visible_only():
    x0 = torch.full((1, 2, 3, 2, 2), -1.0)
    out = depth_aware_feature_rendering(x0, guidance())
    assert out[0, 0, :, 0, 0].tolist() == [0.5] * 3 and out[0, 0, :, 0, 1].tolist() == [-1.0] * 3
    assert out[0, 1, :, 1, 1].tolist() == [0.5] * 3 and out[0, 1, :, 0, 0].tolist() == [-1.0] * 3


def test_lcc_renoises_the_clean_estimate_outside_the_mask_only():
    x_next, x0, fresh = torch.zeros(1, 2, 3, 2, 2), torch.ones(1, 2, 3, 2, 2), torch.full((1, 2, 3, 2, 2), 2.0)
    out = consistency_aware_latent_completion(x_next, x0, 0.64, fresh, guidance())
    assert out[0, 0, 0, 0, 0] == 0.0                                # visible: the DDIM step kept
    assert out[0, 0, 0, 0, 1] == pytest.approx(0.8 * 1 + 0.6 * 2)  # hidden: √ᾱ x̂0 + √(1−ᾱ) z


def tiny_model() -> MultiViewDenoiser:
    torch.manual_seed(0)
    return MultiViewDenoiser(4, 4, 2, emb_dim=8).eval()


def test_sampling_arms_differ_only_where_they_act():
    model, ab = tiny_model(), cosine_alpha_bar(20)
    refs, ref_pose, target_pose = torch.rand(2, 3, 4, 4) * 2 - 1, torch.rand(2, 2) * 90, torch.rand(2, 2) * 90
    rig = Rig(3.5, 4.0, 4)
    gen = torch.Generator().manual_seed(0)
    noise, fresh = torch.randn(1, 2, 3, 4, 4, generator=gen), torch.randn(5, 1, 2, 3, 4, 4, generator=gen)
    visible = torch.zeros(2, 4, 4, dtype=torch.bool)
    visible[:, :2] = True
    g = Guidance(torch.zeros(2, 3, 4, 4), visible)
    plain = sample(model, refs, ref_pose, target_pose, noise, fresh, ab, 5, None, False, False, 0, rig)
    again = sample(model, refs, ref_pose, target_pose, noise, fresh, ab, 5, g, False, False, 2, rig)
    assert torch.equal(plain, again)                                  # same noise, no technique: identical
    dfr = sample(model, refs, ref_pose, target_pose, noise, fresh, ab, 5, g, True, False, 2, rig)
    lcc = sample(model, refs, ref_pose, target_pose, noise, fresh, ab, 5, g, False, True, 2, rig)
    assert not torch.equal(dfr, plain) and not torch.equal(lcc, plain)
    with pytest.raises(ValueError, match="guidance"):
        sample(model, refs, ref_pose, target_pose, noise, fresh, ab, 5, None, True, False, 2, rig)


def test_denoising_loss_ignores_reference_views():
    model, ab = tiny_model(), cosine_alpha_bar(20)
    x0, pose = torch.rand(2, 3, 3, 4, 4), torch.rand(2, 3, 4)
    is_ref = torch.tensor([[True, False, False], [True, True, False]])
    loss = denoising_loss(model, x0, pose, is_ref, ab, torch.Generator().manual_seed(0))
    loss.backward()
    assert math.isfinite(float(loss)) and float(loss) > 0
    # a v-prediction denoiser that outputs 0 scores E v² over the target views only (same draws of t and noise)
    torch.manual_seed(0)
    v_model = MultiViewDenoiser(4, 4, 2, emb_dim=8, prediction="v").eval()
    gen = torch.Generator().manual_seed(0)
    step = torch.randint(0, 20, (2, 1), generator=gen)
    noise = torch.randn(x0.shape, generator=gen)
    want = velocity(x0, noise, ab[step.expand(2, 3)][..., None, None, None])[~is_ref]
    got = denoising_loss(v_model, x0, pose, is_ref, ab, torch.Generator().manual_seed(0))
    assert float(got) == pytest.approx(float((want ** 2).mean()), rel=1e-5)


def test_random_roles_give_at_least_one_reference_and_one_target():
    order, is_ref = random_roles(64, 4, 3, torch.Generator().manual_seed(0))
    assert bool((is_ref.sum(1) >= 1).all() and (is_ref.sum(1) <= 3).all())
    assert sorted(order[0].tolist()) == [0, 1, 2, 3]
    assert bool(is_ref[:, 0].all()) and not bool(is_ref[:, 3].any())


def test_cosine_lr_factor_by_hand():
    assert cosine_lr_factor(0, 100, 0.1) == pytest.approx(1.0)
    assert cosine_lr_factor(50, 100, 0.1) == pytest.approx(0.55)          # 0.1 + 0.9 * 0.5 * (1 + cos(pi/2))
    assert cosine_lr_factor(100, 100, 0.1) == pytest.approx(0.1)
    assert cosine_lr_factor(150, 100, 0.1) == pytest.approx(0.1)          # held at the floor after the run
    assert cosine_lr_factor(30, 100, 1.0) == pytest.approx(1.0)           # floor 1: constant


def test_ema_update_by_hand():
    ema, model = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        ema.weight.fill_(1.0)
        model.weight.fill_(3.0)
    ema_update(ema, model, 0.9)
    assert float(ema.weight) == pytest.approx(0.9 * 1.0 + 0.1 * 3.0)
    ema_update(ema, model, 0.9)
    assert float(ema.weight) == pytest.approx(0.9 * 1.2 + 0.1 * 3.0)
    assert float(model.weight) == 3.0


def test_nearest_reference_by_viewing_direction():
    refs = [Camera(a, 20.0, 3.5, 16.0, 16) for a in (0.0, 120.0, 240.0)]
    assert nearest_reference(Camera(150.0, 40.0, 3.5, 16.0, 16), refs) == 1
    assert nearest_reference(Camera(330.0, 20.0, 3.5, 16.0, 16), refs) == 0


def test_measures_by_hand():
    a, b = np.zeros((1, 3, 2, 2)), np.full((1, 3, 2, 2), 0.5)
    assert gt_mse(a, b) == pytest.approx(0.25)
    grid = np.stack([np.zeros((3, 2, 2)), np.full((3, 2, 2), 0.5), np.ones((3, 2, 2))])
    views = np.stack([np.full((3, 2, 2), 0.45), np.full((3, 2, 2), 0.9)])
    assert pose_accuracy(views, grid, [1, 1]) == 0.5                 # nearest: 1 (right) and 2 (wrong)
    red = np.zeros((3, 2, 2))
    red[0] = 1.0
    h = colour_histogram(red)
    assert h.sum() == pytest.approx(1) and h[3 * 16] == 1.0          # all pixels in bin (3, 0, 0)
    half = red.copy()
    half[:, :, 1] = 0.0                                              # two black pixels
    assert identity_similarity(half[None], red[None]) == pytest.approx(0.5)
    assert identity_similarity(red[None], red[None]) == pytest.approx(1.0)


def test_pose_specificity_by_hand():
    truths = np.stack([np.zeros((3, 2, 2)), np.full((3, 2, 2), 0.5), np.ones((3, 2, 2))])
    assert pose_specificity(truths, truths) == 0.0                                     # the true renders
    blind = np.broadcast_to(np.full((3, 2, 2), 0.3), truths.shape)
    assert pose_specificity(blind, truths) == pytest.approx(1.0)                       # any pose-blind output
    # views (0.1, 0.5, 0.9): own errors 0.01, 0, 0.01 -> 0.02 / 3; against the truths rolled by 1 (1, 0, 0.5):
    # 0.81, 0.25, 0.16, and by 2 (0.5, 1, 0): 0.16, 0.25, 0.81 -> 1.22 / 3 each
    views = np.stack([np.full((3, 2, 2), v) for v in (0.1, 0.5, 0.9)])
    assert pose_specificity(views, truths) == pytest.approx(0.02 / 1.22)
    assert pose_specificity(np.roll(truths, 1, axis=0), truths) > 1                    # shuffled truths


def test_swap_targets_cycles_the_targets_only():
    is_ref = torch.tensor([[True, False, False, False], [True, True, False, False]])
    assert swap_targets(is_ref).tolist() == [[0, 2, 3, 1], [0, 1, 3, 2]]
    with pytest.raises(ValueError, match="two target views"):
        swap_targets(torch.tensor([[True, True, True, False]]))


def test_pose_swap_hinge_by_hand():
    true, swapped = torch.tensor([1.0, 1.0]), torch.tensor([1.05, 2.0])
    # (1.1 - 1.05, 1.1 - 2 -> 0) / 2
    assert float(pose_swap_hinge(true, swapped, 0.1)) == pytest.approx(0.025, rel=1e-5)


def test_pose_swap_loss_adds_the_hinge_and_needs_no_extra_randomness():
    torch.manual_seed(0)
    model = MultiViewDenoiser(8, 8, 2, rays=True, prediction="v", ray_blocks=True)
    torch.nn.init.normal_(model.out[-1].weight, std=0.1)          # a denoiser whose output depends on its poses
    rig = Rig(3.5, 8.0, 8)
    pose = torch.tensor([[[0.0, 20.0], [90.0, 30.0], [180.0, 40.0], [270.0, 25.0]]])
    code, rays = rig.condition(pose)
    x0 = torch.rand(1, 4, 3, 8, 8) * 2 - 1
    is_ref = torch.tensor([[True, False, False, False]])
    ab = cosine_alpha_bar(10)
    plain = denoising_loss(model, x0, code, is_ref, ab, torch.Generator().manual_seed(1), rays)
    with_swap = denoising_loss(model, x0, code, is_ref, ab, torch.Generator().manual_seed(1), rays, 1.0, 0.5)
    assert float(with_swap) >= float(plain)
    assert float(denoising_loss(model, x0, code, is_ref, ab, torch.Generator().manual_seed(1), rays, 0.0, 0.5)) \
        == float(plain)
    with pytest.raises(ValueError, match="ray_blocks"):
        MultiViewDenoiser(8, 8, 2, rays=False, ray_blocks=True)
