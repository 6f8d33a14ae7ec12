"""DeNOTS: the input-driven ODE over a linear interpolant of the observations, integrated over a horizon scaled by D.

h(0) = W_0 x(t_0); dh/dτ = f(x̂(τ / D), h) for τ ∈ [0, D·T]; ŷ = W_out h(D·T). x̂ interpolates each
sequence linearly at its own real observation times (in units of the training split's longest
observation time, so T = 1; it holds the last observation after a sequence ends), and the time
axis itself is scaled, t → D·t, as in the paper: the number of function evaluations (NFE) of the
adaptive solver grows with D, the paper's "depth" (abstract: NFE as depth).

The Neural CDE baseline (Kidger et al. 2020): dh/ds = g(h) dX/ds over a natural cubic spline X of
(time, values) on the observation-index grid (a CDE is invariant to re-parametrising its control,
so D has no effect on it). A solve that exceeds the step cap,
underflows its step size or produces non-finite values raises ``SolverDiverged``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torchcde
import torchdiffeq
from torch import nn

from stages.denots.vector_fields import VectorField

if TYPE_CHECKING:
    from stages.denots.config import TrainConfig


class SolverDiverged(RuntimeError):
    """The adaptive solve hit the step cap or produced non-finite values."""


@dataclass(frozen=True)
class SolverSettings:
    """The adaptive solver of every ODE in the miniature (same method for every run)."""

    method: str
    rtol: float
    atol: float
    max_num_steps: int


def base_solver(cfg: TrainConfig) -> SolverSettings:
    """The shared adaptive solver of the profile."""
    s = cfg.solver
    return SolverSettings(s.method, s.rtol, s.atol, s.max_num_steps)


def spline_coefficients(values: torch.Tensor) -> torch.Tensor:
    """Natural cubic spline coefficients of (n, L, c) observations on the grid s_k = k / (L − 1) (torchcde)."""
    return torchcde.natural_cubic_coeffs(values, t=index_grid(values.shape[1]))


def interpolate_real_time(values: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """x̂(t): per-sequence linear interpolation of (n, L, c) observations (channel 0 = real time) at t (Sec. 3)."""
    times = values[..., 0]
    query = t.reshape(1, 1).expand(times.shape[0], 1).to(times.dtype)
    right = torch.searchsorted(times.contiguous(), query.contiguous(), right=True).clamp(1, times.shape[1] - 1)
    left = right - 1
    t0, t1 = times.gather(1, left), times.gather(1, right)
    width = t1 - t0
    w = torch.where(width > 0, (query - t0) / torch.where(width > 0, width, torch.ones_like(width)),
                    torch.zeros_like(width)).clamp(0.0, 1.0)
    before = query < times[:, :1]
    w = torch.where(before, torch.zeros_like(w), w)
    idx = left.unsqueeze(-1).expand(-1, 1, values.shape[-1])
    x0, x1 = values.gather(1, idx).squeeze(1), values.gather(1, idx + 1).squeeze(1)
    return x0 + w * (x1 - x0)


def index_grid(length: int) -> torch.Tensor:
    """The spline's parameter grid: L points evenly spaced on [0, 1]."""
    return torch.linspace(0.0, 1.0, length, dtype=torch.float32)


def scaled_time(tau: torch.Tensor | float, horizon: float) -> torch.Tensor | float:
    """Horizon scaling t → D·t (Sec. 3): solver time τ ∈ [0, D·T] reads the input at real time τ / D."""
    return tau / horizon


