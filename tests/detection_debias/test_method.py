"""The paper's equations and the miniature's pieces against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stages.detection_debias.augment import sampled_layouts
from stages.detection_debias.coco_map import box_iou, coco_ap, evaluate_detections, group_labels_of_detections
from stages.detection_debias.detector import CenterNet, decode, roi_and_context, targets
from stages.detection_debias.representation import (
    feature_diversity,
    frequency_term,
    group_scores,
    normalised,
    percentile_rank,
    representation_score,
    sampling_probabilities,
)
from stages.detection_debias.scenes import BLUEPRINT_COLOURS, Bins, Obj, Scene, blueprint, place_box, render

BINS = Bins(48, ((5, 8), (11, 15), (20, 28)), 2, 2)


def test_identical_features_have_zero_diversity():
    x = np.tile([[0.3, 1.0, 2.0]], (5, 1))
    assert feature_diversity(x, "cosine") == pytest.approx(0.0, abs=1e-12)
    assert feature_diversity(x, "euclidean") == pytest.approx(0.0, abs=1e-6)
    assert feature_diversity(x[:1]) == 0.0


def test_diversity_by_hand():
    # two orthogonal unit vectors: cosine distance 1; euclidean sqrt(2); mean over the ordered pairs
    x = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert feature_diversity(x, "cosine") == pytest.approx(1.0)
    assert feature_diversity(x, "euclidean") == pytest.approx(np.sqrt(5))
    # three vectors: pairs (a,b)=1, (a,c)=1-1/sqrt2, (b,c)=1-1/sqrt2 -> mean
    y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert feature_diversity(y, "cosine") == pytest.approx((1 + 2 * (1 - 1 / np.sqrt(2))) / 3)


def test_representation_score_by_hand():
    freq = frequency_term(np.array([10, 5, 0]))
    assert freq.tolist() == [1.0, 0.5, 0.0]
    rs = representation_score(freq, np.array([1.0, 0.2, 0.0]), np.array([1.0, 0.6, 0.0]), beta=1.0)
    assert rs.tolist() == pytest.approx([1.0, 0.5 * 0.8 / 2, 0.0])
    assert representation_score(freq, np.array([2.0, 1.0, 0.0]), np.zeros(3), 0.0).tolist() == [2.0, 0.5, 0.0]
    assert normalised(np.array([2.0, 4.0, 9.0]), np.array([5, 5, 1])).tolist() == pytest.approx([2 / 3, 4 / 3, 3.0])


def test_low_diversity_group_scores_below_an_equally_frequent_diverse_one():
    gen = np.random.default_rng(0)
    roi = np.concatenate([np.tile([[1.0, 0.0, 0.0]], (20, 1)), gen.random((20, 3)), gen.random((5, 3))])
    groups = np.repeat([0, 1, 2], [20, 20, 5])
    sc = group_scores(groups, roi, roi, 3, 1.0, "cosine", 100, gen)
    assert sc["count"].tolist() == [20, 20, 5]
    assert sc["d_vis"][0] == pytest.approx(0.0, abs=1e-9) and sc["d_vis"][1] > 0
    assert sc["rs"][0] < sc["rs"][2] < sc["rs"][1]       # frequent + uniform ranks below rare + diverse
    assert percentile_rank(sc["rs"], [0]) == 0.0 and percentile_rank(sc["frequency"], [0]) > 0.0


def test_sampling_probabilities_follow_the_power_law():
    s = np.array([0.0, 0.5, 1.0])
    p = sampling_probabilities(s, eps=0.5, tau=2.0)
    w = np.array([0.5, 1.0, 1.5]) ** -2.0
    assert p == pytest.approx(w / w.sum())


def test_layout_sampler_frequencies_match_the_probabilities():
    p = sampling_probabilities(np.linspace(0, 1, BINS.n_groups), eps=0.1, tau=1.0)
    layouts = sampled_layouts(BINS, p, 4000, 1, np.random.default_rng(1))   # one object each: nothing dropped
    groups = [BINS.group_of_box(c, b) for layout in layouts for c, b in layout]
    freq = np.bincount(groups, minlength=BINS.n_groups) / len(groups)
    assert len(groups) == 4000
    assert np.abs(freq - p).max() < 0.02
    assert np.corrcoef(freq, p)[0, 1] > 0.98


def test_placed_boxes_fall_in_their_bins():
    gen = np.random.default_rng(2)
    for g in range(BINS.n_groups):
        cls, size, pos = BINS.parts(g)
        for _ in range(20):
            box = place_box(BINS, size, pos, gen)
            assert 0 <= box[0] < box[2] <= 48 and 0 <= box[1] < box[3] <= 48
            assert BINS.group_of_box(cls, box) == g


def test_blueprint_draws_each_box_where_the_layout_says():
    layout = [(0, (2, 3, 10, 12)), (3, (30, 20, 45, 40))]
    bp = blueprint(layout, 48)
    for cls, (x0, y0, x1, y1) in layout:
        assert (bp[:, y0:y1, x0:x1] == BLUEPRINT_COLOURS[cls][:, None, None]).all()
    covered = np.zeros((48, 48), bool)
    for _, (x0, y0, x1, y1) in layout:
        covered[y0:y1, x0:x1] = True
    assert (bp[:, ~covered] == 0).all()


def test_renderer_draws_each_object_inside_its_box():
    obj = Obj(1, (10, 12, 20, 24), (1.0, 1.0, 1.0), "solid")
    img = render(Scene((obj,), "flat", ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)), 0), 48)
    ys, xs = np.nonzero(img[0] > 0)
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (10, 12, 20, 24)


def test_ground_truth_as_predictions_has_map_one():
    gen = np.random.default_rng(3)
    gt = []
    for _ in range(30):
        groups = gen.integers(BINS.n_groups, size=3).tolist()
        from stages.detection_debias.scenes import layout_from_groups
        layout = layout_from_groups(BINS, groups, gen)
        gt.append((np.array([b for _, b in layout], float), np.array([c for c, _ in layout])))
    dets = [{"boxes": b, "scores": np.ones(len(b)), "classes": c} for b, c in gt]
    overall, per_group = evaluate_detections(BINS, 4, gt, dets)
    assert overall == pytest.approx(1.0)
    assert all(v == pytest.approx(1.0) for v in per_group.values()) and len(per_group) > 10


def test_map_by_hand():
    # one image, two objects of class 0; one exact hit (score 0.9), one false positive (0.8): AP 0.5 at every IoU
    gt_b, gt_l = [np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float)], [np.array([0, 0])]
    det_b = [np.array([[0, 0, 10, 10], [40, 40, 45, 45]], float)]
    ap = coco_ap(gt_b, gt_l, det_b, [np.array([0.9, 0.8])], [np.array([0, 0])], 1)
    assert ap[0] == pytest.approx(0.5, abs=0.01)
    assert coco_ap(gt_b, gt_l, [np.zeros((0, 4))], [np.zeros(0)], [np.zeros(0, int)], 1)[0] == 0.0


def test_detections_take_the_group_of_the_object_they_cover():
    gt = np.array([[10, 10, 18, 18]], float)              # side 8: small, centre x 14: column 0
    det = np.array([[10, 10, 19, 19], [30, 30, 45, 45]], float)   # side 9 (own bin: medium), and a stray box
    groups = group_labels_of_detections(BINS, gt, np.array([2]), det, np.array([2, 2]))
    assert groups[0] == BINS.group(2, 0, 0)
    assert groups[1] == BINS.group_of_box(2, (30, 30, 45, 45)) == BINS.group(2, 1, 1)
    assert box_iou(gt, det)[0, 0] == pytest.approx(64 / 81)


def test_targets_and_decode_round_trip():
    layout = [(1, (8, 4, 20, 16)), (3, (28, 28, 40, 44))]
    t = targets([layout], 4, 48)
    assert t["mask"].sum() == 2 and t["heat"][0, 1].max() == 1.0 and t["heat"][0, 3].max() == 1.0
    logit = torch.logit(t["heat"].clamp(1e-4, 1 - 1e-4))
    dets = decode({"heat": logit, "size": t["size"], "offset": t["offset"]}, top_k=2, min_score=0.5)[0]
    order = np.argsort(dets["classes"])
    assert dets["classes"][order].tolist() == [1, 3]
    assert dets["boxes"][order] == pytest.approx(np.array([b for _, b in layout], float), abs=1e-4)


def test_roi_and_context_features_split_the_map():
    model = CenterNet(4, 2)
    images = torch.randint(0, 255, (1, 3, 48, 48), dtype=torch.uint8)
    roi, ctx = roi_and_context(model, images, np.array([0]), np.array([[0, 0, 8, 8]], float))
    f = model.features(images)[0].detach()
    assert roi[0] == pytest.approx(f[:, :2, :2].mean((1, 2)).numpy(), abs=1e-5)
    rest = (f.sum((1, 2)) - f[:, :2, :2].sum((1, 2))) / (144 - 4)
    assert ctx[0] == pytest.approx(rest.numpy(), abs=1e-5)


def test_t_interval_matches_hand_computed_values():
    from stages.detection_debias.report import t_interval

    lo, hi = t_interval([1.0, 2.0, 3.0])   # mean 2, sd 1, t(0.975, 2) = 4.3027 -> half width 4.3027 / sqrt(3)
    assert lo == pytest.approx(2 - 2.48414, abs=1e-4) and hi == pytest.approx(2 + 2.48414, abs=1e-4)
