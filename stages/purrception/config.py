"""Typed params of ``purrception`` (params/purrception.yaml)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "purrception"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "final_fid_ratio",
    "best_baseline_fid_over_marginal",
    "speedup_vs_cfm_endpoint",
    "speedup_vs_cfm_velocity",
    "speedup_vs_discrete_fm",
)
Method = Literal["purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm"]
Sampler = Literal["stochastic", "deterministic"]


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
    """The four objectives × ``n_seeds``, same network and steps; weights kept at the ``checkpoints`` steps.

    The checkpoints are spaced about logarithmically from early in training, so that "reached at the first
    checkpoint" is resolvable for a curve that flattens early (issue 22); the last is the final model.
    """

    methods: list[Method] = Field(min_length=2)
    n_seeds: int = Field(ge=1)
    d_model: int = Field(ge=4)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    t_eps: float = Field(ge=0, lt=0.5)
    z_loss_weight: float = Field(ge=0)
    checkpoints: list[int] = Field(min_length=2)
    max_threads: MaxThreads  # a 64-wide transformer: a second thread mostly adds synchronisation cost
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"methods must be unique, got {self.methods}")
        if "purrception" not in self.methods:
            raise ValueError("methods must include purrception")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.checkpoints[0] < 1 or any(b <= a for a, b in pairwise(self.checkpoints)):
            raise ValueError(f"checkpoints must be positive and strictly increasing, got {self.checkpoints}")
        if self.checkpoints[-1] != self.trainer.max_steps:
            raise ValueError(f"checkpoints must end at trainer.max_steps ({self.trainer.max_steps}): the last "
                             f"checkpoint is the final model, got {self.checkpoints}")
        return self


class EvaluateConfig(Section):
    """Sample counts for the Fréchet distance, sampler steps, temperatures, k of the k-NN precision/recall.

    Purrception is sampled both ways at every checkpoint: ``stochastic`` (a code drawn from its posterior at
    every step, as discrete FM draws its proposals) and ``deterministic`` (the posterior-mean ODE, argmax at the end).
    """

    n_samples: int = Field(ge=8)
    n_reference: int = Field(ge=8)
    sampling_steps: int = Field(ge=2, le=1000)
    temperatures: list[float] = Field(min_length=1)
    knn_k: int = Field(ge=1)
    grid_samples: int = Field(ge=1, le=64)
    batch_size: int = Field(ge=1)
    max_threads: MaxThreads

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


class ReportConfig(Section):
    """How the verdict metrics are read from the curves, fixed with the rule before the run.

    Speed: per seed and per baseline b, target_b = ``target_fid_factor`` × a best FID over the checkpoints:
    b's (``speed_target: baseline_best``, a level b reaches) or the worse of b's and Purrception's
    (``pair_worse_best``, a level both reach); speedup_vs_b = (b's first checkpoint at ≤ target_b) /
    (Purrception's). ``verdict_sampler``:
    which Purrception sampler the verdict reads (the other is reported beside it). ``gates``: checks of the
    verdict block that are positive controls.
    """

    target_fid_factor: float = Field(ge=1.0, le=10.0)
    speed_target: Literal["baseline_best", "pair_worse_best"]
    verdict_sampler: Sampler
    gates: list[str]


class ReportInputs(Section):
    """The report reads its own section and the verdict rule."""

    report: ReportConfig
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
    """``purrception.report`` and ``purrception.verdict`` (every gate must be a check, and not every check a gate)."""
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    names = {c.name for c in verdict.checks}
    missing = [g for g in report.gates if g not in names]
    if missing:
        raise ConfigError(f"{PAPER}.report.gates: {missing} are not checks of {PAPER}.verdict")
    if set(report.gates) >= names:
        raise ConfigError(f"{PAPER}.report.gates: at least one check of {PAPER}.verdict must be a claim, not a gate")
    return ReportInputs(report=report, verdict=verdict)