class CountedField(nn.Module):
    """dh/dτ = f(x̂(τ / D), h) with x̂ the real-time interpolant, counting evaluations (NFE)."""

    def __init__(self, field: VectorField, values: torch.Tensor, horizon: float) -> None:
        super().__init__()
        self.field, self.values, self.horizon = field, values, horizon
        self.nfe = 0

    def forward(self, tau: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        return self.field(interpolate_real_time(self.values, scaled_time(tau, self.horizon)), h)


def solve(func: nn.Module, h0: torch.Tensor, t: torch.Tensor, solver: SolverSettings,
          **options: object) -> torch.Tensor:
    """torchdiffeq.odeint with the step cap; failure (cap, dt underflow, non-finite state) → SolverDiverged."""
    try:
        out = torchdiffeq.odeint(func, h0, t, method=solver.method, rtol=solver.rtol, atol=solver.atol,
                                 options={"max_num_steps": solver.max_num_steps, **options})
    except AssertionError as err:
        raise SolverDiverged(str(err).split(":")[0][:120]) from None
    if not torch.isfinite(out).all():
        raise SolverDiverged("non-finite hidden state")
    return out


class DeNOTS(nn.Module):
    """Encoder, one vector field, linear readout; integrates over [0, D]."""

    def __init__(self, field: str, n_inputs: int, hidden: int, n_outputs: int) -> None:
        super().__init__()
        self.encoder = nn.Linear(n_inputs, hidden)
        self.field = VectorField(field, n_inputs, hidden)
        self.readout = nn.Linear(hidden, n_outputs)
        self.last_nfe = 0

    def hidden_state(self, values: torch.Tensor, horizon: float, solver: SolverSettings,
                     end_time: float = 1.0) -> torch.Tensor:
        """h(D·T) for a batch of (n, L, c) observations whose channel 0 is the real time."""
        func = CountedField(self.field, values, horizon)
        h0 = self.encoder(values[:, 0])
        h = solve(func, h0, torch.tensor([0.0, float(horizon) * end_time]), solver)[-1]
        self.last_nfe = func.nfe
        return h

    def forward(self, values: torch.Tensor, horizon: float, solver: SolverSettings) -> torch.Tensor:
        return self.readout(self.hidden_state(values, horizon, solver))


def cde_field(g: torch.Tensor, dx: torch.Tensor) -> torch.Tensor:
    """dh/ds = g(h) · dX/ds: the Neural CDE field, (n, H, c) times (n, c) control derivative (Kidger 2020, eq. 4)."""
    return torch.einsum("nhc,nc->nh", g, dx)


class CDEFunc(nn.Module):
    """g(h) reshaped to (H, c), driven by the spline derivative, counting evaluations."""

    def __init__(self, net: nn.Module, spline: torchcde.CubicSpline, hidden: int) -> None:
        super().__init__()
        self.net, self.spline, self.hidden = net, spline, hidden
        self.nfe = 0

    def forward(self, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        dx = self.spline.derivative(s)
        return cde_field(self.net(h).view(h.shape[0], self.hidden, dx.shape[-1]), dx)


class NeuralCDE(nn.Module):
    """Neural CDE baseline: h(0) = W_0 X(0), dh = g(h) dX over the index-grid natural cubic spline, linear readout."""

    def __init__(self, n_inputs: int, hidden: int, n_outputs: int, width: int) -> None:
        super().__init__()
        self.hidden = hidden
        self.encoder = nn.Linear(n_inputs, hidden)
        self.net = nn.Sequential(nn.Linear(hidden, width), nn.ReLU(), nn.Linear(width, hidden * n_inputs), nn.Tanh())
        self.readout = nn.Linear(hidden, n_outputs)
        self.last_nfe = 0

    def forward(self, coeffs: torch.Tensor, solver: SolverSettings) -> torch.Tensor:
        spline = torchcde.CubicSpline(coeffs, index_grid(_spline_length(coeffs)))
        func = CDEFunc(self.net, spline, self.hidden)
        h = solve(func, self.encoder(spline.evaluate(0.0)), torch.tensor([0.0, 1.0]), solver)[-1]
        self.last_nfe = func.nfe
        return self.readout(h)


def _spline_length(coeffs: torch.Tensor) -> int:
    """L from torchcde's natural-cubic coefficient layout (4 blocks of c channels over L − 1 intervals)."""
    return coeffs.shape[-2] + 1
