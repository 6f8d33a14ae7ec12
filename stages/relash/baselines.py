"""The baselines: a degree-preserving independent-membership null, a Gaussian on the fitted latents, a VAE."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm import tqdm


def degree_null_probabilities(a_train: np.ndarray) -> np.ndarray:
    """Independent memberships with P(i ∈ e) = d_i / m: every node keeps its expected degree."""
    return a_train.mean(axis=0).astype(np.float64)


def fit_gaussian(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (ddof=1, a small ridge) of the rows of ``values``."""
    mean = values.mean(axis=0)
    cov = np.cov(values, rowvar=False).reshape(values.shape[1], values.shape[1]) + 1e-6 * np.eye(values.shape[1])
    return mean, cov


def sample_gaussian(mean: np.ndarray, cov: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """n draws from N(mean, cov)."""
    return rng.multivariate_normal(mean, cov, size=n, method="cholesky")


def gaussian_log_density(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """log N(x; mean, cov) per row."""
    d = x - mean
    chol = np.linalg.cholesky(cov)
    sol = np.linalg.solve(chol, d.T)
    return -0.5 * (sol ** 2).sum(axis=0) - np.log(np.diag(chol)).sum() - 0.5 * x.shape[1] * math.log(2 * math.pi)


class HypergraphVAE(nn.Module):
    """A VAE on [incidence row, standardised attributes]: Bernoulli memberships, Gaussian attributes."""

    def __init__(self, n_nodes: int, n_attr: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.n_nodes = n_nodes
        self.encoder = nn.Sequential(nn.Linear(n_nodes + n_attr, hidden), nn.SiLU(), nn.Linear(hidden, hidden),
                                     nn.SiLU(), nn.Linear(hidden, 2 * dim))
        self.decoder = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                     nn.Linear(hidden, n_nodes + n_attr))
        self.log_s = nn.Parameter(torch.zeros(n_attr))

    def decode(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Membership logits (m, n) and attribute means (m, p)."""
        out = self.decoder(u)
        return out[:, :self.n_nodes], out[:, self.n_nodes:]

    def negative_elbo(self, a: torch.Tensor, x: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """Mean over rows of −ELBO: reconstruction NLL (Bernoulli + Gaussian) + KL(q(u | a, x) ‖ N(0, I))."""
        mu, logvar = self.encoder(torch.cat([a, x], dim=1)).chunk(2, dim=1)
        u = mu + torch.exp(0.5 * logvar) * eps
        logits, x_mean = self.decode(u)
        rec = F.binary_cross_entropy_with_logits(logits, a, reduction="none").sum(dim=1)
        rec = rec + (0.5 * (x - x_mean) ** 2 / torch.exp(2 * self.log_s) + self.log_s).sum(dim=1)
        kl = 0.5 * (torch.exp(logvar) + mu ** 2 - 1 - logvar).sum(dim=1)
        return (rec + kl).mean()


def train_vae(a: np.ndarray, x_std: np.ndarray, dim: int, hidden: int, steps: int, batch_size: int, lr: float,
              seed: int, desc: str = "VAE") -> tuple[HypergraphVAE, list[float]]:
    """Fit the VAE by Adam on minibatches (x already standardised)."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    a_t, x_t = torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(x_std, dtype=torch.float32)
    model = HypergraphVAE(a.shape[1], x_std.shape[1], dim, hidden)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in tqdm(range(steps), desc=desc, unit="step", leave=False):
        idx = torch.randint(0, a_t.shape[0], (batch_size,), generator=gen)
        loss = model.negative_elbo(a_t[idx], x_t[idx], torch.randn(batch_size, dim, generator=gen))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return model.eval(), losses
