"""Neighbour distance minimisation (NDM): an orthogonal rotation and a partition of its dimensions.

The representation x ∈ R^d is rotated, z = Rᵀx with R orthogonal, and z is cut into subspaces
(consecutive blocks of the rotated coordinates). Training minimises, within each subspace, the
distance of every point to its nearest neighbour in that subspace; the neighbours are found
without gradients and the loss flows through the rotation only. Subspaces whose KSG mutual
information per dimension exceeds a threshold are merged greedily.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrizations

from stages.ndm.ksg import ksg_mutual_information


class Rotation(nn.Module):
    """An orthogonal d × d matrix R under torch's ``orthogonal`` parametrisation (Cayley map)."""

    def __init__(self, d: int, init: torch.Tensor | None = None) -> None:
        super().__init__()
        self.linear = nn.Linear(d, d, bias=False)
        with torch.no_grad():
            self.linear.weight.copy_(torch.eye(d) if init is None else init)
        parametrizations.orthogonal(self.linear, "weight", orthogonal_map="cayley")

    @property
    def matrix(self) -> torch.Tensor:
        """R (columns are the new basis directions)."""
        return self.linear.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """z = x R: the coordinates of each row of x in the rotated basis."""
        return x @ self.matrix


def block_slices(sizes: Sequence[int]) -> list[slice]:
    """Consecutive column slices of the rotated coordinates, one per subspace."""
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    return [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]


@torch.no_grad()
def nearest_neighbours(z: torch.Tensor) -> torch.Tensor:
    """Index of each row's nearest other row (Euclidean), found without gradients."""
    d = torch.cdist(z, z)
    d.fill_diagonal_(float("inf"))
    return d.argmin(dim=1)


