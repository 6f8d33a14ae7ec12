"""Typed params of ``detection_debias`` (params/detection_debias.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule
from stages.detection_debias.scenes import CLASSES, Bins, Plants

PAPER = "detection_debias"
ARMS = ("none", "reused", "inverse_frequency", "rs", "rs_procedural")
Arm = Literal["none", "reused", "inverse_frequency", "rs", "rs_procedural"]  # the keys of per-arm pilot numbers
# the augmentation arms whose synthetic images the learned generator draws; rs_procedural renders the rs layouts
# with the procedural renderer (the generator's upper bound)
GENERATED_ARMS = ("reused", "inverse_frequency", "rs")
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict check may use
METRICS = (
    "baseline_gap_unplanted_minus_underrep",
    "baseline_map",
    "generated_layout_map_ratio",
    "rs_lowdiv_rank_drop",
    "rs_minus_invfreq_lowdiv",
    "rs_minus_invfreq_overall",
    "rs_minus_invfreq_underrep",
    "rs_minus_none_underrep",
)


class DataConfig(Section):
    """Scene counts, the group bins and the planted biases of the training set."""

    image_size: int = Field(ge=24, le=256)
    n_train: int = Field(ge=8)
    n_val: int = Field(ge=4)
    n_test: int = Field(ge=4)
    size_ranges: list[list[int]] = Field(min_length=3, max_length=3)   # small, medium, large box sides [min, max]
    n_position_bins: int = Field(ge=1, le=4)
    position_margin: int = Field(ge=0, le=8)
    max_objects: int = Field(ge=1, le=8)
    class_probs: list[float] = Field(min_length=len(CLASSES), max_length=len(CLASSES))
    size_probs: list[float] = Field(min_length=3, max_length=3)
    rare_class: Literal[CLASSES] = "cross"  # type: ignore[valid-type]
    rare_position_class: Literal[CLASSES] = "triangle"  # type: ignore[valid-type]
    rare_position_prob: float = Field(ge=0, le=1)
    low_diversity_class: Literal[CLASSES] = "square"  # type: ignore[valid-type]
    low_diversity_size: Literal["small", "medium", "large"] = "medium"
    low_diversity_image_prob: float = Field(ge=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        for lo_hi in self.size_ranges:
            if len(lo_hi) != 2 or not 2 <= lo_hi[0] <= lo_hi[1] <= self.image_size // 2 + 4:
                raise ValueError(f"size_ranges: each must be [min, max] with 2 <= min <= max, got {lo_hi}")
        if any(a[1] >= b[0] for a, b in zip(self.size_ranges, self.size_ranges[1:], strict=False)):
            raise ValueError("size_ranges must be increasing and disjoint")
        for name in ("class_probs", "size_probs"):
            p = getattr(self, name)
            if any(v < 0 for v in p) or abs(sum(p) - 1) > 1e-6:
                raise ValueError(f"{name} must be non-negative and sum to 1, got {p}")
        if self.low_diversity_class == self.rare_class:
            raise ValueError(f"low_diversity_class: must differ from rare_class ({self.rare_class!r}); a frequent but "
                             "low-diversity group cannot be of the rare class")
        if self.n_position_bins < 2 and self.rare_position_prob not in (0.0, 1.0):
            raise ValueError("a rare position needs at least two position bins")
        return self

    def bins(self) -> Bins:
        """The group bins."""
        return Bins(self.image_size, tuple(tuple(r) for r in self.size_ranges), self.n_position_bins,
                    self.position_margin)

    def plants(self) -> Plants:
        """The planted biases."""
        return Plants(tuple(self.class_probs), tuple(self.size_probs), CLASSES.index(self.rare_position_class),
                      self.rare_position_prob, CLASSES.index(self.low_diversity_class),
                      ("small", "medium", "large").index(self.low_diversity_size), self.low_diversity_image_prob,
                      self.max_objects)


class DetectorConfig(Section):
    """The detector and its training (shared by every arm: the same steps, batch and learning rate)."""

    n_seeds: int = Field(ge=1, le=20)
    width: int = Field(ge=2, le=128)
    lr: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=2)
    top_k: int = Field(ge=1, le=100)
    min_score: float = Field(ge=0, lt=1)
    max_threads: MaxThreads
    trainer: TrainerConfig


class GeneratorConfig(Section):
    """The blueprint-conditioned generator and its training (L1 reconstruction on the training scenes only)."""

    width: int = Field(ge=2, le=64)
    lr: float = Field(gt=0, le=1)
    batch_size: int = Field(ge=2)
    steps: int = Field(ge=1)
    log_every: int = Field(ge=1)
    max_threads: MaxThreads


class AugmentConfig(Section):
    """The representation score and the layout samplers at one equal synthetic budget."""

    n_synthetic: int = Field(ge=1)           # synthetic images added by every augmentation arm
    beta: float = Field(ge=0)                # weight of context diversity in RS
    tau: float = Field(gt=0)                 # sampling temperature: p ∝ (score + eps)^-tau
    eps: float = Field(gt=0)
    diversity: Literal["cosine", "euclidean"]
    max_per_group: int = Field(ge=2)         # instances per group entering the pairwise diversities


class BaselineInputs(Section):
    """The baseline step: the detector, the scene bins and the RS params."""

    detector: DetectorConfig
    data: DataConfig
    augment: AugmentConfig


class GeneratorInputs(Section):
    """The generator step: the generator and the scenes."""

    generator: GeneratorConfig
    data: DataConfig


class TrainInputs(Section):
    """The train step: the detector, the generator's width and the scene bins."""

    detector: DetectorConfig
    data: DataConfig
    generator: GeneratorConfig


