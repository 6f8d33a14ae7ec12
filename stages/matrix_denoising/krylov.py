"""The gradient flow at finite n, solved exactly: (a, b)(t) = exp(tM)(u₀, v₀) by Lanczos.

Sec. 2 of the paper writes the spherical flow of H = ½‖X − u vᵀ‖² as the linear flow
(a, b)′ = M(a, b), M = [[0, X], [Xᵀ, 0]], normalised: (u, v) = (a, b)/‖a‖ (‖a‖ = ‖b‖ is
conserved since d/dt(‖a‖² − ‖b‖²) = 2aᵀXb − 2bᵀXᵀa = 0). So the overlaps at any time of
one sampled matrix follow from exp(tM) applied to the start, which a Krylov space of M
holds to machine precision at a modest dimension. Unlike RGD, this has no step-size bias,
so its distance to the large-dimension theory is finite-size effect alone.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
_BREAKDOWN = 1e-10


def lanczos_block_matvec(x: np.ndarray, q_u: np.ndarray, q_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """M(q_u, q_v) = (X q_v, Xᵀ q_u) for every column at once (Sec. 2, M = [[0, X], [Xᵀ, 0]])."""
    return x @ q_v, x.T @ q_u


def lanczos_bases(x: np.ndarray, u0: np.ndarray, v0: np.ndarray,
                  dim: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Lanczos with full reorthogonalisation of M from each column w₀ = (u₀; v₀).

    Returns (Q, alpha, beta): Q of shape (k, dim, p + n) (row i is the i-th basis vector,
    its first p entries the u-part), the tridiagonal diagonals alpha (k, dim) and
    beta (k, dim − 1). A column whose Krylov space is exhausted (β < 1e-10) gets zero
    vectors from then on, which decouples them from e₁ in T.
    """
    p, k = u0.shape
    n = v0.shape[0]
    dim = int(min(dim, p + n))
    basis = np.zeros((k, dim, p + n))
    alpha = np.zeros((k, dim))
    beta = np.zeros((k, max(dim - 1, 0)))
    start = np.concatenate([u0, v0], axis=0).T  # (k, p + n)
    basis[:, 0] = start / np.linalg.norm(start, axis=1, keepdims=True)
    dead = np.zeros(k, dtype=bool)
    for i in range(dim):
        cur = basis[:, i]  # (k, p + n)
        wu, wv = lanczos_block_matvec(x, cur[:, :p].T, cur[:, p:].T)
        w = np.concatenate([wu, wv], axis=0).T  # (k, p + n)
        alpha[:, i] = np.sum(cur * w, axis=1)
        for j in range(k):
            q = basis[j, : i + 1]
            for _ in range(2):  # full reorthogonalisation, twice ("twice is enough")
                w[j] -= q.T @ (q @ w[j])
        if i == dim - 1:
            break
        b = np.linalg.norm(w, axis=1)
        dead |= b <= _BREAKDOWN * np.maximum(np.abs(alpha[:, i]), 1.0)
        beta[:, i] = np.where(dead, 0.0, b)
        basis[:, i + 1] = np.where(dead[:, None], 0.0, w / np.where(dead, 1.0, b)[:, None])
    return basis, alpha, beta


def exact_flow_overlaps(x: np.ndarray, u_star: np.ndarray, v_star: np.ndarray, u0: np.ndarray,
                        v0: np.ndarray, times: np.ndarray, dim: int) -> tuple[FloatArray, FloatArray]:
    """q_u(t) = ⟨u*, a_t⟩/‖a_t‖, q_v(t) = ⟨v*, b_t⟩/‖b_t‖ with (a, b)_t = exp(tM)(u₀, v₀) (Sec. 2).

    Columns of u0, v0 are independent starts; returns arrays of shape (len(times), k).
    exp(tM)w₀ ≈ ‖w₀‖ Q exp(tT) e₁ in the Lanczos basis Q; the factor e^{−t θ_max} is taken
    out of exp(tT) so nothing overflows (q is homogeneous of degree 0 in it).
    """
    times = np.asarray(times, dtype=float)
    basis, alpha, beta = lanczos_bases(x, u0, v0, dim)
    k = alpha.shape[0]
    p = u0.shape[0]
    out_u = np.zeros((times.size, k))
    out_v = np.zeros((times.size, k))
    for j in range(k):
        tri = np.diag(alpha[j]) + np.diag(beta[j], 1) + np.diag(beta[j], -1)
        theta, vecs = np.linalg.eigh(tri)
        coeff = vecs * np.exp(np.outer(times, theta - theta.max()))[:, None, :]  # (T, m, m)
        c_t = coeff @ vecs[0]  # exp(t(T − θ_max)) e₁, shape (T, m)
        q_u, q_v = basis[j, :, :p], basis[j, :, p:]
        proj_u, proj_v = q_u @ u_star, q_v @ v_star
        gram_u, gram_v = q_u @ q_u.T, q_v @ q_v.T
        norm_u = np.sqrt(np.einsum("ti,ij,tj->t", c_t, gram_u, c_t))
        norm_v = np.sqrt(np.einsum("ti,ij,tj->t", c_t, gram_v, c_t))
        out_u[:, j] = (c_t @ proj_u) / norm_u
        out_v[:, j] = (c_t @ proj_v) / norm_v
    return out_u, out_v
