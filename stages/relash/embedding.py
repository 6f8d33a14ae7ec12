"""The joint latent space: a likelihood model of hyperlink memberships and attributes (ReLaSH, Sec. 3.1).

Node i has a latent z_i ∈ R^k and a degree parameter α_i; hyperlink j has a latent u_j.
Memberships are independent given the latents, P(i ∈ e_j) = σ(u_jᵀ z_i + α_i), and the
attributes are linear in the same latent, x_j = γ + B u_j + ε_j with ε_j ~ N(0, diag(s²)).
The joint negative log-likelihood is minimised by gradient descent; the model is identified
only up to shifts and invertible maps of u (absorbed by α, γ, Z and B), so the fit is put in
the canonical form 1ᵀU = 0, UᵀU/m = I, ZᵀZ diagonal (decreasing), which leaves the
likelihood unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

FIELDS = ("U", "Z", "alpha", "gamma", "B", "log_s", "x_mean", "x_std")


@dataclass
class JointEmbedding:
    """Fitted parameters; attributes are modelled in standardised units (x − x_mean) / x_std."""

    U: torch.Tensor
    Z: torch.Tensor
    alpha: torch.Tensor
    gamma: torch.Tensor
    B: torch.Tensor
    log_s: torch.Tensor
    x_mean: torch.Tensor
    x_std: torch.Tensor

    def tensors(self) -> dict[str, torch.Tensor]:
        """The parameters by name (for safetensors)."""
        return {f: getattr(self, f).detach().clone() for f in FIELDS}

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor]) -> JointEmbedding:
        """Inverse of :meth:`tensors`."""
        return cls(**{f: tensors[f] for f in FIELDS})


def membership_logits(u: torch.Tensor, z: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """Logits of P(i ∈ e_j) = σ(u_jᵀ z_i + α_i) (Eq. 1, degree-corrected), shape (m, n)."""
    return u @ z.T + alpha[None, :]


def attribute_mean(u: torch.Tensor, gamma: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """E[x_j | u_j] = γ + B u_j (Eq. 2), standardised units, shape (m, p)."""
    return gamma[None, :] + u @ b.T


def membership_nll(a: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """−log P(A_j | u_j) per hyperlink: the Bernoulli likelihood of every node's membership, shape (m,)."""
    return F.softplus(logits).sum(dim=1) - (a * logits).sum(dim=1)


def attribute_nll(x: torch.Tensor, mean: torch.Tensor, log_s: torch.Tensor) -> torch.Tensor:
    """−log N(x_j; γ + B u_j, diag(s²)) per hyperlink, shape (m,)."""
    var = torch.exp(2 * log_s)[None, :]
    return (0.5 * (x - mean) ** 2 / var + log_s[None, :] + 0.5 * math.log(2 * math.pi)).sum(dim=1)


def joint_nll(a: torch.Tensor, x: torch.Tensor, p: JointEmbedding) -> torch.Tensor:
    """The joint loss (Eq. 3): mean over hyperlinks of membership NLL + attribute NLL."""
    return (membership_nll(a, membership_logits(p.U, p.Z, p.alpha))
            + attribute_nll(x, attribute_mean(p.U, p.gamma, p.B), p.log_s)).mean()


def identifiability_projection(p: JointEmbedding) -> JointEmbedding:
    """Likelihood-equivalent parameters with 1ᵀU = 0, UᵀU/m = I, ZᵀZ diagonal decreasing (Sec. 3.1 constraints)."""
    with torch.no_grad():
        u = p.U.double()
        z, b = p.Z.double(), p.B.double()
        shift = u.mean(dim=0)
        u = u - shift
        alpha = p.alpha.double() + z @ shift
        gamma = p.gamma.double() + b @ shift
        chol = torch.linalg.cholesky(u.T @ u / u.shape[0])
        u = torch.linalg.solve_triangular(chol, u.T, upper=False).T
        z, b = z @ chol, b @ chol
        vals, q = torch.linalg.eigh(z.T @ z)
        q = q[:, torch.argsort(vals, descending=True)]
        signs = torch.sign(q[torch.argmax(q.abs(), dim=0), torch.arange(q.shape[1])])
        q = q * torch.where(signs == 0, torch.ones_like(signs), signs)[None, :]
        u, z, b = u @ q, z @ q, b @ q
        f = torch.float32
        return JointEmbedding(U=u.to(f), Z=z.to(f), alpha=alpha.to(f), gamma=gamma.to(f), B=b.to(f),
                              log_s=p.log_s.clone(), x_mean=p.x_mean.clone(), x_std=p.x_std.clone())


def fit_joint_embedding(a: np.ndarray, x: np.ndarray, dim: int, steps: int, lr: float, ridge: float,
                        seed: int, desc: str = "joint embedding") -> tuple[JointEmbedding, list[float]]:
    """Maximise the joint likelihood by Adam (full batch, a small ridge on U and Z), then project to canonical form."""
    gen = torch.Generator().manual_seed(seed)
    a_t = torch.as_tensor(a, dtype=torch.float32)
    x_mean = torch.as_tensor(x.mean(axis=0), dtype=torch.float32)
    x_std = torch.as_tensor(x.std(axis=0) + 1e-8, dtype=torch.float32)
    x_t = (torch.as_tensor(x, dtype=torch.float32) - x_mean) / x_std
    m, n = a_t.shape
    freq = a_t.mean(dim=0).clamp(1e-4, 1 - 1e-4)
    params = {
        "U": (0.1 * torch.randn(m, dim, generator=gen)).requires_grad_(),
        "Z": (0.1 * torch.randn(n, dim, generator=gen)).requires_grad_(),
        "alpha": torch.log(freq / (1 - freq)).requires_grad_(),
        "gamma": torch.zeros(x_t.shape[1]).requires_grad_(),
        "B": (0.1 * torch.randn(x_t.shape[1], dim, generator=gen)).requires_grad_(),
        "log_s": torch.zeros(x_t.shape[1]).requires_grad_(),
    }
    opt = torch.optim.Adam(params.values(), lr=lr)
    losses = []
    for _ in tqdm(range(steps), desc=desc, unit="step", leave=False):
        p = JointEmbedding(**params, x_mean=x_mean, x_std=x_std)
        nll = joint_nll(a_t, x_t, p)
        loss = nll + ridge * ((p.U ** 2).sum() / m + (p.Z ** 2).sum() / n)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(nll.detach()))
    fitted = JointEmbedding(**{k: v.detach() for k, v in params.items()}, x_mean=x_mean, x_std=x_std)
    return identifiability_projection(fitted), losses


def decode_latents(p: JointEmbedding, u: torch.Tensor, gen: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Membership probabilities σ(u z_iᵀ + α_i) and attributes γ + B u + ε in raw units, for latents u."""
    with torch.no_grad():
        probs = torch.sigmoid(membership_logits(u, p.Z, p.alpha))
        noise = torch.randn(u.shape[0], p.B.shape[0], generator=gen) * torch.exp(p.log_s)[None, :]
        x = (attribute_mean(u, p.gamma, p.B) + noise) * p.x_std[None, :] + p.x_mean[None, :]
    return probs.numpy().astype(np.float64), x.numpy().astype(np.float64)
