"""Typed params of ``ssg`` (params/ssg.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "ssg"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "dse_gain_over_best_naive",
    "dse_gain_over_none",
    "dse_gain_over_temperature",
    "extra_flops_fraction",
    "fd_none_over_marginal",
)
Prior = Literal["dse", "bilinear", "nearest"]
DOWNSAMPLE = 4  # the tokenizer's encoder halves the image twice


class DataConfig(Section):
    """Seeded subsets: train and validation from the asset's train split (disjoint), test from its test split."""

    image_size: int = Field(ge=4, le=64)
    n_train: int = Field(ge=16)
    n_val: int = Field(ge=16)
    n_test: int = Field(ge=16)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.image_size % DOWNSAMPLE:
            raise ValueError(f"image_size must be a multiple of {DOWNSAMPLE}, got {self.image_size}")
        return self


class TokenizerConfig(Section):
    """The multi-scale residual VQ: scales (side lengths, the last is the latent grid), shared codebook, training."""

    scales: list[int] = Field(min_length=2)
    codebook_size: int = Field(ge=2, le=4096)
    code_dim: int = Field(ge=1, le=256)
    channels: int = Field(ge=1, le=512)
    beta: float = Field(gt=0, le=10)
    lr: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=1)
    restart_every: int = Field(ge=1)
    max_threads: MaxThreads
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TokenizerConfig:
        if self.scales[0] != 1 or any(b <= a for a, b in zip(self.scales, self.scales[1:], strict=False)):
            raise ValueError(f"scales must start at 1 and increase strictly, got {self.scales}")
        return self


class TokenizerInputs(Section):
    """tokenizer reads its own section and the image size of ``ssg.data`` (the last scale is the latent grid)."""

    tokenizer: TokenizerConfig
    image_size: int

    @model_validator(mode="after")
    def _check(self) -> TokenizerInputs:
        grid = self.image_size // DOWNSAMPLE
        if self.tokenizer.scales[-1] != grid:
            raise ValueError(f"scales must end at the latent grid image_size/{DOWNSAMPLE} = {grid}, "
                             f"got {self.tokenizer.scales}")
        return self


class TrainConfig(Section):
    """The next-scale transformer: one model per seed, class-conditional with a dropped label for guidance."""

    n_seeds: int = Field(ge=1)
    d_model: int = Field(ge=4)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    weight_decay: float = Field(ge=0, le=1)
    label_dropout: float = Field(gt=0, lt=1)
    max_threads: MaxThreads
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        return self


class EvaluateConfig(Section):
    """Sampling arms and their validation grids, sample counts, k of the k-NN precision/recall.

    Every arm samples with the same classifier-free guidance weight and top-k; ``beta_grid`` is searched per prior
    and ``temperature_grid`` for the temperature baseline, each on the validation split, with common random numbers.
    """

    cfg_scale: float = Field(ge=1, le=20)
    top_k: int = Field(ge=1)
    priors: list[Prior] = Field(min_length=1)
    beta_grid: list[float] = Field(min_length=1)
    temperature_grid: list[float] = Field(min_length=1)
    n_val_samples: int = Field(ge=8)
    n_test_samples: int = Field(ge=8)
    knn_k: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    grid_samples: int = Field(ge=1, le=64)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if "dse" not in self.priors or len(set(self.priors)) != len(self.priors):
            raise ValueError(f"priors must be unique and include dse, got {self.priors}")
        if any(b < 0 for b in self.beta_grid) or 0.0 not in self.beta_grid:
            raise ValueError(f"beta_grid must be >= 0 and include 0 (no guidance), got {self.beta_grid}")
        if any(t <= 0 for t in self.temperature_grid) or 1.0 not in self.temperature_grid:
            raise ValueError(f"temperature_grid must be > 0 and include 1, got {self.temperature_grid}")
        if self.knn_k >= min(self.n_val_samples, self.n_test_samples):
            raise ValueError("knn_k must be smaller than n_val_samples and n_test_samples")
        return self


class EvaluateInputs(Section):
    """evaluate reads its own section and the seed count of ``ssg.train``."""

    evaluate: EvaluateConfig
    n_seeds: int = Field(ge=1)


class ReportInputs(Section):
    """The report reads the verdict rule and which checks are gates (positive controls)."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)


def load_data(params: Path) -> DataConfig:
    """``ssg.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_tokenizer(params: Path) -> TokenizerInputs:
    """``ssg.tokenizer`` and ``ssg.data.image_size``."""
    tok = load_section(TokenizerConfig, f"{PAPER}.tokenizer", params)
    size = load_section(DataConfig, f"{PAPER}.data", params).image_size
    try:
        return TokenizerInputs(tokenizer=tok, image_size=size)
    except ValueError as err:
        raise ConfigError(f"{PAPER}.tokenizer.scales: {err}") from None


def load_train(params: Path) -> TrainConfig:
    """``ssg.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``ssg.evaluate`` and ``ssg.train.n_seeds``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          n_seeds=load_section(TrainConfig, f"{PAPER}.train", params).n_seeds)


def load_report(params: Path) -> ReportInputs:
    """``ssg.verdict`` and ``ssg.report.gates``."""
    verdict, gates = load_gated_rule(PAPER, params)
    return ReportInputs(verdict=verdict, gates=gates)
