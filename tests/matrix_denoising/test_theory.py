"""Tests of the large-dimension gradient-flow theory in stages.matrix_denoising.theory."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from stages.matrix_denoising.theory import (
    SpectralMeasures,
    bbp_overlaps,
    bbp_threshold,
    limit_overlaps,
    marchenko_pastur_atom,
    marchenko_pastur_density,
    marchenko_pastur_stieltjes,
    outlier_singular_value,
    overlap_moments,
    overlap_trajectories,
    spectral_measures,
    spike_determinant,
    stall_ratio,
)

RATIOS = [0.5, 0.75, 1.0, 2.0]
STRENGTHS = [0.0, 0.6, 1.5, 2.0]


def _moment(nu: SpectralMeasures, weights: np.ndarray, outlier_weight: float, power: int) -> float:
    """∫ s^power against one folded measure, bulk and null-space atom plus the ±s₁ atoms."""
    outlier_part = outlier_weight * nu.outlier**power if np.isfinite(nu.outlier) else 0.0
    return float(nu.nodes**power @ weights + outlier_part)


def _mp_integral(f: Callable[[float], float], c: float) -> float:
    """∫ f dμ_p by adaptive quadrature of the public density plus the atom at 0."""
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    bulk, _ = quad(lambda x: f(x) * marchenko_pastur_density(x, c), a, b, limit=200)
    return bulk + marchenko_pastur_atom(c) * f(0.0)


@pytest.mark.parametrize(
    ("c", "lam", "alpha_u", "alpha_v"),
    [
        (0.5, 1.5, 0.3, -0.7),
        (0.75, 0.6, 0.5, 0.4),
        (2.0, 0.8, 0.9, 0.1),
        (2.0, 3.0, -1.0, 1.0),
        (1.0, 1.2, -0.5, 0.5),
        (1.0, 0.0, 0.2, 0.6),
    ],
)
def test_initial_overlaps_are_alphas(c: float, lam: float, alpha_u: float, alpha_v: float) -> None:
    q_u, q_v = overlap_trajectories(np.array([0.0]), c, lam, alpha_u, alpha_v)
    np.testing.assert_allclose([q_u[0], q_v[0]], [alpha_u, alpha_v], atol=1e-10)


@pytest.mark.parametrize("c", [0.5, 0.75, 1.0, 2.0])
def test_marchenko_pastur_mass_and_mean(c: float) -> None:
    assert _mp_integral(lambda x: 1.0, c) == pytest.approx(1.0, abs=1e-8)
    assert _mp_integral(lambda x: x, c) == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("c", [0.5, 2.0, 1.0])
@pytest.mark.parametrize("z", [1.3 + 0.4j, -0.7 + 0.05j, 6.0 + 0.0j])
def test_stieltjes_matches_density(c: float, z: complex) -> None:
    # Checks the branch choice: the closed form must equal ∫ dμ_p(x)/(x − z).
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    real, _ = quad(lambda x: (marchenko_pastur_density(x, c) / (x - z)).real, a, b, limit=200)
    imag, _ = quad(lambda x: (marchenko_pastur_density(x, c) / (x - z)).imag, a, b, limit=200)
    expected = real + 1j * imag - marchenko_pastur_atom(c) / z
    assert marchenko_pastur_stieltjes(z, c) == pytest.approx(expected, abs=1e-7)


def test_stieltjes_boundary_value_gives_density() -> None:
    x, c = np.linspace(0.1, 2.8, 7), 0.75
    np.testing.assert_allclose(marchenko_pastur_stieltjes(x, c).imag / np.pi, marchenko_pastur_density(x, c))


@pytest.mark.parametrize("c", RATIOS)
@pytest.mark.parametrize("lam", STRENGTHS)
def test_spectral_measure_masses_and_moments(c: float, lam: float) -> None:
    nu = spectral_measures(c, lam)
    theta_u, theta_v = bbp_overlaps(lam, c)
    assert _moment(nu, nu.ee, nu.outlier_ee, 0) == pytest.approx(1.0, abs=1e-12)
    assert _moment(nu, nu.ww, nu.outlier_ww, 0) == pytest.approx(1.0, abs=1e-12)
    assert nu.mp_p.sum() == pytest.approx(1.0, abs=1e-12)
    assert nu.mp_n.sum() == pytest.approx(1.0, abs=1e-12)
    # Outlier atoms from residues of the resolvent reproduce the closed-form BBP overlaps.
    assert nu.outlier_ee == pytest.approx(theta_u**2, abs=1e-12)
    assert nu.outlier_ww == pytest.approx(theta_v**2, abs=1e-12)
    assert nu.outlier_ew == pytest.approx(theta_u * theta_v, abs=1e-12)
    # Moments fixed by the matrix itself: eᵀM²e = ‖Xᵀu*‖² → 1 + λ², wᵀM²w = ‖Xv*‖² → c + λ²,
    # eᵀMw = u*ᵀXv* → λ (this one fixes the sign and the factor of the odd measure ν_ew).
    assert _moment(nu, nu.ee, nu.outlier_ee, 2) == pytest.approx(1.0 + lam**2, abs=1e-12)
    assert _moment(nu, nu.ww, nu.outlier_ww, 2) == pytest.approx(c + lam**2, abs=1e-12)
    assert _moment(nu, nu.ew, nu.outlier_ew, 1) == pytest.approx(lam, abs=1e-12)
    assert nu.nodes**2 @ nu.mp_p == pytest.approx(1.0, abs=1e-12)
    assert nu.nodes**2 @ nu.mp_n == pytest.approx(c, abs=1e-12)


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("lam", [1.3, 2.0, 4.0])
def test_outlier_is_root_of_spike_determinant(c: float, lam: float) -> None:
    edge = 1 + np.sqrt(c)
    root = brentq(lambda s: spike_determinant(s, c, lam).real, edge + 1e-12, 10 * (lam + edge), xtol=1e-14)
    assert root**2 == pytest.approx((1 + lam**2) * (c + lam**2) / lam**2, rel=1e-10)
    assert outlier_singular_value(lam, c) == pytest.approx(root, rel=1e-10)


@pytest.mark.parametrize("c", [0.75, 2.0])
def test_no_outlier_below_threshold(c: float) -> None:
    lam = 0.9 * bbp_threshold(c)
    s = 1 + np.sqrt(c) + np.geomspace(1e-10, 50, 200)
    assert np.all(spike_determinant(s, c, lam).real > 0)
    assert np.isnan(outlier_singular_value(lam, c))


@pytest.mark.parametrize("c", [0.5, 1.0, 2.0])
def test_norms_agree(c: float) -> None:
    # ‖a‖ = ‖b‖ is conserved by exp(tM), so the two squared norms must coincide at every t.
    t = np.linspace(0.0, 4.0, 9)
    _, d_u, _, d_v = overlap_moments(t, c, 1.5, 0.3, -0.6)
    np.testing.assert_allclose(d_u, d_v, rtol=1e-12)


def test_no_overflow_at_large_times() -> None:
    moments = overlap_moments(np.array([200.0, 1000.0]), 0.75, 2.0, 0.5, 0.4)
    assert all(np.all(np.isfinite(m)) for m in moments)


@pytest.mark.parametrize("c", [0.75, 2.0])
@pytest.mark.parametrize("lam", [1.5, 2.0])
@pytest.mark.parametrize(("alpha_u", "alpha_v"), [(0.5, 0.4), (-0.5, 0.1), (0.1, -0.9), (-0.3, -0.3)])
def test_large_time_reaches_bbp_with_sign(c: float, lam: float, alpha_u: float, alpha_v: float) -> None:
    theta_u, theta_v = bbp_overlaps(lam, c)
    sign = np.sign(alpha_u * theta_u + alpha_v * theta_v)
    q_u, q_v = overlap_trajectories(np.array([200.0]), c, lam, alpha_u, alpha_v)
    np.testing.assert_allclose([q_u[0], q_v[0]], [sign * theta_u, sign * theta_v], atol=1e-6)
    assert limit_overlaps(c, lam, alpha_u, alpha_v) == pytest.approx((sign * theta_u, sign * theta_v))


@pytest.mark.parametrize("c", [0.75, 2.0])
@pytest.mark.parametrize(("alpha_u", "alpha_v"), [(0.5, 0.4), (0.9, -0.3), (1.0, 1.0)])
def test_below_threshold_decays_like_t_to_minus_three_quarters(c: float, alpha_u: float, alpha_v: float) -> None:
    # Without an outlier every integral is a Laplace integral at the edge √b, where the
    # measures vanish like √(√b − s): N ~ e^{t√b} t^{-3/2}, D ~ e^{2t√b} t^{-3/2}, so
    # q ≈ K t^{-3/4}. At t = 200, t^{-3/4} ≈ 0.019; the bound 0.15 allows K up to 8 (the
    # edge amplitudes give K ≲ 3 here) yet excludes any O(1) limit a spurious outlier would
    # leave. The log-slope checks the exponent itself (its O(1/t) correction is larger
    # near λ_c, hence the wider window at λ = 0.6 than for pure noise).
    t = np.array([100.0, 200.0])
    for lam, window in [(0.0, 0.01), (0.6, 0.06)]:
        for q in overlap_trajectories(t, c, lam, alpha_u, alpha_v):
            assert np.all(np.abs(q) < 0.15)
            slope = np.log(abs(q[1] / q[0])) / np.log(t[1] / t[0])
            assert slope == pytest.approx(-0.75, abs=window)
        assert limit_overlaps(c, lam, alpha_u, alpha_v) == (0.0, 0.0)


@pytest.mark.parametrize(("c", "alpha_v"), [(0.75, 0.6), (2.0, 0.5)])
@pytest.mark.parametrize("lam", [1.5, 2.0])
def test_stall_set(c: float, alpha_v: float, lam: float) -> None:
    theta_u, theta_v = bbp_overlaps(lam, c)
    alpha_u = stall_ratio(lam, c) * alpha_v
    t = np.array([200.0])
    q_u, q_v = overlap_trajectories(t, c, lam, alpha_u, alpha_v)
    # On the stall set only the bulk is left, which decays like t^{-3/4} (see above).
    assert abs(q_u[0]) < 0.02 and abs(q_v[0]) < 0.02
    assert limit_overlaps(c, lam, alpha_u, alpha_v) == (0.0, 0.0)
    for shift in (1e-3, -1e-3):
        q_u, q_v = overlap_trajectories(t, c, lam, alpha_u + shift, alpha_v)
        sign = np.sign(shift)  # α_u enters κ = α_uθ_u + α_vθ_v with the positive factor θ_u
        np.testing.assert_allclose([q_u[0], q_v[0]], [sign * theta_u, sign * theta_v], atol=1e-6)
        assert limit_overlaps(c, lam, alpha_u + shift, alpha_v) == pytest.approx((sign * theta_u, sign * theta_v))


def test_hand_values() -> None:
    assert bbp_threshold(0.75) == pytest.approx(0.75**0.25)
    assert bbp_threshold(16.0) == pytest.approx(2.0)
    theta = np.sqrt((15 / 16) / (5 / 4))
    assert bbp_overlaps(2.0, 1.0) == pytest.approx((theta, theta))
    # c = 0.5, λ = 1: 1 − cλ⁻⁴ = 1/2, so θ_u² = (1/2)/(3/2) = 1/3 and θ_v² = (1/2)/2 = 1/4.
    assert bbp_overlaps(1.0, 0.5) == pytest.approx((np.sqrt(1 / 3), 0.5))
    assert bbp_overlaps(0.5, 1.0) == (0.0, 0.0)
    assert outlier_singular_value(2.0, 1.0) == pytest.approx(2.5)
    assert stall_ratio(2.0, 1.0) == pytest.approx(-1.0)
    assert stall_ratio(1.0, 0.5) == pytest.approx(-np.sqrt(0.75))
    assert np.isnan(stall_ratio(0.5, 1.0))
    assert marchenko_pastur_atom(0.5) == 0.0
    assert marchenko_pastur_atom(4.0) == pytest.approx(0.75)
    assert limit_overlaps(1.0, 2.0, -0.2, 0.1) == pytest.approx((-theta, -theta))


def _sampled_trajectories(
    p: int, n: int, lam: float, alpha_u: float, alpha_v: float, t: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact finite-size overlaps: (a, b) = exp(tM)(u₀, v₀) through the thin SVD of one sampled X."""
    gen = np.random.default_rng(seed)
    u_star, v_star = gen.standard_normal(p), gen.standard_normal(n)
    u_star, v_star = u_star / np.linalg.norm(u_star), v_star / np.linalg.norm(v_star)
    x = gen.standard_normal((p, n)) / np.sqrt(n) + lam * np.outer(u_star, v_star)

    def start(target: np.ndarray, alpha: float) -> np.ndarray:
        xi = gen.standard_normal(target.size)
        xi -= (xi @ target) * target
        return alpha * target + np.sqrt(1 - alpha**2) * xi / np.linalg.norm(xi)

    u0, v0 = start(u_star, alpha_u), start(v_star, alpha_v)
    left, sigma, right_t = np.linalg.svd(x, full_matrices=False)
    cu, cv = left.T @ u0, right_t @ v0
    ch, sh = np.cosh(np.outer(t, sigma)), np.sinh(np.outer(t, sigma))
    # cosh(t√(XXᵀ)) is the identity on the null space, hence the "− 1" on the SVD part.
    a = u0 + ((ch - 1) * cu + sh * cv) @ left.T
    b = v0 + ((ch - 1) * cv + sh * cu) @ right_t
    return (a @ u_star) / np.linalg.norm(a, axis=1), (b @ v_star) / np.linalg.norm(b, axis=1)


