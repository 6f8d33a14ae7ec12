"""The distribution-free generator of hyperlink latents: score-based diffusion (ReLaSH, Sec. 3.2).

Forward process: the Ornstein-Uhlenbeck SDE dX = −X dt + √2 dW, whose marginal given x₀ is
N(e^{−t} x₀, (1 − e^{−2t}) I). A small MLP ε̂(x, t) is trained by denoising score matching;
the score is s(x, t) = −ε̂(x, t) / σ_t. Samples come from Euler-Maruyama on the reverse SDE
dX = [−X − 2 s(X, t)] dt + √2 dW̄, started from N(0, I) at t = T.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from tqdm import tqdm


def ou_marginal(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean coefficient e^{−t} and standard deviation √(1 − e^{−2t}) of X_t | x₀ under the OU forward SDE."""
    return torch.exp(-t), torch.sqrt(-torch.expm1(-2 * t))


class ScoreMLP(nn.Module):
    """ε̂(x, t): an MLP of x and sinusoidal features of log t."""

    def __init__(self, dim: int, hidden: int, n_freq: int = 8) -> None:
        super().__init__()
        self.register_buffer("freqs", torch.exp(torch.linspace(0.0, math.log(32.0), n_freq)))
        self.net = nn.Sequential(nn.Linear(dim + 2 * n_freq, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        arg = torch.log(t)[:, None] * self.freqs[None, :]
        return self.net(torch.cat([x, torch.sin(arg), torch.cos(arg)], dim=1))

    def score(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """s(x, t) = −ε̂(x, t) / σ_t."""
        return -self(x, t) / ou_marginal(t)[1][:, None]


def dsm_loss(model: ScoreMLP, x0: torch.Tensor, t: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """Denoising score matching with weight σ_t² (Vincent 2011): E‖ε̂(e^{−t}x₀ + σ_t ε, t) − ε‖²."""
    mean_coef, std = ou_marginal(t)
    xt = mean_coef[:, None] * x0 + std[:, None] * eps
    return ((model(xt, t) - eps) ** 2).sum(dim=1).mean()


def train_score_model(x0: torch.Tensor, hidden: int, steps: int, batch_size: int, lr: float, t_min: float,
                      t_max: float, seed: int, desc: str = "score model") -> tuple[ScoreMLP, list[float]]:
    """Fit ε̂ by Adam on minibatches of x₀ with t log-uniform on [t_min, t_max]."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = ScoreMLP(x0.shape[1], hidden)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    lo, hi = math.log(t_min), math.log(t_max)
    losses = []
    for _ in tqdm(range(steps), desc=desc, unit="step", leave=False):
        idx = torch.randint(0, x0.shape[0], (batch_size,), generator=gen)
        t = torch.exp(lo + (hi - lo) * torch.rand(batch_size, generator=gen))
        loss = dsm_loss(model, x0[idx], t, torch.randn(batch_size, x0.shape[1], generator=gen))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return model.eval(), losses


def sample_reverse_sde(model: ScoreMLP, n: int, dim: int, n_steps: int, t_min: float, t_max: float,
                       gen: torch.Generator) -> torch.Tensor:
    """Euler-Maruyama on the reverse SDE from N(0, I) at t_max to t_min (log-spaced grid; no noise on the last step)."""
    ts = torch.exp(torch.linspace(math.log(t_max), math.log(t_min), n_steps + 1))
    x = torch.randn(n, dim, generator=gen)
    with torch.no_grad():
        for k in range(n_steps):
            t, dt = ts[k], ts[k] - ts[k + 1]
            drift = x + 2 * model.score(x, t.expand(n))
            x = x + drift * dt
            if k < n_steps - 1:
                x = x + torch.sqrt(2 * dt) * torch.randn(n, dim, generator=gen)
    return x
