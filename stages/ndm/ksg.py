"""The Kraskov-Stögbauer-Grassberger (KSG) mutual-information estimator (the paper's merge criterion)."""

from __future__ import annotations

import torch


def ksg_mutual_information(x: torch.Tensor, y: torch.Tensor, k: int = 3) -> float:
    """KSG estimator 1 (Kraskov et al. 2004, eq. 8) of I(X; Y) in nats, max-norm in the joint space.

    I = ψ(k) + ψ(N) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩, where ε_i is the max-norm distance of point i to its
    k-th neighbour in (X, Y) and n_x, n_y count the other points strictly within ε_i in each marginal.
    """
    x = x.reshape(len(x), -1).double()
    y = y.reshape(len(y), -1).double()
    n = len(x)
    if n <= k:
        raise ValueError(f"KSG needs more than k={k} points, got {n}")
    dx = torch.cdist(x, x, p=float("inf"))
    dy = torch.cdist(y, y, p=float("inf"))
    dz = torch.maximum(dx, dy)
    dz.fill_diagonal_(float("inf"))
    eps = dz.kthvalue(k, dim=1).values
    dx.fill_diagonal_(float("inf"))
    dy.fill_diagonal_(float("inf"))
    n_x = (dx < eps[:, None]).sum(dim=1).double()
    n_y = (dy < eps[:, None]).sum(dim=1).double()
    k_t = torch.tensor(float(k), dtype=torch.float64)
    n_t = torch.tensor(float(n), dtype=torch.float64)
    mi = torch.digamma(k_t) + torch.digamma(n_t) - (torch.digamma(n_x + 1) + torch.digamma(n_y + 1)).mean()
    return float(mi)


def gaussian_mutual_information(rho: float) -> float:
    """Closed form for two unit Gaussians of correlation ρ: I = −½ log(1 − ρ²) nats."""
    import math

    return -0.5 * math.log(1.0 - rho * rho)
