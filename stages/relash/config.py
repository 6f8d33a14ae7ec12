"""Typed params of ``relash`` (params/relash.yaml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "relash"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "attribute_ratio",
    "control_ratio",
    "frechet_ratio",
    "memorisation_rate",
    "structure_ratio",
)
DATASETS = ("high_school", "workplace")


class DataConfig(Section):
    """Hyperlinks of each contact data set, split by first appearance; the fixed spectral features."""

    datasets: list[str] = Field(min_length=1)
    split_fractions: list[float] = Field(min_length=3, max_length=3)
    max_hyperlinks: int | None = Field(default=None, ge=30)
    spectral_dim: int = Field(ge=1, le=64)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if any(d not in DATASETS for d in self.datasets) or len(set(self.datasets)) != len(self.datasets):
            raise ValueError(f"datasets must be distinct names from {DATASETS}")
        if any(f <= 0 for f in self.split_fractions) or abs(sum(self.split_fractions) - 1) > 1e-9:
            raise ValueError("split_fractions must be positive and sum to 1")
        return self


class TrainConfig(Section):
    """The joint embedding, the latent diffusion, the VAE baseline; seeds."""

    n_seeds: int = Field(ge=1)
    latent_dim: int = Field(ge=1, le=128)
    fit_steps: int = Field(ge=1)
    fit_lr: float = Field(gt=0, le=1)
    ridge: float = Field(ge=0)
    score_hidden: int = Field(ge=4)
    score_steps: int = Field(ge=1)
    score_batch: int = Field(ge=2)
    score_lr: float = Field(gt=0, le=1)
    t_min: float = Field(gt=0)
    t_max: float = Field(gt=0)
    vae_hidden: int = Field(ge=4)
    vae_steps: int = Field(ge=1)
    vae_batch: int = Field(ge=2)
    vae_lr: float = Field(gt=0, le=1)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.t_min >= self.t_max:
            raise ValueError("t_min must be smaller than t_max")
        return self


class EvaluateConfig(Section):
    """Sampling and the held-out likelihood's Monte-Carlo size."""

    sampler_steps: int = Field(ge=2)
    decode_tries: int = Field(ge=1)
    likelihood_samples: int = Field(ge=1)
    max_threads: MaxThreads


class EvaluateInputs(Section):
    """Evaluate rebuilds the trained modules, so it reads the train section too."""

    train: TrainConfig
    evaluate: EvaluateConfig


class ReportConfig(Section):
    """Two checks of the verdict block are preconditions, not claims.

    If the positive control does not hold, every claim check is unclear (inconclusive); if the
    memorisation guard does not hold, a claim check that holds becomes unclear (winning by copying
    training hyperlinks is not the claim). Neither counts towards the verdict itself.
    """

    positive_control: str = Field(min_length=1)
    memorisation_guard: str = Field(min_length=1)


class ReportInputs(Section):
    """The report step reads the sizes it describes, its own section and the verdict rule."""

    train: TrainConfig
    evaluate: EvaluateConfig
    report: ReportConfig
    verdict: VerdictRule

    @model_validator(mode="after")
    def _check(self) -> ReportInputs:
        names = {c.name for c in self.verdict.checks}
        guards = {self.report.positive_control, self.report.memorisation_guard}
        if not guards <= names or len(guards) != 2 or len(names - guards) < 1:
            raise ValueError("report.positive_control and report.memorisation_guard must name two different checks "
                             "of the verdict block, and at least one other check must remain")
        return self


def load_data(params: Path) -> DataConfig:
    """``relash.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainConfig:
    """``relash.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``relash.train`` and ``relash.evaluate``."""
    return EvaluateInputs(train=load_train(params), evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params))


def load_report(params: Path) -> ReportInputs:
    """``relash.train``, ``relash.evaluate`` (for the report's prose), ``relash.report`` and ``relash.verdict``."""
    return ReportInputs(train=load_train(params), evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                        report=load_section(ReportConfig, f"{PAPER}.report", params),
                        verdict=load_section(VerdictRule, f"{PAPER}.verdict", params))
