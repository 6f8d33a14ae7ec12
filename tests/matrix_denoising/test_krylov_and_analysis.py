"""The exact finite-n flow (krylov.py), the estimators (analysis.py) and the flow-study params."""

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from scipy.linalg import expm

from stages.matrix_denoising.analysis import (
    bootstrap_interval,
    hinge_fit,
    peak_ratio,
    scaling_exponent,
    settle_time,
)
from stages.matrix_denoising.config import FlowStudiesConfig, load_flow_studies
from stages.matrix_denoising.dynamics import overlap_trajectories_rgd
from stages.matrix_denoising.krylov import exact_flow_overlaps, lanczos_bases
from stages.matrix_denoising.spiked_model import initial_vectors, sample_spiked_matrix
from stages.matrix_denoising.theory import overlap_trajectories

ROOT = Path(__file__).resolve().parents[2]


def _dense_flow(x, us, vs, u0, v0, t):
    p = x.shape[0]
    m = np.block([[np.zeros((p, p)), x], [x.T, np.zeros((x.shape[1], x.shape[1]))]])
    w = expm(t * m) @ np.concatenate([u0, v0])
    return us @ w[:p] / np.linalg.norm(w[:p]), vs @ w[p:] / np.linalg.norm(w[p:])


def test_krylov_flow_equals_the_dense_matrix_exponential():
    x, us, vs = sample_spiked_matrix(30, 40, 1.5, seed=1)
    u0, v0 = initial_vectors(us, vs, 0.3, -0.2, seed=2)
    u1, v1 = initial_vectors(us, vs, -0.6, 0.4, seed=3)
    times = np.array([0.0, 0.5, 3.0, 20.0])
    qu, qv = exact_flow_overlaps(x, us, vs, np.stack([u0, u1], 1), np.stack([v0, v1], 1), times, dim=200)
    for i, t in enumerate(times):
        for j, (a, b) in enumerate(((u0, v0), (u1, v1))):
            du, dv = _dense_flow(x, us, vs, a, b, t)
            assert qu[i, j] == pytest.approx(du, abs=1e-10) and qv[i, j] == pytest.approx(dv, abs=1e-10)


def test_krylov_flow_on_a_2x2_matrix_by_hand():
    # X = diag(2, 1): from u0 = v0 = e1 the flow stays at e1, so the overlaps with e1 are 1 forever;
    # from u0 = e1, v0 = e2 it is exp(tM)(e1; e2) = (cosh 2t e1 + ..): u_t ∝ (cosh 2t, sinh t)
    x = np.diag([2.0, 1.0])
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    t = np.array([0.0, 1.0])
    qu, _ = exact_flow_overlaps(x, e1, e1, e1[:, None], e2[:, None], t, dim=4)
    expect = np.cosh(2 * t) / np.hypot(np.cosh(2 * t), np.sinh(t))
    np.testing.assert_allclose(qu[:, 0], expect, atol=1e-12)
    qu, qv = exact_flow_overlaps(x, e1, e1, e1[:, None], e1[:, None], t, dim=4)
    np.testing.assert_allclose(qu[:, 0], 1.0)
    np.testing.assert_allclose(qv[:, 0], 1.0)


def test_lanczos_basis_is_orthonormal_and_stops_at_breakdown():
    x, us, vs = sample_spiked_matrix(20, 25, 1.0, seed=4)
    u0, v0 = initial_vectors(us, vs, 0.2, 0.2, seed=5)
    basis = lanczos_bases(x, u0[:, None], v0[:, None], 30)[0]
    q = basis[0]
    np.testing.assert_allclose(q @ q.T, np.eye(30), atol=1e-10)
    # a start in a 2-dimensional invariant subspace: the basis ends after two vectors
    x2 = np.diag([2.0, 1.0, 0.5])
    e = np.eye(3)
    basis2, _, beta2 = lanczos_bases(x2, e[:, :1], e[:, :1], 6)
    assert beta2[0, 1] == 0.0 and np.all(basis2[0, 2:] == 0.0)


