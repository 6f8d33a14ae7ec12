"""Typed params of ``purrception`` (params.yaml, section ``purrception``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "purrception"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "final_fid_ratio",
    "steps_saved_vs_continuous",
    "steps_saved_vs_discrete",
)
Method = Literal["purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm"]


class DataConfig(Section):
    """Images from the asset, resized to ``image_size`` (a multiple of 4: the latent grid is 4× smaller)."""

    image_size: int = Field(ge=4, le=64)
    n_train: int = Field(ge=16)
    n_test: int = Field(ge=16)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.image_size % 4:
            raise ValueError(f"image_size must be a multiple of 4, got {self.image_size}")
        return self


class TokenizerConfig(Section):
    """The VQ-VAE: K codes of dimension D, conv width, commitment β, dead-code restarts."""

    codebook_size: int = Field(ge=2, le=4096)
    code_dim: int = Field(ge=1, le=256)
    channels: int = Field(ge=1, le=512)
    beta: float = Field(gt=0, le=10)
    lr: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=1)
    restart_every: int = Field(ge=1)
    trainer: TrainerConfig


class ClassifierConfig(Section):
    """The feature net of the Fréchet distance: a small CNN classifier of the same images."""

    channels: int = Field(ge=1, le=512)
    feature_dim: int = Field(ge=2, le=2048)
    lr: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=1)
    trainer: TrainerConfig


class TrainConfig(Section):
    """The four objectives × ``n_seeds`` with the same network and steps; weights kept at ``checkpoints``."""

    methods: list[Method] = Field(min_length=2)
    n_seeds: int = Field(ge=1)
    d_model: int = Field(ge=4)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    t_eps: float = Field(ge=0, lt=0.5)
    z_loss_weight: float = Field(ge=0)
    checkpoints: list[int] = Field(min_length=1)
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"methods must be unique, got {self.methods}")
        if "purrception" not in self.methods:
            raise ValueError("methods must include purrception")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if sorted(set(self.checkpoints)) != self.checkpoints or self.checkpoints[0] < 1:
            raise ValueError(f"checkpoints must be increasing positive steps, got {self.checkpoints}")
        if self.checkpoints[-1] != self.trainer.max_steps:
            raise ValueError(f"the last checkpoint ({self.checkpoints[-1]}) must equal trainer.max_steps "
                             f"({self.trainer.max_steps})")
        return self


class EvaluateConfig(Section):
    """Sample counts for the Fréchet distance, sampler steps, temperatures, k of the k-NN precision/recall."""

    n_samples: int = Field(ge=8)
    n_reference: int = Field(ge=8)
    sampling_steps: int = Field(ge=2, le=1000)
    temperatures: list[float] = Field(min_length=1)
    knn_k: int = Field(ge=1)
    grid_samples: int = Field(ge=1, le=64)
    batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if any(t <= 0 for t in self.temperatures):
            raise ValueError(f"temperatures must be positive, got {self.temperatures}")
        if 1.0 not in self.temperatures:
            raise ValueError("temperatures must include 1.0 (the checkpoint curves use τ = 1)")
        if self.knn_k >= min(self.n_samples, self.n_reference):
            raise ValueError("knn_k must be smaller than n_samples and n_reference")
        return self


class EvaluateInputs(Section):
    """evaluate reads its own section and t_eps of train (the samplers start at t = ε)."""

    evaluate: EvaluateConfig
    t_eps: float = Field(ge=0, lt=0.5)


class SpeedConfig(Section):
    """The "stated FID" of the speed claim: ``target_fid_factor`` × the best baseline's final FID (per seed)."""

    target_fid_factor: float = Field(ge=1.0, le=10.0)


class ReportInputs(Section):
    """The report reads the speed target and the verdict rule."""

    speed: SpeedConfig
    verdict: VerdictRule


def load_data(params: Path) -> DataConfig:
    """``purrception.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_tokenizer(params: Path) -> TokenizerConfig:
    """``purrception.tokenizer``."""
    return load_section(TokenizerConfig, f"{PAPER}.tokenizer", params)


def load_classifier(params: Path) -> ClassifierConfig:
    """``purrception.classifier``."""
    return load_section(ClassifierConfig, f"{PAPER}.classifier", params)


def load_train(params: Path) -> TrainConfig:
    """``purrception.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``purrception.evaluate`` and ``purrception.train.t_eps``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          t_eps=load_section(TrainConfig, f"{PAPER}.train", params).t_eps)


def load_report(params: Path) -> ReportInputs:
    """``purrception.speed`` and ``purrception.verdict``."""
    return ReportInputs(speed=load_section(SpeedConfig, f"{PAPER}.speed", params),
                        verdict=load_section(VerdictRule, f"{PAPER}.verdict", params))
