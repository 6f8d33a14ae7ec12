"""The four vector fields f(x̂(t), h) of the input-driven ODE dh/dt = f(x̂(t), h) (DeNOTS, as in its official code).

Two fields have Negative Feedback (NF): ``strict`` (GRUCell(x, h) − h) and ``anti``
(GRUCell(x, −h), the paper's default); two have none: a plain ``GRUCell(x, h)`` and a tanh
MLP. The MLP's width is chosen so its parameter count matches the GRU fields' (±10%).
"""

from __future__ import annotations

import torch
from torch import nn

FIELDS = ("no_feedback_gru", "tanh_mlp", "strict_feedback", "anti_feedback")
FEEDBACK_FIELDS = ("strict_feedback", "anti_feedback")
NO_FEEDBACK_FIELDS = ("no_feedback_gru", "tanh_mlp")


def no_feedback_field(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """f = GRUCell(x̂(t), h): the baseline field without feedback ("no NF" ablation)."""
    return cell(x, h)


def strict_negative_feedback(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """f = GRUCell(x̂(t), h) − h = (1 − z)(n − h): the "strict" Negative Feedback field."""
    return cell(x, h) - h


def anti_negative_feedback(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """f = GRUCell(x̂(t), −h) = (1 − z)n − z h: the "anti" NF field, DeNOTS's default."""
    return cell(x, -h)


def tanh_mlp_width(n_inputs: int, hidden: int) -> int:
    """Width w of Linear(c + H, w) → tanh → Linear(w, H) whose parameters best match a GRUCell(c, H)."""
    gru = 3 * (n_inputs * hidden + hidden * hidden + 2 * hidden)
    return max(1, round((gru - hidden) / (n_inputs + hidden + 1 + hidden)))


class VectorField(nn.Module):
    """One of ``FIELDS``, evaluated as ``field(x, h)`` with x the interpolated input at the current time."""

    def __init__(self, kind: str, n_inputs: int, hidden: int) -> None:
        super().__init__()
        if kind not in FIELDS:
            raise ValueError(f"unknown vector field '{kind}' (valid: {', '.join(FIELDS)})")
        self.kind = kind
        if kind == "tanh_mlp":
            width = tanh_mlp_width(n_inputs, hidden)
            self.net = nn.Sequential(nn.Linear(n_inputs + hidden, width), nn.Tanh(), nn.Linear(width, hidden))
        else:
            self.cell = nn.GRUCell(n_inputs, hidden)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        if self.kind == "tanh_mlp":
            return self.net(torch.cat([x, h], dim=-1))
        if self.kind == "strict_feedback":
            return strict_negative_feedback(self.cell, x, h)
        if self.kind == "anti_feedback":
            return anti_negative_feedback(self.cell, x, h)
        return no_feedback_field(self.cell, x, h)


def n_parameters(module: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
