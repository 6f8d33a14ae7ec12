"""Riemannian gradient descent on the two unit spheres for H = ½‖X − u vᵀ‖²_F."""

from __future__ import annotations

import numpy as np


def riemannian_gradients(x: np.ndarray, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sec. 2 gradient flow: −grad_u H = Xv − (uᵀXv)u, −grad_v H = Xᵀu − (uᵀXv)v, per column."""
    xv = x @ v
    xtu = x.T @ u
    multiplier = np.einsum("pk,pk->k", u, xv)  # uᵀXv: one Lagrange multiplier shared by both spheres
    return -(xv - multiplier * u), -(xtu - multiplier * v)


def rgd_step(x: np.ndarray, u: np.ndarray, v: np.ndarray, step_size: float) -> tuple[np.ndarray, np.ndarray]:
    """One RGD step with the normalisation retraction, applied to every column at once."""
    grad_u, grad_v = riemannian_gradients(x, u, v)
    u_new = u - step_size * grad_u
    v_new = v - step_size * grad_v
    return u_new / np.linalg.norm(u_new, axis=0), v_new / np.linalg.norm(v_new, axis=0)


def overlap_trajectories_rgd(x: np.ndarray, u_star: np.ndarray, v_star: np.ndarray, u0: np.ndarray,
                             v0: np.ndarray, step_size: float, n_steps: int,
                             record_stride: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run RGD from the columns of (u0, v0); return times and q_u, q_v every ``record_stride`` steps."""
    u, v = u0.copy(), v0.copy()
    times, qu, qv = [0.0], [u_star @ u], [v_star @ v]
    for k in range(1, n_steps + 1):
        u, v = rgd_step(x, u, v, step_size)
        if k % record_stride == 0:
            times.append(k * step_size)
            qu.append(u_star @ u)
            qv.append(v_star @ v)
    return np.asarray(times), np.asarray(qu), np.asarray(qv)
