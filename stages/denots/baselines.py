"""Baselines of the comparison table: a GRU with time-delta inputs, a diagonal state-space model,
and a Neural RDE driven by depth-2 log-signatures over windows (all fed the same observations).

Inputs are padded sequences (n, L, c) whose channel 0 is the observation time and whose
padding repeats the last observation; ``lengths`` gives each sequence's real length.
"""

from __future__ import annotations

import torch
from torch import nn

from stages.denots.neural_cde import SolverSettings, solve


def time_deltas(values: torch.Tensor) -> torch.Tensor:
    """Δt_k = t_k − t_{k−1} (Δt_0 = 0) from the time channel (channel 0)."""
    t = values[..., 0]
    return torch.cat([torch.zeros_like(t[:, :1]), t[:, 1:] - t[:, :-1]], dim=1)


def last_valid(states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """states[i, lengths[i] − 1] for (n, L, H) states."""
    return states[torch.arange(states.shape[0]), lengths - 1]


class GRUDelta(nn.Module):
    """A discrete GRU over the observations with Δt as an extra input channel (GRU-Δt)."""

    def __init__(self, n_inputs: int, hidden: int, n_outputs: int) -> None:
        super().__init__()
        self.gru = nn.GRU(n_inputs + 1, hidden, batch_first=True)
        self.readout = nn.Linear(hidden, n_outputs)

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        states, _ = self.gru(torch.cat([values, time_deltas(values).unsqueeze(-1)], dim=-1))
        return self.readout(last_valid(states, lengths))


def diagonal_ssm_scan(u: torch.Tensor, dt: torch.Tensor, log_decay: torch.Tensor,
                      frequency: torch.Tensor) -> torch.Tensor:
    """x_k = e^{Δt_k λ} x_{k−1} + (1 − e^{Δt_k λ}) u_k, λ = −e^{a} + iω: a diagonal complex SSM, zero-order hold."""
    lam = torch.complex(-torch.exp(log_decay), frequency)
    decay = torch.exp(dt.unsqueeze(-1).to(lam.dtype) * lam)
    x = torch.zeros(u.shape[0], u.shape[2], dtype=lam.dtype)
    outs = []
    for k in range(u.shape[1]):
        x = decay[:, k] * x + (1 - decay[:, k]) * u[:, k].to(lam.dtype)
        outs.append(x)
    return torch.stack(outs, dim=1)


class DiagonalSSM(nn.Module):
    """u = B x_k; a diagonal complex recurrence driven by the real time gaps; y = GELU(C [Re x, Im x] + D x_k)."""

    def __init__(self, n_inputs: int, hidden: int, n_outputs: int, state: int) -> None:
        super().__init__()
        self.inp = nn.Linear(n_inputs, state)
        self.log_decay = nn.Parameter(torch.linspace(-1.0, 2.0, state))
        self.frequency = nn.Parameter(torch.linspace(0.0, 12.0, state))
        self.mix = nn.Linear(2 * state + n_inputs, hidden)
        self.readout = nn.Linear(hidden, n_outputs)

    def forward(self, values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x = diagonal_ssm_scan(self.inp(values), time_deltas(values), self.log_decay, self.frequency)
        feats = torch.cat([x.real, x.imag, values], dim=-1)
        return self.readout(nn.functional.gelu(self.mix(last_valid(feats, lengths))))


def log_signature_depth2(path: torch.Tensor) -> torch.Tensor:
    """Depth-2 log-signature of a piecewise-linear path (n, k, c): increments and Lévy areas (c(c−1)/2)."""
    rel = path - path[:, :1]
    steps = rel[:, 1:] - rel[:, :-1]
    area = 0.5 * (torch.einsum("nki,nkj->nij", rel[:, :-1], steps) - torch.einsum("nkj,nki->nij", rel[:, :-1], steps))
    i, j = torch.triu_indices(path.shape[-1], path.shape[-1], offset=1)
    return torch.cat([rel[:, -1], area[:, i, j]], dim=-1)


def windowed_log_signatures(values: torch.Tensor, window: int) -> torch.Tensor:
    """(n, W, m) depth-2 log-signatures over consecutive windows of ``window`` steps (last point shared)."""
    n_steps = values.shape[1] - 1
    starts = list(range(0, max(n_steps, 1), window))
    return torch.stack([log_signature_depth2(values[:, s:min(s + window, n_steps) + 1]) for s in starts], dim=1)


class LogSignatureField(nn.Module):
    """dh/dτ = g(h) · logsig_w(τ) · W: the Neural RDE's field, piecewise-constant driver over W windows."""

    def __init__(self, net: nn.Module, logsigs: torch.Tensor, hidden: int) -> None:
        super().__init__()
        self.net, self.logsigs, self.hidden = net, logsigs, hidden
        self.nfe = 0

    def forward(self, tau: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        self.nfe += 1
        n_windows = self.logsigs.shape[1]
        idx = int(torch.clamp(torch.floor(tau * n_windows), 0, n_windows - 1))
        g = self.net(h).view(h.shape[0], self.hidden, -1)
        return torch.einsum("nhm,nm->nh", g, self.logsigs[:, idx]) * n_windows


class NeuralRDE(nn.Module):
    """Neural RDE (Morrill et al. 2021): h(0) = W_0 x_0, the log-signature ODE over τ ∈ [0, 1], linear readout."""

    def __init__(self, n_inputs: int, hidden: int, n_outputs: int, width: int, window: int) -> None:
        super().__init__()
        self.window, self.hidden = window, hidden
        m = n_inputs + n_inputs * (n_inputs - 1) // 2
        self.encoder = nn.Linear(n_inputs, hidden)
        self.net = nn.Sequential(nn.Linear(hidden, width), nn.ReLU(), nn.Linear(width, hidden * m), nn.Tanh())
        self.readout = nn.Linear(hidden, n_outputs)
        self.last_nfe = 0

    def forward(self, values: torch.Tensor, lengths: torch.Tensor, solver: SolverSettings) -> torch.Tensor:
        logsigs = windowed_log_signatures(values, self.window)
        func = LogSignatureField(self.net, logsigs, self.hidden)
        n_windows = logsigs.shape[1]
        jumps = torch.arange(1, n_windows, dtype=torch.float32) / n_windows
        h = solve(func, self.encoder(values[:, 0]), torch.tensor([0.0, 1.0]), solver,
                  **({"jump_t": jumps} if n_windows > 1 else {}))[-1]
        self.last_nfe = func.nfe
        return self.readout(h)
