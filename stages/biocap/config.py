"""Typed params of ``biocap`` (params/biocap.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "biocap"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "retrieval_r5_gain_dual",
    "seen_taxa_accuracy_taxonomy",
    "shifted_zero_shot_gain_dual",
    "shifted_zero_shot_gain_hallucinated",
)
Arm = Literal["taxonomy", "caption_single", "caption_dual", "hallucinated", "shuffled"]
CAPTION_ARMS = {"caption_single": "caption", "caption_dual": "caption", "hallucinated": "hallucinated",
                "shuffled": "shuffled"}  # arm -> the caption kind it trains on


class DataConfig(Section):
    """Specimen counts per taxon and split, image size, how often the background follows the body colour."""

    image_size: int = Field(ge=48, le=224)
    species_per_genus: int = Field(ge=4, le=15)
    val_taxa_per_genus: int = Field(ge=1)
    test_taxa_per_genus: int = Field(ge=1)
    n_train_per_taxon: int = Field(ge=2)
    n_seen_test_per_taxon: int = Field(ge=1)
    n_heldout_per_taxon: int = Field(ge=2)
    habitat_probability: float = Field(ge=0.0, le=1.0)
    pattern_probability: float = Field(gt=0.5, le=1.0)
    captions_per_image: int = Field(ge=1, le=3)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.val_taxa_per_genus + self.test_taxa_per_genus >= self.species_per_genus - 1:
            raise ValueError("species_per_genus must leave at least two training taxa per genus after the "
                             "val and test taxa")
        return self


class FeaturesConfig(Section):
    """Batch sizes of the frozen encoders."""

    image_batch_size: int = Field(ge=1, le=1024)
    text_batch_size: int = Field(ge=1, le=4096)


class TrainConfig(Section):
    """The arms × seeds at equal steps: projector sizes, optimiser, batch, caption-loss weight."""

    arms: list[Arm] = Field(min_length=2)
    n_seeds: int = Field(ge=1)
    embed_dim: int = Field(ge=2, le=2048)
    hidden: int = Field(ge=0, le=4096)
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=4)
    lr: float = Field(gt=0, le=1)
    weight_decay: float = Field(ge=0, le=1)
    caption_weight: float = Field(gt=0, le=10)
    log_every: int = Field(ge=1)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms must be unique, got {self.arms}")
        if "taxonomy" not in self.arms:
            raise ValueError("arms must include the taxonomy-only baseline")
        if self.log_every > self.steps:
            raise ValueError(f"log_every ({self.log_every}) must not exceed steps ({self.steps})")
        return self


class EvaluateConfig(Section):
    """Recall cut-offs of the retrieval test."""

    recall_ks: list[int] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        ks = self.recall_ks
        if 1 not in ks or any(k < 1 for k in ks) or sorted(set(ks)) != ks:
            raise ValueError(f"recall_ks must be increasing positive integers including 1, got {self.recall_ks}")
        return self


class ReportInputs(Section):
    """The report reads the verdict rule and which check is its positive control."""

    verdict: VerdictRule
    positive_control: str = Field(min_length=1)


def load_data(params: Path) -> DataConfig:
    """``biocap.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_features(params: Path) -> FeaturesConfig:
    """``biocap.features``."""
    return load_section(FeaturesConfig, f"{PAPER}.features", params)


def load_train(params: Path) -> TrainConfig:
    """``biocap.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


class EvaluateInputs(Section):
    """evaluate reads its own section and, to rebuild the projectors, the arms and sizes of train."""

    evaluate: EvaluateConfig
    arms: list[Arm] = Field(min_length=1)
    n_seeds: int = Field(ge=1)
    embed_dim: int = Field(ge=2)
    hidden: int = Field(ge=0)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``biocap.evaluate`` and the model sizes of ``biocap.train``."""
    train = load_section(TrainConfig, f"{PAPER}.train", params)
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params), arms=train.arms,
                          n_seeds=train.n_seeds, embed_dim=train.embed_dim, hidden=train.hidden)


def load_report(params: Path) -> ReportInputs:
    """``biocap.verdict`` and ``biocap.positive_control``."""
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    control = load_section(_Control, f"{PAPER}.control", params).check
    if control not in {c.name for c in verdict.checks}:
        raise ConfigError(f"{PAPER}.control.check: positive_control '{control}' is not a check of {PAPER}.verdict")
    return ReportInputs(verdict=verdict, positive_control=control)


class _Control(Section):
    """``biocap.control``: the name of the verdict check that is the positive control."""

    check: str = Field(min_length=1)
