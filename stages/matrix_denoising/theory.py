"""Large-dimension theory of spherical gradient flow for rank-one matrix denoising.

Model: X = Z + λ u* v*ᵀ (p × n, Z_ij ~ N(0, 1/n), c = p/n, unit u*, v*). The flow of
H = ½‖X − u vᵀ‖²_F on the two unit spheres is solved by (u, v) = (a, b)/‖a‖ with
(a, b)(t) = exp(tM)(u₀, v₀), M = [[0, X], [Xᵀ, 0]], so the overlaps q_u = ⟨u*, u_t⟩ and
q_v = ⟨v*, v_t⟩ are ratios of spectral integrals of M. Sections cited below:

§1  Marchenko–Pastur law μ_p of ZZᵀ, its Stieltjes transform, and μ_n of ZᵀZ.
§2  Rectangular BBP transition: threshold λ_c = c^{1/4}, outlier s₁, overlaps θ_u, θ_v.
§3  Spectral measures ν_ee, ν_ww, ν_ew of M seen from e = (u*, 0) and w = (0, v*), by
    a rank-two Woodbury update of the resolvent and Stieltjes inversion.
§4  Overlaps q = N/√D with N, D integrals of cosh/sinh against the measures of §3.

Everything is a deterministic function of (c, λ, α_u, α_v, t); nothing is sampled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
ComplexArray = NDArray[np.complex128]

DEFAULT_NODES = 400
# On the stall set the top-mode coefficient α_uθ_u + α_vθ_v is zero only up to rounding
# of the inputs (~1e-16), and exp(t(s₁ − √b)) would amplify that residue into a spurious
# BBP limit at large t; coefficients this small relative to their terms count as zero.
_STALL_RTOL = 1e-12


def _check_ratio(c: float) -> float:
    """Validate the aspect ratio c = p/n (§1)."""
    if not np.isfinite(c) or c <= 0:
        raise ValueError(f"aspect ratio c = p/n must be finite and > 0, got {c!r}")
    return float(c)


def _check_strength(lam: float) -> float:
    """Validate the signal strength λ (§2)."""
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"signal strength lam must be finite and >= 0, got {lam!r}")
    return float(lam)


def _check_alpha(name: str, alpha: float) -> float:
    """Validate an initial overlap α ∈ [−1, 1] (§4)."""
    if not np.isfinite(alpha) or abs(alpha) > 1:
        raise ValueError(f"initial overlap {name} must lie in [-1, 1], got {alpha!r}")
    return float(alpha)


def _check_times(t: ArrayLike) -> FloatArray:
    """Validate the flow times t ≥ 0 (§4)."""
    times = np.asarray(t, dtype=float)
    if not np.all(np.isfinite(times)) or np.any(times < 0):
        raise ValueError("flow times t must be finite and >= 0")
    return times


def _mp_edges(c: float) -> tuple[float, float]:
    """Bulk edges a, b = (1 ∓ √c)² of μ_p (§1)."""
    root = np.sqrt(c)
    return (1.0 - root) ** 2, (1.0 + root) ** 2


def marchenko_pastur_stieltjes(z: ArrayLike, c: float) -> ComplexArray:
    """m_p(z) = ∫ dμ_p(x)/(x − z) = (1 − c − z + √(z−a)√(z−b))/(2cz) (§1); real z ≠ 0 means z + i0."""
    c = _check_ratio(c)
    # Casting real input to complex gives a +0.0 imaginary part, so each principal root
    # takes its boundary value from the upper half-plane, as the branch requires.
    z = np.asarray(z, dtype=complex)
    if np.any(z == 0):
        raise ValueError("the Stieltjes transform has a pole at z = 0; pass z != 0")
    a, b = _mp_edges(c)
    return (1.0 - c - z + np.sqrt(z - a) * np.sqrt(z - b)) / (2.0 * c * z)


def marchenko_pastur_density(x: ArrayLike, c: float) -> FloatArray:
    """Continuous part √((x−a)(b−x))/(2πcx) of μ_p on (a, b) (§1)."""
    c = _check_ratio(c)
    x = np.asarray(x, dtype=float)
    a, b = _mp_edges(c)
    inside = (x > a) & (x < b)
    # Outside the bulk the formula is meaningless (and 0/0 at x = 0 when c = 1).
    safe = np.where(inside, x, 1.0)
    density = np.sqrt((safe - a) * (b - safe)) / (2.0 * np.pi * c * safe)
    return np.where(inside, density, 0.0)


def marchenko_pastur_atom(c: float) -> float:
    """Mass max(0, 1 − 1/c) of μ_p at 0, the null space of ZZᵀ when p > n (§1)."""
    return max(0.0, 1.0 - 1.0 / _check_ratio(c))


def bbp_threshold(c: float) -> float:
    """Rectangular BBP threshold λ_c = c^{1/4} (§2)."""
    return _check_ratio(c) ** 0.25


def outlier_singular_value(lam: float, c: float) -> float:
    """Outlier s₁ = √((1+λ²)(c+λ²))/λ for λ > λ_c, nan otherwise (§2)."""
    lam = _check_strength(lam)
    if lam <= bbp_threshold(c):
        return float("nan")
    return float(np.sqrt((1.0 + lam**2) * (c + lam**2)) / lam)


def bbp_overlaps(lam: float, c: float) -> tuple[float, float]:
    """θ_u² = (1 − cλ⁻⁴)/(1 + cλ⁻²), θ_v² = (1 − cλ⁻⁴)/(1 + λ⁻²) above λ_c, else 0 (§2)."""
    lam = _check_strength(lam)
    if lam <= bbp_threshold(c):
        return 0.0, 0.0
    gain = 1.0 - c / lam**4
    return float(np.sqrt(gain / (1.0 + c / lam**2))), float(np.sqrt(gain / (1.0 + lam**-2)))


def stall_ratio(lam: float, c: float) -> float:
    """α_u/α_v = −θ_v/θ_u = −√((λ²+c)/(λ²+1)) on the stall set; nan at or below λ_c (§2, §4)."""
    lam = _check_strength(lam)
    if lam <= bbp_threshold(c):
        return float("nan")
    return float(-np.sqrt((lam**2 + c) / (lam**2 + 1.0)))


def _unspiked_entries(zeta: ArrayLike, c: float) -> tuple[ComplexArray, ComplexArray]:
    """g_p = ζ m_p(ζ²), g_n = ζ m_n(ζ²): e- and w-entries of (M₀ − ζ)⁻¹ for λ = 0 (§3)."""
    zeta = np.asarray(zeta, dtype=complex)
    z = zeta * zeta
    m_p = marchenko_pastur_stieltjes(z, c)
    m_n = c * m_p - (1.0 - c) / z
    return zeta * m_p, zeta * m_n


def spike_determinant(zeta: ArrayLike, c: float, lam: float) -> ComplexArray:
    """h(ζ) = 1 − λ² g_p(ζ) g_n(ζ), whose zeros on ζ > √b are the outliers ±s₁ (§3)."""
    lam = _check_strength(lam)
    g_p, g_n = _unspiked_entries(zeta, c)
    return 1.0 - lam**2 * g_p * g_n


def resolvent_entries(zeta: ArrayLike, c: float, lam: float) -> tuple[ComplexArray, ComplexArray, ComplexArray]:
    """Limits of eᵀ(M−ζ)⁻¹e, wᵀ(M−ζ)⁻¹w, eᵀ(M−ζ)⁻¹w: g_p/h, g_n/h, −λ g_p g_n/h (§3)."""
    lam = _check_strength(lam)
    g_p, g_n = _unspiked_entries(zeta, c)
    h = 1.0 - lam**2 * g_p * g_n
    return g_p / h, g_n / h, -lam * g_p * g_n / h


def _spike_determinant_slope(s: float, c: float, lam: float) -> float:
    """h′(s) for real s > √b, from m′(x) = (R′ − 1)/(2cx) − m/x with R = √((x−a)(x−b)) (§3)."""
    x = s * s
    a, b = _mp_edges(c)
    root = np.sqrt((x - a) * (x - b))
    m_p = float(marchenko_pastur_stieltjes(x, c).real)
    dm_p = ((x - 1.0 - c) / root - 1.0) / (2.0 * c * x) - m_p / x
    m_n = c * m_p - (1.0 - c) / x
    dm_n = c * dm_p + (1.0 - c) / x**2
    # g(s) = s m(s²)  ⇒  g′(s) = m(s²) + 2s² m′(s²).
    dg_p, dg_n = m_p + 2.0 * x * dm_p, m_n + 2.0 * x * dm_n
    return -(lam**2) * (dg_p * s * m_n + s * m_p * dg_n)


@dataclass(frozen=True)
class SpectralMeasures:
    """Folded spectral measures of M on s ≥ 0 (§3): nodes/weights per measure plus outlier atoms.

    An even measure ν on R is stored as ν(ds) + ν(−ds) on s ≥ 0 and the odd ν_ew as
    2ν_ew(ds) on s > 0, so ∫ f dν = Σ_k weight_k f(node_k) + outlier term for every f of
    the measure's parity (cosh, cosh², sinh² for ee, ww, p, n; sinh, cosh·sinh for ew).
    Bulk nodes come first; the last node is s = 0 and carries the null-space atoms.
    Outlier weights are the two atoms at ±s₁ together (θ_u², θ_v², θ_uθ_v in theory).
    """

    c: float
    lam: float
    nodes: FloatArray
    ee: FloatArray
    ww: FloatArray
    ew: FloatArray
    mp_p: FloatArray
    mp_n: FloatArray
    outlier: float
    outlier_ee: float
    outlier_ww: float
    outlier_ew: float

    @property
    def edge(self) -> float:
        """Bulk edge √b = 1 + √c of the singular values (§1)."""
        return 1.0 + np.sqrt(self.c)

    @property
    def s_max(self) -> float:
        """Largest point of the support: s₁ above λ_c, the edge √b otherwise (§4 scaling)."""
        return self.outlier if np.isfinite(self.outlier) else self.edge


def spectral_measures(c: float, lam: float, n_nodes: int = DEFAULT_NODES) -> SpectralMeasures:
    """Quadrature for ν_ee, ν_ww, ν_ew, μ_p, μ_n via s² = (a+b)/2 + (b−a)/2·cos θ (§3)."""
    c, lam = _check_ratio(c), _check_strength(lam)
    if int(n_nodes) != n_nodes or n_nodes < 2:
        raise ValueError(f"n_nodes must be an integer >= 2, got {n_nodes!r}")
    a, b = _mp_edges(c)
    # Midpoints in θ: the integrands are smooth, even and 2π-periodic in θ (the square-root
    # edges become sin θ factors), so this rule converges spectrally and never hits x = 0.
    # Within ~0.1% of λ_c, h almost vanishes at the edge and the ν densities spike there:
    # at 400 nodes the mass error is ~4e-4 for λ = 1.001 λ_c but ~1e-9 for λ = 1.01 λ_c.
    angles = (np.arange(n_nodes) + 0.5) * np.pi / n_nodes
    x = 0.5 * (a + b) + 0.5 * (b - a) * np.cos(angles)
    s = np.sqrt(x)
    dx = 0.5 * (b - a) * np.sin(angles) * (np.pi / n_nodes)
    g_ee, g_ww, g_ew = resolvent_entries(s, c, lam)
    # Stieltjes inversion density (1/π) Im G(s + i0), ds = dx/(2s), doubled by folding.
    fold = dx / (np.pi * s)
    mp_p = marchenko_pastur_density(x, c) * dx
    # Residues at ζ = 0 (null space of Xᵀ for c > 1, of X for c < 1): for c > 1,
    # g_p ≈ −(1 − 1/c)/ζ and g_n ≈ ζ/(c − 1), so h(0) = 1 + λ²/c; for c < 1,
    # g_n ≈ −(1 − c)/ζ and g_p ≈ ζ/(1 − c), so h(0) = 1 + λ².
    zero_ee = (c - 1.0) / (c + lam**2) if c > 1 else 0.0
    zero_ww = (1.0 - c) / (1.0 + lam**2) if c < 1 else 0.0
    s1 = outlier_singular_value(lam, c)
    outlier_ee = outlier_ww = outlier_ew = 0.0
    if np.isfinite(s1):
        g_p, g_n = (g.real.item() for g in _unspiked_entries(s1, c))
        slope = _spike_determinant_slope(s1, c, lam)
        # Atom of g/h at a simple zero of h is −g(s₁)/h′(s₁); times 2 for ±s₁.
        outlier_ee = -2.0 * g_p / slope
        outlier_ww = -2.0 * g_n / slope
        outlier_ew = 2.0 * lam * g_p * g_n / slope

    return SpectralMeasures(
        c=c,
        lam=lam,
        nodes=np.append(s, 0.0),
        ee=np.append(fold * g_ee.imag, zero_ee),
        ww=np.append(fold * g_ww.imag, zero_ww),
        ew=np.append(fold * g_ew.imag, 0.0),
        mp_p=np.append(mp_p, marchenko_pastur_atom(c)),
        # μ_n = c μ_p on the bulk (m_n = c m_p − (1−c)/z) plus its atom 1 − c when c < 1.
        mp_n=np.append(c * mp_p, max(0.0, 1.0 - c)),
        outlier=s1,
        outlier_ee=outlier_ee,
        outlier_ww=outlier_ww,
        outlier_ew=outlier_ew,
    )


def _top_mode_coefficient(alpha_u: float, alpha_v: float, theta_u: float, theta_v: float) -> float:
    """κ = α_uθ_u + α_vθ_v, √2 × the overlap of (u₀, v₀) with M's top eigenvector (§4)."""
    kappa = alpha_u * theta_u + alpha_v * theta_v
    if abs(kappa) <= _STALL_RTOL * (abs(alpha_u) * theta_u + abs(alpha_v) * theta_v):
        return 0.0
    return kappa


