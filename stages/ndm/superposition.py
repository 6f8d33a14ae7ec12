"""The toy with known subspaces: sparse features in groups, stored by a tied ReLU autoencoder."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def sample_grouped_features(n: int, n_groups: int, group_size: int, p_active: float,
                            generator: torch.Generator) -> torch.Tensor:
    """x ∈ R^(G·k): each group is active with probability p and then exactly one of its k features is on (U(0,1))."""
    active = torch.rand(n, n_groups, generator=generator) < p_active
    which = torch.randint(group_size, (n, n_groups), generator=generator)
    value = torch.rand(n, n_groups, generator=generator)
    x = torch.zeros(n, n_groups, group_size)
    x.scatter_(2, which[:, :, None], (value * active)[:, :, None])
    return x.reshape(n, n_groups * group_size)


def feature_groups(n_groups: int, group_size: int) -> np.ndarray:
    """The true group of each feature (features of a group are consecutive)."""
    return np.repeat(np.arange(n_groups), group_size)


class TiedAutoencoder(nn.Module):
    """h = W x, x̂ = ReLU(Wᵀ h + b): one weight matrix W (hidden × features), as in toy models of superposition."""

    def __init__(self, n_features: int, hidden: int, generator: torch.Generator) -> None:
        super().__init__()
        w = torch.randn(hidden, n_features, generator=generator) / hidden**0.5
        self.w = nn.Parameter(w)
        self.b = nn.Parameter(torch.zeros(n_features))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """The hidden representation h = W x (the space NDM rotates)."""
        return x @ self.w.T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.encode(x) @ self.w + self.b)


def train_autoencoder(model: TiedAutoencoder, n_groups: int, group_size: int, p_active: float, steps: int,
                      batch_size: int, lr: float, generator: torch.Generator) -> list[float]:
    """Adam on the mean squared reconstruction error over freshly sampled batches."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        x = sample_grouped_features(batch_size, n_groups, group_size, p_active, generator)
        loss = ((model(x) - x) ** 2).sum(dim=1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def oracle_rotation(w: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """The ground-truth subspaces: an orthonormal basis of each group's span of feature directions, in order.

    A group's span has rank = the number of singular values above 10% of its largest; the bases are
    orthonormalised jointly (QR, in group order), so spans that overlap make the oracle imperfect, which its
    ARI then shows. Left-over dimensions form one last block; ranks past the dimension are cut.
    """
    d = w.shape[0]
    blocks, sizes = [], []
    for g in np.unique(groups):
        u, s, _ = np.linalg.svd(w[:, groups == g], full_matrices=False)
        rank = min(int((s > 0.1 * s[0]).sum()), d - sum(sizes))
        if rank > 0:
            blocks.append(u[:, :rank])
            sizes.append(rank)
    q = np.linalg.qr(np.concatenate([*blocks, np.eye(d)], axis=1))[0][:, :d]
    if sum(sizes) < d:
        sizes.append(d - sum(sizes))
    return q, sizes