def test_theory_matches_one_sampled_matrix() -> None:
    # Finite-size deviations are O(n^{-1/2}) ≈ 0.05; over 20 seeds the max gap on this grid
    # ranged over 0.01–0.048, so 0.08 is safe, while flipping the sign of the cross
    # measure ν_ew gives a gap ≈ 1.5, halving it ≈ 0.38, dropping the ξ terms ≈ 0.6.
    t = np.linspace(0.0, 10.0, 101)
    sampled_u, sampled_v = _sampled_trajectories(300, 400, 1.5, 0.5, 0.4, t, seed=1)
    q_u, q_v = overlap_trajectories(t, 300 / 400, 1.5, 0.5, 0.4)
    assert max(np.abs(sampled_u - q_u).max(), np.abs(sampled_v - q_v).max()) < 0.08


@pytest.mark.parametrize(
    "call",
    [
        lambda: bbp_threshold(0.0),
        lambda: bbp_threshold(-1.0),
        lambda: marchenko_pastur_density(1.0, float("nan")),
        lambda: marchenko_pastur_stieltjes(0.0, 0.5),
        lambda: bbp_overlaps(-0.1, 1.0),
        lambda: outlier_singular_value(-1.0, 1.0),
        lambda: spectral_measures(1.0, 1.0, n_nodes=1),
        lambda: overlap_trajectories([0.0, 1.0], -0.5, 1.0, 0.1, 0.1),
        lambda: overlap_trajectories([0.0, 1.0], 1.0, -1.0, 0.1, 0.1),
        lambda: overlap_trajectories([0.0, 1.0], 1.0, 1.0, 1.1, 0.1),
        lambda: overlap_trajectories([0.0, 1.0], 1.0, 1.0, 0.1, -1.5),
        lambda: overlap_trajectories([-1.0, 1.0], 1.0, 1.0, 0.1, 0.1),
        lambda: limit_overlaps(1.0, 1.0, 2.0, 0.1),
        lambda: limit_overlaps(0.0, 1.0, 0.1, 0.1),
    ],
)
def test_invalid_inputs_raise(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        call()