def test_exact_flow_agrees_with_small_step_rgd():
    x, us, vs = sample_spiked_matrix(60, 80, 1.6, seed=6)
    u0, v0 = initial_vectors(us, vs, 0.3, 0.3, seed=7)
    t, qu_rgd, _ = overlap_trajectories_rgd(x, us, vs, u0[:, None], v0[:, None], 0.001, 4000, 1000)
    qu, _ = exact_flow_overlaps(x, us, vs, u0[:, None], v0[:, None], t, dim=60)
    np.testing.assert_allclose(qu[:, 0], qu_rgd[:, 0], atol=5e-3)


def test_exact_flow_gap_to_theory_shrinks_with_n():
    gaps = []
    for n in (200, 3200):
        errs = []
        for s in range(3):
            x, us, vs = sample_spiked_matrix(3 * n // 4, n, 1.4, seed=100 + s)
            u0, v0 = initial_vectors(us, vs, 0.3, 0.3, seed=200 + s)
            qu, _ = exact_flow_overlaps(x, us, vs, u0[:, None], v0[:, None], np.array([2.0, 4.0]), dim=30)
            th, _ = overlap_trajectories(np.array([2.0, 4.0]), 0.75, 1.4, 0.3, 0.3)
            errs.append(np.abs(qu[:, 0] - th).mean())
        gaps.append(np.mean(errs))
    assert gaps[1] < gaps[0] / 2  # n^(-1/2) predicts a factor 4


def test_scaling_exponent_by_hand():
    assert scaling_exponent(np.array([100, 400, 1600]), np.array([0.1, 0.05, 0.025])) == pytest.approx(-0.5)
    assert scaling_exponent(np.array([10, 1000]), np.array([0.3, 0.3])) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="two distinct sizes"):
        scaling_exponent(np.array([10, 10]), np.array([0.1, 0.2]))


def test_bootstrap_interval_contains_the_mean_and_is_deterministic():
    vals = np.array([-0.4, -0.5, -0.6, -0.45, -0.55])
    lo, hi = bootstrap_interval(vals, seed=3, draws=500)
    assert lo < vals.mean() < hi and (lo, hi) == bootstrap_interval(vals, seed=3, draws=500)


def test_settle_time_by_hand():
    t = np.arange(6.0)
    # target 1, tolerance 0.2: inside at t = 0, out at t = 2, inside from t = 3 on
    assert settle_time(t, np.array([0.9, 0.85, 0.2, 0.95, -1.1, 1.0]), 1.0, 0.2) == 3.0
    assert settle_time(t, np.array([1.0] * 6), 1.0, 0.2) == 0.0
    assert settle_time(t, np.array([1.0] * 5 + [0.5]), 1.0, 0.2) == 5.0  # censored at the horizon


def test_peak_ratio_takes_the_longest_and_averages_ties():
    assert peak_ratio(np.array([0.8, 1.0, 1.2]), np.array([2.0, 9.0, 3.0])) == 1.0
    assert peak_ratio(np.array([0.8, 1.0, 1.2]), np.array([9.0, 9.0, 3.0])) == pytest.approx(0.9)


def test_hinge_fit_recovers_a_planted_knot():
    lams = np.linspace(0.4, 1.2, 33)
    h = np.maximum(0.0, lams - 0.7)
    y = 0.01 + 2.0 * h - 1.5 * h**2
    knot, slope, curv, floor = hinge_fit(lams, y)
    assert knot == pytest.approx(0.7, abs=1e-3) and slope == pytest.approx(2.0, abs=1e-2)
    assert curv == pytest.approx(-1.5, abs=5e-2) and floor == pytest.approx(0.01, abs=1e-3)
    flat = hinge_fit(lams, np.full_like(lams, 0.2))
    assert flat[1] == pytest.approx(0.0, abs=1e-9) and flat[3] == pytest.approx(0.2)


def test_flow_study_params_refuse_bad_values():
    good = load_flow_studies(ROOT / "params.yaml").model_dump()
    for edit, msg in (({"fss_sizes": [1200, 300]}, "increasing"),
                      ({"fss_aspect": 0.7, "fss_sizes": [301, 1201]}, "integer"),
                      ({"scan_lambdas": [0.5, 1.0]}, "above λ_c"),
                      ({"scan_ratios": [0.6, 1.0, 2.5]}, "within"),
                      ({"fss_times": [0.0, 1.0]}, "positive")):
        with pytest.raises(ValidationError, match=msg):
            FlowStudiesConfig.model_validate({**good, **edit})
