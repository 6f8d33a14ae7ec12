"""DeNOTS: the input-driven ODE over a natural cubic spline, integrated over a horizon scaled by D.

h(0) = W_0 x̂(0); dh/dτ = f(x̂(τ / D), h) for τ ∈ [0, D]; ŷ = W_out h(D). The spline x̂ is
parametrised on [0, 1] (observation index / (L − 1), time itself is a channel), so D is the
whole integration horizon, and the number of function evaluations (NFE) of the adaptive
solver grows with D: the paper's "depth" (abstract: NFE as depth). A solve that exceeds the step cap,
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


def index_grid(length: int) -> torch.Tensor:
    """The spline's parameter grid: L points evenly spaced on [0, 1]."""
    return torch.linspace(0.0, 1.0, length, dtype=torch.float32)


def scaled_time(tau: torch.Tensor | float, horizon: float) -> torch.Tensor | float:
    """Horizon scaling t → D·t: solver time τ ∈ [0, D] reads the spline at τ / D ∈ [0, 1]."""
    return tau / horizon


class CountedField(nn.Module):
    """dh/dτ = f(x̂(τ / D), h), counting evaluations (NFE)."""

    def __init__(self, field: VectorField, spline: torchcde.CubicSpline, horizon: float) -> None:
        super().__init__()
        self.field, self.spline, self.horizon = field, spline, horizon
        self.nfe = 0

    def forward(self, tau: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        return self.field(self.spline.evaluate(scaled_time(tau, self.horizon)), h)


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

    def hidden_state(self, coeffs: torch.Tensor, horizon: float, solver: SolverSettings) -> torch.Tensor:
        """h(D) for a batch of spline coefficients."""
        spline = torchcde.CubicSpline(coeffs, index_grid(_spline_length(coeffs)))
        func = CountedField(self.field, spline, horizon)
        h0 = self.encoder(spline.evaluate(0.0))
        h = solve(func, h0, torch.tensor([0.0, float(horizon)]), solver)[-1]
        self.last_nfe = func.nfe
        return h

    def forward(self, coeffs: torch.Tensor, horizon: float, solver: SolverSettings) -> torch.Tensor:
        return self.readout(self.hidden_state(coeffs, horizon, solver))


def _spline_length(coeffs: torch.Tensor) -> int:
    """L from torchcde's natural-cubic coefficient layout (4 blocks of c channels over L − 1 intervals)."""
    return coeffs.shape[-2] + 1