def overlap_moments(
    t: ArrayLike,
    c: float,
    lam: float,
    alpha_u: float,
    alpha_v: float,
    n_nodes: int = DEFAULT_NODES,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(N_u, D_u, N_v, D_v) of §4, scaled by e^{−t s_max} (N) and e^{−2t s_max} (D)."""
    times = _check_times(t)
    alpha_u, alpha_v = _check_alpha("alpha_u", alpha_u), _check_alpha("alpha_v", alpha_v)
    nu = spectral_measures(c, lam, n_nodes)
    flat = times.reshape(-1)
    s_max = nu.s_max
    # cosh and sinh times e^{−t s_max}: every exponent is ≤ 0, so nothing overflows and q,
    # a ratio homogeneous in that factor, is unchanged.
    rise = np.exp(np.outer(flat, nu.nodes - s_max))
    fall = np.exp(-np.outer(flat, nu.nodes + s_max))
    ch, sh = 0.5 * (rise + fall), 0.5 * (rise - fall)
    ch2, sh2, chsh = ch * ch, sh * sh, ch * sh
    n_u = alpha_u * (ch @ nu.ee) + alpha_v * (sh @ nu.ew)
    n_v = alpha_v * (ch @ nu.ww) + alpha_u * (sh @ nu.ew)
    cross = 2.0 * alpha_u * alpha_v * (chsh @ nu.ew)
    d_u = (
        alpha_u**2 * (ch2 @ nu.ee)
        + cross
        + alpha_v**2 * (sh2 @ nu.ww)
        + (1.0 - alpha_u**2) * (ch2 @ nu.mp_p)
        + (1.0 - alpha_v**2) * (sh2 @ nu.mp_n)
    )
    d_v = (
        alpha_v**2 * (ch2 @ nu.ww)
        + cross
        + alpha_u**2 * (sh2 @ nu.ee)
        + (1.0 - alpha_v**2) * (ch2 @ nu.mp_n)
        + (1.0 - alpha_u**2) * (sh2 @ nu.mp_p)
    )
    if np.isfinite(nu.outlier):
        # The ±s₁ atoms form a rank-one block: with θ_u² = outlier_ee and θ_uθ_v =
        # outlier_ew, their parts are N_u = θ_u A, D_u = A², N_v = θ_v B, D_v = B², where
        # A, B = (κ₊ e^{t s₁} ± κ₋ e^{−t s₁})/2 and κ± = α_uθ_u ± α_vθ_v. Keeping κ₊ as a
        # factor makes the stall set (κ₊ = 0) exact rather than a rounding cancellation.
        theta_u = np.sqrt(nu.outlier_ee)
        theta_v = nu.outlier_ew / theta_u
        kappa_plus = _top_mode_coefficient(alpha_u, alpha_v, theta_u, theta_v)
        kappa_minus = alpha_u * theta_u - alpha_v * theta_v
        up = 0.5 * kappa_plus * np.exp(flat * (nu.outlier - s_max))
        down = 0.5 * kappa_minus * np.exp(-flat * (nu.outlier + s_max))
        amp_u, amp_v = up + down, up - down
        n_u, d_u = n_u + theta_u * amp_u, d_u + amp_u**2
        n_v, d_v = n_v + theta_v * amp_v, d_v + amp_v**2
    shape = times.shape
    return n_u.reshape(shape), d_u.reshape(shape), n_v.reshape(shape), d_v.reshape(shape)


def overlap_trajectories(
    t: ArrayLike,
    c: float,
    lam: float,
    alpha_u: float,
    alpha_v: float,
    n_nodes: int = DEFAULT_NODES,
) -> tuple[FloatArray, FloatArray]:
    """Large-dimension overlaps q_u(t) = N_u/√D_u, q_v(t) = N_v/√D_v of the flow (§4)."""
    n_u, d_u, n_v, d_v = overlap_moments(t, c, lam, alpha_u, alpha_v, n_nodes)
    return n_u / np.sqrt(d_u), n_v / np.sqrt(d_v)


def limit_overlaps(c: float, lam: float, alpha_u: float, alpha_v: float) -> tuple[float, float]:
    """t → ∞ limits sign(α_uθ_u + α_vθ_v)·(θ_u, θ_v); zero below λ_c and on the stall set (§4)."""
    alpha_u, alpha_v = _check_alpha("alpha_u", alpha_u), _check_alpha("alpha_v", alpha_v)
    theta_u, theta_v = bbp_overlaps(lam, c)
    sign = float(np.sign(_top_mode_coefficient(alpha_u, alpha_v, theta_u, theta_v)))
    return sign * theta_u, sign * theta_v
