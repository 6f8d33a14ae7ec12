"""Typed params of ``m3cotbench`` (params/m3cotbench.yaml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule
from stages.m3cotbench.scene import TASKS

PAPER = "m3cotbench"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "accuracy_gap_faithful_unfaithful",
    "consistency_faithful_minus_unfaithful",
    "cot_impact_on_preregistered_tasks",
    "f1_cot_minus_cot_shuffled",
    "f1_faithful_minus_unfaithful",
    "matcher_test_accuracy",
    "rule_based_accuracy",
    "trained_min_gain_over_chance",
)


class DataConfig(Section):
    """Scan counts per split (each scan is asked every task)."""

    n_train: int = Field(ge=6)
    n_val: int = Field(ge=3)
    n_test: int = Field(ge=3)


class TrainConfig(Section):
    """The CNN + GRU models (direct and CoT), their training, and the sampling for consistency."""

    n_seeds: int = Field(ge=1, le=20)
    channels: int = Field(ge=2, le=128)
    hidden: int = Field(ge=8, le=1024)
    epochs: int = Field(ge=1)
    batch_size: int = Field(ge=4)
    lr: float = Field(gt=0, le=1)
    n_samples: int = Field(ge=2, le=16)
    temperature: float = Field(gt=0, le=5)
    max_threads: MaxThreads


class ScoreConfig(Section):
    """The step matcher's labelled pairs and threshold grid, the bootstrap, the pre-registered CoT-hurt tasks."""

    n_pairs: int = Field(ge=8)
    threshold_grid: list[float] = Field(min_length=1)
    n_boot: int = Field(ge=10)
    cot_hurts_tasks: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ScoreConfig:
        unknown = [t for t in self.cot_hurts_tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"cot_hurts_tasks {unknown} are not tasks ({sorted(TASKS)})")
        if any(not -1 <= t <= 1 for t in self.threshold_grid):
            raise ValueError("threshold_grid must hold cosine similarities in [-1, 1]")
        return self


class TrainInputs(Section):
    """train reads its own section."""

    train: TrainConfig


class ScoreInputs(Section):
    """score reads its own section and the sample count of ``m3cotbench.train``."""

    score: ScoreConfig
    n_samples: int


class ReportInputs(Section):
    """The report reads the verdict rule, the gates and the pre-registered tasks."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)
    cot_hurts_tasks: list[str]
    n_boot: int


def load_data(params: Path) -> DataConfig:
    """``m3cotbench.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainInputs:
    """``m3cotbench.train``."""
    return TrainInputs(train=load_section(TrainConfig, f"{PAPER}.train", params))


def load_score(params: Path) -> ScoreInputs:
    """``m3cotbench.score`` with the sample count of ``m3cotbench.train``."""
    return ScoreInputs(score=load_section(ScoreConfig, f"{PAPER}.score", params),
                       n_samples=load_section(TrainConfig, f"{PAPER}.train", params).n_samples)


def load_report(params: Path) -> ReportInputs:
    """``m3cotbench.verdict``, ``m3cotbench.report.gates`` and the pre-registered tasks of ``m3cotbench.score``."""
    verdict, gates = load_gated_rule(PAPER, params)
    score = load_section(ScoreConfig, f"{PAPER}.score", params)
    return ReportInputs(verdict=verdict, gates=gates, cot_hurts_tasks=score.cot_hurts_tasks, n_boot=score.n_boot)
