"""The method's math: rotation, nearest-neighbour loss, KSG, merging, scores, prompts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stages.ndm.ksg import gaussian_mutual_information, ksg_mutual_information
from stages.ndm.ndm import (
    Rotation,
    apply_merge,
    block_slices,
    canonical_order,
    greedy_merge,
    neighbour_distance_loss,
    pca_rotation,
    random_rotation,
    train_rotation,
)
from stages.ndm.scores import adjusted_rand_index, dimension_purity, energy_concentration, gini, subspace_assignment
from stages.ndm.superposition import feature_groups, oracle_rotation, sample_grouped_features
from stages.ndm.templates import greater_than_prompt, ioi_prompt, make_prompts


def test_rotation_stays_orthogonal_through_training():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 8, generator=gen)
    rot = Rotation(8, random_rotation(8, gen))
    losses = train_rotation(x, [2, 2, 2, 2], rot, 40, 0.1, 64, gen)
    r = rot.matrix.detach().double()
    assert torch.allclose(r.T @ r, torch.eye(8, dtype=torch.float64), atol=1e-5)
    assert len(losses) == 40 and all(math.isfinite(v) for v in losses)


def test_rotation_starts_at_the_given_matrix():
    q = random_rotation(6, torch.Generator().manual_seed(3))
    assert torch.allclose(Rotation(6, q).matrix.detach(), q, atol=1e-5)


def test_nearest_neighbour_loss_on_a_hand_made_point_set():
    # block 1 (x): points 0, 1, 3 -> NN distances 1, 1, 2; block 2 (y): 0, 0, 5 -> 0, 0, 5
    z = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 5.0]])
    loss = neighbour_distance_loss(z, [1, 1])
    assert float(loss) == pytest.approx((1 + 1 + 2) / 3 + (0 + 0 + 5) / 3, abs=1e-5)
    # one 2-d block: NN distances 1, 1, sqrt(4 + 25)
    assert float(neighbour_distance_loss(z, [2])) == pytest.approx((2 + math.sqrt(29)) / 3, abs=1e-5)


def test_the_loss_prefers_the_rotation_that_separates_independent_clustered_variables():
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(0, 3, (400, 2), generator=gen).float() + 0.01 * torch.randn(400, 2, generator=gen)
    c, s = math.cos(math.pi / 5), math.sin(math.pi / 5)
    mixed = x @ torch.tensor([[c, -s], [s, c]])
    assert float(neighbour_distance_loss(x, [1, 1])) < 0.5 * float(neighbour_distance_loss(mixed, [1, 1]))


@pytest.mark.parametrize("rho", [0.0, 0.6, 0.9])
def test_ksg_on_correlated_gaussians_matches_the_closed_form(rho):
    estimates = []
    for seed in range(3):
        u = torch.randn(1500, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        x, y = u[:, :1], rho * u[:, :1] + math.sqrt(1 - rho * rho) * u[:, 1:]
        estimates.append(ksg_mutual_information(x, y, k=3))
    assert np.mean(estimates) == pytest.approx(gaussian_mutual_information(rho), abs=0.04)


def test_ksg_is_near_zero_for_independent_vectors_and_large_for_dependent_ones():
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(800, 3, generator=gen), torch.randn(800, 2, generator=gen)
    assert abs(ksg_mutual_information(x, y)) < 0.05
    assert ksg_mutual_information(x, x[:, :2] ** 2) > 0.5


def test_gaussian_mi_closed_form():
    assert gaussian_mutual_information(0.0) == 0.0
    assert gaussian_mutual_information(0.6) == pytest.approx(-0.5 * math.log(0.64))


def test_merge_rule_joins_only_the_dependent_pair():
    gen = torch.Generator().manual_seed(2)
    n = 800
    s = torch.randn(n, 1, generator=gen)
    dependent = torch.cat([s, s**2 + 0.05 * torch.randn(n, 1, generator=gen)], dim=1)  # blocks 0 and 1
    z = torch.cat([dependent, torch.randn(n, 2, generator=gen)], dim=1)  # blocks 2, 3 independent
    result = greedy_merge(z, [1, 1, 1, 1], threshold=0.1, k=3, max_dim=4)
    assert sorted(map(sorted, result.groups)) == [[0, 1], [2], [3]]
    assert len(result.history) == 1 and result.history[0]["mi_per_dim"] > 0.1


def test_merge_respects_the_size_cap_and_the_threshold():
    gen = torch.Generator().manual_seed(2)
    s = torch.randn(500, 1, generator=gen)
    z = torch.cat([s, s + 0.01 * torch.randn(500, 1, generator=gen)], dim=1)
    assert len(greedy_merge(z, [1, 1], threshold=0.1, k=3, max_dim=1).groups) == 2
    assert len(greedy_merge(z, [1, 1], threshold=100.0, k=3, max_dim=2).groups) == 2


def test_merged_and_sorted_blocks_keep_the_columns():
    r = torch.eye(5)
    mat, sizes = apply_merge(r, [[0, 3], [1], [2, 4]])
    assert sizes == [2, 1, 2] and mat[:, 1].tolist() == r[:, 3].tolist()
    mat2, sizes2 = canonical_order(mat, sizes)
    assert sizes2 == [2, 2, 1] and mat2[:, 4].tolist() == r[:, 1].tolist()
    assert block_slices([2, 1]) == [slice(0, 2), slice(2, 3)]


def test_random_and_pca_rotations_are_orthogonal():
    gen = torch.Generator().manual_seed(0)
    for r in (random_rotation(7, gen), pca_rotation(torch.randn(50, 7, generator=gen))):
        assert torch.allclose(r.T @ r, torch.eye(7), atol=1e-5)


def test_pca_puts_the_largest_variance_first():
    x = torch.randn(500, 3, generator=torch.Generator().manual_seed(0)) * torch.tensor([1.0, 5.0, 0.2])
    assert abs(float(pca_rotation(x)[1, 0])) > 0.99


def test_adjusted_rand_index_hand_values():
    assert adjusted_rand_index([0, 0, 1, 1], [1, 1, 0, 0]) == pytest.approx(1.0)
    # contingency [[1,1],[1,1]]: index 0, expected (2·2)/6, max 2 -> (0 − 2/3)/(2 − 2/3) = −0.5
    assert adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(-0.5)
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 60), rng.integers(0, 3, 60)
    assert adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b))


def test_gini_hand_values():
    assert gini([1, 1, 1, 1]) == pytest.approx(0.0)
    assert gini([0, 0, 0, 4]) == pytest.approx(0.75)  # (n − 1)/n for one non-zero of n
    assert gini([1, 3]) == pytest.approx(0.25)  # Σ(2i − n − 1)v / (n Σv) = (−1 + 3)/(2·4)
    assert gini([-2, 0]) == gini([2, 0]) and gini([]) == 0.0


def test_scores_of_the_true_rotation_are_perfect():
    groups = feature_groups(3, 2)
    w = np.zeros((6, 6))
    w[[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5]] = 1.0
    eye, sizes = np.eye(6), [2, 2, 2]
    assert adjusted_rand_index(groups, subspace_assignment(eye, sizes, w.T)) == 1.0
    assert energy_concentration(eye, sizes, w.T) == pytest.approx(1.0)
    assert dimension_purity(eye, w.T, groups) == pytest.approx(1.0)
    rot, osz = oracle_rotation(w, groups)
    assert osz == [1, 1, 1, 1, 1, 1] or sum(osz) == 6
    assert adjusted_rand_index(groups, subspace_assignment(rot, osz, w.T)) < 1.0 or len(osz) == 3


def test_oracle_recovers_group_spans():
    rng = np.random.default_rng(0)
    q = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    # group g uses 3 directions in the plane spanned by q[:, 2g], q[:, 2g+1]
    angles = np.array([0, 2 * np.pi / 3, 4 * np.pi / 3])
    w = np.concatenate([np.outer(q[:, 2 * g], np.cos(angles)) + np.outer(q[:, 2 * g + 1], np.sin(angles))
                        for g in range(3)], axis=1)
    groups = feature_groups(3, 3)
    rot, sizes = oracle_rotation(w, groups)
    assert sizes == [2, 2, 2]
    assert adjusted_rand_index(groups, subspace_assignment(rot, sizes, w.T)) == 1.0


def test_grouped_features_have_at_most_one_active_feature_per_group():
    x = sample_grouped_features(500, 4, 3, 0.7, torch.Generator().manual_seed(0)).reshape(500, 4, 3)
    assert int((x > 0).sum(dim=2).max()) == 1
    assert 0.6 < float((x > 0).any(dim=2).float().mean()) < 0.8


def test_prompts_have_consistent_answers_and_twins():
    rng = np.random.default_rng(0)
    p = ioi_prompt(rng)
    io, s = p["good"][0].strip(), p["bad"][0].strip()
    assert p["text"].count(s) == 2 and p["text"].count(io) == 1 and p["text"].endswith(" to")
    assert io not in p["corrupted"] and s not in p["corrupted"]
    g = greater_than_prompt(rng)
    tens = int(g["text"].split("17")[1][0])
    assert g["good"] == [str(d) for d in range(tens + 1, 10)] and g["bad"] == [str(d) for d in range(tens)]
    assert "1701" in g["corrupted"]
    assert len({q["text"] for q in make_prompts("ioi", 50, rng)}) == 50
