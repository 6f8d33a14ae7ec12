"""Typed params of ``matrix_denoising`` (params.yaml, section ``matrix_denoising``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.verdict import VerdictRule

PAPER = "matrix_denoising"


class InitialOverlaps(Section):
    """A named initial condition (α_u, α_v) = (⟨u*, u₀⟩, ⟨v*, v₀⟩)."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9_]+$")
    alpha_u: float = Field(ge=-1.0, le=1.0)
    alpha_v: float = Field(ge=-1.0, le=1.0)


class DataConfig(Section):
    """Instance grid: SNRs λ around λ_c = c^{1/4}, seeds, initial overlaps."""

    p: int = Field(ge=2)
    n: int = Field(ge=2)
    lambdas: list[float] = Field(min_length=3)
    n_seeds: int = Field(ge=1)
    initial_overlaps: list[InitialOverlaps] = Field(min_length=1)
    stall_alpha_v: float = Field(gt=0.0, lt=1.0)
    stall_min_gap: float = Field(ge=0.0)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if any(lam <= 0 for lam in self.lambdas):
            raise ValueError("lambdas must be positive")
        if len(set(self.lambdas)) != len(self.lambdas):
            raise ValueError("lambdas must be distinct")
        names = [i.name for i in self.initial_overlaps]
        if len(set(names)) != len(names) or {"stall", "stall_mirror"} & set(names):
            raise ValueError("initial_overlaps names must be unique and not 'stall'/'stall_mirror'")
        return self


class TrainConfig(Section):
    """Riemannian gradient descent: step size η, horizon T, recording interval."""

    step_size: float = Field(gt=0.0, le=0.5)
    horizon: float = Field(gt=0.0)
    record_every: float = Field(gt=0.0)

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        ratio = self.record_every / self.step_size
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError("record_every must be a positive multiple of step_size")
        if self.record_every > self.horizon:
            raise ValueError("record_every must not exceed horizon")
        return self


class EvaluateConfig(Section):
    """Theory-vs-simulation metrics."""

    transition_window: float = Field(ge=0.0)
    theory_nodes: int = Field(ge=50)
    stall_fraction: float = Field(gt=0.0, lt=1.0)


class ReportConfig(Section):
    """What the report plots."""

    trajectory_lambdas: list[float] = Field(min_length=1)


def load_data(params: Path) -> DataConfig:
    """``matrix_denoising.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainConfig:
    """``matrix_denoising.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateConfig:
    """``matrix_denoising.evaluate``."""
    return load_section(EvaluateConfig, f"{PAPER}.evaluate", params)


class ReportInputs(Section):
    """The report step reads its own section and the verdict rule."""

    report: ReportConfig
    verdict: VerdictRule


def load_report(params: Path) -> ReportInputs:
    """``matrix_denoising.report`` and ``matrix_denoising.verdict``."""
    return ReportInputs(report=load_section(ReportConfig, f"{PAPER}.report", params),
                        verdict=load_section(VerdictRule, f"{PAPER}.verdict", params))