def neighbour_distance_loss(z: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """The NDM objective (Sec. 3): Σ_subspaces mean_i ‖z_S(i) − z_S(nn_S(i))‖, neighbours found per subspace."""
    total = z.new_zeros(())
    for sl in block_slices(sizes):
        zs = z[:, sl]
        nn_idx = nearest_neighbours(zs.detach())
        diff = zs - zs[nn_idx]
        total = total + torch.sqrt((diff * diff).sum(dim=1) + 1e-12).mean()
    return total


def train_rotation(x: torch.Tensor, sizes: Sequence[int], rotation: Rotation, steps: int, lr: float,
                   batch_size: int, generator: torch.Generator,
                   progress: Callable[[int], object] | None = None) -> list[float]:
    """Adam on the rotation; each step a random batch of points (neighbours searched within the batch)."""
    opt = torch.optim.Adam(rotation.parameters(), lr=lr)
    losses = []
    n = len(x)
    for _ in range(steps):
        idx = torch.randperm(n, generator=generator)[:batch_size] if batch_size < n else torch.arange(n)
        loss = neighbour_distance_loss(rotation(x[idx]), sizes)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(1)
    return losses


def mi_per_dimension(za: torch.Tensor, zb: torch.Tensor, k: int) -> float:
    """The merge score: KSG I(z_a; z_b) divided by the merged subspace's dimension."""
    return ksg_mutual_information(za, zb, k) / (za.shape[1] + zb.shape[1])


@dataclass
class MergeResult:
    """The merged partition: for each new subspace, the rotated coordinates it holds (in order)."""

    groups: list[list[int]]
    history: list[dict[str, float]]


def greedy_merge(z: torch.Tensor, sizes: Sequence[int], threshold: float, k: int,
                 max_dim: int) -> MergeResult:
    """Merge the pair with the largest MI per dimension while it exceeds ``threshold`` (and fits ``max_dim``)."""
    groups = [list(range(sl.start, sl.stop)) for sl in block_slices(sizes)]
    cache: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = {}

    def score(a: list[int], b: list[int]) -> float:
        key = (tuple(a), tuple(b))
        if key not in cache:
            cache[key] = mi_per_dimension(z[:, a], z[:, b], k)
        return cache[key]

    history = []
    while len(groups) > 1:
        best, pair = -np.inf, None
        for i in range(len(groups)):
            for j in range(i + 1, len(groups)):
                if len(groups[i]) + len(groups[j]) > max_dim:
                    continue
                s = score(groups[i], groups[j])
                if s > best:
                    best, pair = s, (i, j)
        if pair is None or best <= threshold:
            break
        i, j = pair
        history.append({"mi_per_dim": float(best), "size_a": len(groups[i]), "size_b": len(groups[j])})
        merged = groups[i] + groups[j]
        groups = [g for t, g in enumerate(groups) if t not in pair] + [merged]
    return MergeResult(groups=groups, history=history)


def apply_merge(rotation_matrix: torch.Tensor, groups: Sequence[Sequence[int]]) -> tuple[torch.Tensor, list[int]]:
    """Reorder R's columns so that each merged subspace is a consecutive block; its sizes."""
    order = [c for g in groups for c in g]
    return rotation_matrix[:, order].clone(), [len(g) for g in groups]


def canonical_order(rotation_matrix: torch.Tensor, sizes: Sequence[int]) -> tuple[torch.Tensor, list[int]]:
    """Blocks sorted by size (largest first, stable), so baselines can be cut into the same sizes."""
    slices = block_slices(sizes)
    order = sorted(range(len(sizes)), key=lambda b: -sizes[b])
    cols = [c for b in order for c in range(slices[b].start, slices[b].stop)]
    return rotation_matrix[:, cols].clone(), [int(sizes[b]) for b in order]


@dataclass
class NDMFit:
    """A fitted NDM: the rotation (columns = basis), the subspace sizes, losses and merge history."""

    rotation: torch.Tensor
    sizes: list[int]
    losses: list[float]
    merges: list[dict[str, float]]


def fit_ndm(x: torch.Tensor, init_block: int, restarts: int, steps: int, finetune_steps: int, rounds: int,
            lr: float, batch_size: int, threshold: float, ksg_k: int, mi_points: int, max_dim: int,
            seed: int, progress: Callable[[int], object] | None = None) -> NDMFit:
    """Train from ``restarts`` random rotations and keep the lowest loss; then merge, fine-tune, merge ... .

    The restart is chosen by the training loss alone (mean of its last tenth of steps), never by a score
    that uses ground truth.
    """
    d = x.shape[1]
    if d % init_block:
        raise ValueError(f"dimension {d} is not a multiple of the initial subspace size {init_block}")
    gen = torch.Generator().manual_seed(seed)
    sizes = [init_block] * (d // init_block)
    best: tuple[float, Rotation, list[float]] | None = None
    for _ in range(restarts):
        candidate = Rotation(d, random_rotation(d, gen))
        curve = train_rotation(x, sizes, candidate, steps, lr, batch_size, gen, progress)
        tail = float(np.mean(curve[-max(1, steps // 10):]))
        if best is None or tail < best[0]:
            best = (tail, candidate, curve)
    assert best is not None
    _, rotation, losses = best
    merges: list[dict[str, float]] = []
    mi_idx = torch.randperm(len(x), generator=gen)[:mi_points]
    for r in range(rounds):
        with torch.no_grad():
            z = rotation(x[mi_idx])
        result = greedy_merge(z, sizes, threshold, ksg_k, max_dim)
        merges += [{**h, "round": r} for h in result.history]
        if not result.history:
            break
        with torch.no_grad():
            mat, sizes = apply_merge(rotation.matrix, result.groups)
        rotation = Rotation(d, mat)
        losses += train_rotation(x, sizes, rotation, finetune_steps, lr, batch_size, gen, progress)
    with torch.no_grad():
        mat, sizes = canonical_order(rotation.matrix, sizes)
    return NDMFit(rotation=mat, sizes=sizes, losses=losses, merges=merges)


def random_rotation(d: int, generator: torch.Generator) -> torch.Tensor:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix with the sign fix)."""
    a = torch.randn(d, d, generator=generator, dtype=torch.float64)
    q, r = torch.linalg.qr(a)
    q = q * torch.sign(torch.diagonal(r))[None, :]
    return q.float()


def pca_rotation(x: torch.Tensor) -> torch.Tensor:
    """Principal axes of the centred data, by decreasing variance (columns)."""
    xc = (x - x.mean(dim=0)).double()
    _, _, vh = torch.linalg.svd(xc, full_matrices=True)
    signs = torch.sign(vh.sum(dim=1))
    signs[signs == 0] = 1
    return (vh * signs[:, None]).T.float().contiguous()