class PilotRecord(Section):
    """The pilot that sized the default and fixed the verdict rule (validation scenes of a separate data set); the
    report quotes it, nothing reads it as a knob."""

    seed: int
    max_steps: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    val_map: dict[Arm, float]
    val_low_diversity: dict[Arm, float]
    val_under_represented: dict[Arm, float]
    val_unplanted_none: float
    val_large_none: float
    lowdiv_rank_rs: float
    minutes_baseline: float = Field(gt=0)
    minutes_three_arms: float = Field(gt=0)


class GeneratorPilot(Section):
    """The pilot that sized the generator, the shorter detector training and the revised rule (validation scenes
    of the separate pilot data set, one seed); quoted by the report."""

    seed: int
    generator_steps: int = Field(ge=1)
    generator_width: int = Field(ge=1)
    detector_steps: int = Field(ge=1)
    detector_batch_size: int = Field(ge=1)
    val_l1: float
    val_map_generated_layouts: float
    val_map_procedural: float
    val_map: dict[Arm, float]
    val_low_diversity: dict[Arm, float]
    val_under_represented: dict[Arm, float]
    minutes_generator: float = Field(gt=0)
    minutes_per_detector: float = Field(gt=0)


class ProvisionalRule(Section):
    """A rule committed before the pilot and replaced before any default result (the report's Rule history)."""

    commit: str = Field(min_length=7)
    gates: list[str] = Field(min_length=1)
    verdict: VerdictRule


class EarlierRule(Section):
    """A rule under which a default run was made and reported, replaced since (the report's Rule history): its
    commit, its verdict block, what that run's synthetic images were and the verdict it reached (a record)."""

    commit: str = Field(min_length=7)
    gates: list[str] = Field(min_length=1)
    verdict: VerdictRule
    run: str = Field(min_length=1)
    result: str = Field(min_length=1)


class ReportInputs(Section):
    """The report: the verdict rule, its gates, the scene bins and plants (to name the groups), the arms' params,
    the pilot record and the provisional rule."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)
    data: DataConfig
    detector: DetectorConfig
    augment: AugmentConfig
    generator: GeneratorConfig
    pilot: PilotRecord
    generator_pilot: GeneratorPilot
    provisional_rule: ProvisionalRule
    earlier_rule: EarlierRule


class _Report(Section):
    gates: list[str] = Field(min_length=1)
    pilot: PilotRecord
    generator_pilot: GeneratorPilot
    provisional_rule: ProvisionalRule
    earlier_rule: EarlierRule


def load_data(params: Path) -> DataConfig:
    """``detection_debias.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_baseline(params: Path) -> BaselineInputs:
    """``detection_debias.detector``, ``.data`` and ``.augment``."""
    return BaselineInputs(detector=load_section(DetectorConfig, f"{PAPER}.detector", params), data=load_data(params),
                          augment=load_section(AugmentConfig, f"{PAPER}.augment", params))


def load_generator(params: Path) -> GeneratorInputs:
    """``detection_debias.generator`` and ``.data``."""
    return GeneratorInputs(generator=load_section(GeneratorConfig, f"{PAPER}.generator", params),
                           data=load_data(params))


def load_train(params: Path) -> TrainInputs:
    """``detection_debias.detector``, ``.data`` and ``.generator``."""
    return TrainInputs(detector=load_section(DetectorConfig, f"{PAPER}.detector", params), data=load_data(params),
                       generator=load_section(GeneratorConfig, f"{PAPER}.generator", params))


def load_report(params: Path) -> ReportInputs:
    """``detection_debias.verdict``, ``.report``, ``.data``, ``.detector``, ``.augment`` and ``.generator``."""
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    report = load_section(_Report, f"{PAPER}.report", params)
    gates = report.gates
    for key in ("provisional_rule", "earlier_rule"):
        old = getattr(report, key)
        if [g for g in old.gates if g not in {c.name for c in old.verdict.checks}]:
            raise ConfigError(f"{PAPER}.report.{key}.gates: must be checks of its verdict")
    names = {c.name for c in verdict.checks}
    missing = [g for g in gates if g not in names]
    if missing:
        raise ConfigError(f"{PAPER}.report.gates: {missing} are not checks of {PAPER}.verdict")
    if set(gates) == names:
        raise ConfigError(f"{PAPER}.report.gates: at least one check of {PAPER}.verdict must be a claim, not a gate")
    return ReportInputs(verdict=verdict, gates=gates, data=load_data(params),
                        detector=load_section(DetectorConfig, f"{PAPER}.detector", params),
                        augment=load_section(AugmentConfig, f"{PAPER}.augment", params),
                        generator=load_section(GeneratorConfig, f"{PAPER}.generator", params),
                        pilot=report.pilot, generator_pilot=report.generator_pilot,
                        provisional_rule=report.provisional_rule, earlier_rule=report.earlier_rule)
