"""Typed params of ``mtd_mirror_descent`` (params/mtd_mirror_descent.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "mtd_mirror_descent"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "deep_multistep_margin_shrunk_tv",
    "shallow_bayes_minus_md1_shrunk_tv",
    "shallow_kl_over_md1",
    "shallow_layer1_gain_over_positional",
)


class DataConfig(Section):
    """The MTD source: q tokens, m lags, π* and the Dirichlet prior over λ; split sizes."""

    q: int = Field(ge=2, le=64)
    m: int = Field(ge=1, le=16)
    pi_concentration: float = Field(gt=0)
    pi_floor: float = Field(gt=0, lt=1)
    dirichlet_alpha: float = Field(gt=0)
    seq_len: int = Field(ge=4)
    n_train: int = Field(ge=1)
    n_val: int = Field(ge=1)
    n_test: int = Field(ge=1)
    max_threads: MaxThreads = 1

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.seq_len <= self.m + 1:
            raise ValueError("seq_len must exceed m + 1 so some positions have a full history")
        return self


class ModelSpec(Section):
    """One architecture to train: the attention-only class of the paper or a standard transformer."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    kind: Literal["attention_only", "transformer"]
    n_layers: int = Field(ge=1, le=24)
    d_model: int = Field(ge=4)
    n_heads: int = Field(ge=1)
    d_head: int = Field(default=16, ge=1)


class TrainConfig(Section):
    """Next-token training of every model, ``n_seeds`` times (Lightning)."""

    models: list[ModelSpec] = Field(min_length=1)
    n_seeds: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    warmup_steps: int = Field(default=0, ge=0)
    cosine_decay: bool = False
    trainer: TrainerConfig
    max_threads: MaxThreads = 1

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        names = [s.name for s in self.models]
        if len(set(names)) != len(names):
            raise ValueError(f"model names must be unique, got {names}")
        return self


class EtaGrid(Section):
    """Log-spaced grid of mirror-descent step sizes searched on the validation split."""

    low: float = Field(gt=0)
    high: float = Field(gt=0)
    n: int = Field(ge=2)


class EvaluateConfig(Section):
    """Context lengths T, MD steps, η grid, Bayes importance sampling, shrinkage and control grids, models compared."""

    lengths: list[int] = Field(min_length=1)
    gate_min_length: int = Field(ge=2)
    md_steps: list[int] = Field(min_length=1)
    eta_grid: EtaGrid
    beta_grid_n: int = Field(ge=3)
    positional_grid_step: float = Field(gt=0, le=0.5)
    bayes_samples: int = Field(ge=10)
    ess_floor: float = Field(gt=0)
    shallow_model: str
    deep_model: str
    baseline_model: str
    max_threads: MaxThreads = 1

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if 1 not in self.md_steps or not any(k >= 2 for k in self.md_steps):
            raise ValueError(f"md_steps must hold 1 and some k >= 2, got {self.md_steps}")
        if not any(t >= self.gate_min_length for t in self.lengths):
            raise ValueError(f"no length reaches gate_min_length={self.gate_min_length}: {self.lengths}")
        if abs(round(1.0 / self.positional_grid_step) * self.positional_grid_step - 1.0) > 1e-9:
            raise ValueError("positional_grid_step must divide 1")
        return self


class EvaluateInputs(Section):
    """The evaluate step reads its own section and the prior of the data (for the Bayes predictor)."""

    evaluate: EvaluateConfig
    dirichlet_alpha: float = Field(gt=0)


class ReportInputs(Section):
    """The report step reads the verdict rule (its plots and tables have no params)."""

    verdict: VerdictRule


def load_data(params: Path) -> DataConfig:
    """``mtd_mirror_descent.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainConfig:
    """``mtd_mirror_descent.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``mtd_mirror_descent.evaluate`` and ``mtd_mirror_descent.data.dirichlet_alpha``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          dirichlet_alpha=load_section(DataConfig, f"{PAPER}.data", params).dirichlet_alpha)


def load_report(params: Path) -> ReportInputs:
    """``mtd_mirror_descent.verdict``."""
    return ReportInputs(verdict=load_section(VerdictRule, f"{PAPER}.verdict", params))
