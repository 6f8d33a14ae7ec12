"""The spiked rectangular model X = Z + λ u* v*ᵀ and initial vectors with set overlaps."""

from __future__ import annotations

import numpy as np

from stages.core.seeding import rng


def random_unit_vector(dim: int, gen: np.random.Generator) -> np.ndarray:
    """A uniformly random unit vector in R^dim."""
    x = gen.standard_normal(dim)
    return x / np.linalg.norm(x)


def sample_spiked_matrix(p: int, n: int, lam: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sec. 2 model: X = Z + λ u* v*ᵀ with Z_ij ~ N(0, 1/n) and unit u*, v*."""
    gen = rng(seed, "spiked_matrix")
    u_star = random_unit_vector(p, gen)
    v_star = random_unit_vector(n, gen)
    z = gen.standard_normal((p, n)) / np.sqrt(n)
    return z + lam * np.outer(u_star, v_star), u_star, v_star


def vector_with_overlap(target: np.ndarray, alpha: float, gen: np.random.Generator) -> np.ndarray:
    """A unit vector x with ⟨target, x⟩ = α exactly, uniform in the orthogonal part."""
    xi = gen.standard_normal(target.shape[0])
    xi -= (xi @ target) * target
    xi /= np.linalg.norm(xi)
    return alpha * target + np.sqrt(1.0 - alpha**2) * xi


def initial_vectors(u_star: np.ndarray, v_star: np.ndarray, alpha_u: float, alpha_v: float,
                    seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Initial (u₀, v₀) on the spheres with ⟨u*, u₀⟩ = α_u and ⟨v*, v₀⟩ = α_v."""
    gen = rng(seed, "initial_vectors")
    return vector_with_overlap(u_star, alpha_u, gen), vector_with_overlap(v_star, alpha_v, gen)
