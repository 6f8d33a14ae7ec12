import numpy as np
import pytest

from stages.matrix_denoising.dynamics import overlap_trajectories_rgd, rgd_step
from stages.matrix_denoising.spiked_model import initial_vectors, sample_spiked_matrix
from stages.matrix_denoising.theory import bbp_overlaps, overlap_trajectories, stall_ratio


def test_one_rgd_step_on_a_3x2_matrix_by_hand():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    u = np.array([[1.0], [0.0], [0.0]])
    v = np.array([[0.0], [1.0]])
    # uᵀXv = 0, so -grad_u = Xv = (0, 2, 0), -grad_v = Xᵀu = (1, 0); η = 0.5:
    # u' = (1, 1, 0)/√2 and v' = (0.5, 1)/√1.25
    u1, v1 = rgd_step(x, u, v, 0.5)
    np.testing.assert_allclose(u1[:, 0], np.array([1, 1, 0]) / np.sqrt(2))
    np.testing.assert_allclose(v1[:, 0], np.array([0.5, 1]) / np.sqrt(1.25))


def test_rgd_step_with_nonzero_multiplier_by_hand():
    x = np.array([[2.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    u = np.array([[1.0], [0.0], [0.0]])
    v = np.array([[1.0], [0.0]])
    # Xv = (2, 0, 1), uᵀXv = 2: -grad_u = (0, 0, 1); Xᵀu = (2, 1): -grad_v = (0, 1); η = 1
    u1, v1 = rgd_step(x, u, v, 1.0)
    np.testing.assert_allclose(u1[:, 0], np.array([1, 0, 1]) / np.sqrt(2))
    np.testing.assert_allclose(v1[:, 0], np.array([1, 1]) / np.sqrt(2))


def test_iterates_stay_on_the_spheres_and_initial_overlaps_are_exact():
    x, us, vs = sample_spiked_matrix(40, 50, 1.5, seed=1)
    u0, v0 = initial_vectors(us, vs, 0.3, -0.2, seed=2)
    assert u0 @ us == pytest.approx(0.3) and v0 @ vs == pytest.approx(-0.2)
    u, v = u0[:, None], v0[:, None]
    for _ in range(50):
        u, v = rgd_step(x, u, v, 0.05)
    assert np.linalg.norm(u) == pytest.approx(1) and np.linalg.norm(v) == pytest.approx(1)


def test_noise_has_variance_one_over_n():
    x, _us, _vs = sample_spiked_matrix(200, 300, 0.0, seed=0)
    assert x.var() * 300 == pytest.approx(1.0, rel=0.02)


def _simulate(p, n, lam, au, av, seed, horizon, eta=0.02, stride=25):
    x, us, vs = sample_spiked_matrix(p, n, lam, seed)
    u0, v0 = initial_vectors(us, vs, au, av, seed + 1)
    return overlap_trajectories_rgd(x, us, vs, u0[:, None], v0[:, None], eta, int(horizon / eta), stride)


def test_simulation_follows_theory_at_moderate_size():
    p, n, lam = 600, 800, 1.8
    t, qu, qv = _simulate(p, n, lam, 0.3, 0.3, seed=5, horizon=20)
    th_u, th_v = overlap_trajectories(t, p / n, lam, 0.3, 0.3)
    assert np.max(np.abs(qu[:, 0] - th_u)) < 0.06
    assert np.max(np.abs(qv[:, 0] - th_v)) < 0.06


def test_stall_set_delays_learning():
    p, n, lam = 600, 800, 2.0
    c = p / n
    av = 0.3
    au = stall_ratio(lam, c) * av
    target = 0.5 * bbp_overlaps(lam, c)[0]

    def time_to_half(au_, seed):
        t, qu, _ = _simulate(p, n, lam, au_, av, seed, horizon=40)
        hit = np.nonzero(np.abs(qu[:, 0]) >= target)[0]
        return t[hit[0]] if hit.size else t[-1]

    stall = np.median([time_to_half(au, s) for s in (11, 12, 13)])
    mirror = np.median([time_to_half(-au, s) for s in (11, 12, 13)])
    assert stall > 3 * mirror
