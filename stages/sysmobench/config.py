"""Typed params of ``sysmobench`` (params/sysmobench.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "sysmobench"
SystemName = Literal["spinlock", "mutex", "ringbuffer", "election"]
Operator = Literal["rename_variable", "type_error", "remove_action", "swap_update", "drop_guard"]
OPERATOR_NAMES = ("rename_variable", "type_error", "remove_action", "swap_update", "drop_guard")
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
_METRIC_NAMES = ("syntax", "runtime", "conformance", "invariants")
METRICS = tuple(sorted([*(f"caught_{op}" for op in OPERATOR_NAMES),
                        *(f"mutant_mean_{m}" for m in _METRIC_NAMES),
                        *(f"specificity_{m}" for m in _METRIC_NAMES),
                        "ordering_share", "reference_min_score", "specificity_min_share"]))


class TracesConfig(Section):
    """Seeded executions of the instrumented implementations, and the sizes of the systems."""

    systems: list[SystemName] = Field(min_length=1)
    n_seeds: int = Field(ge=1, le=50)
    first_seed: int = Field(ge=0, le=10000)  # seed indices first_seed .. first_seed + n_seeds - 1 (pilot: 100)
    n_traces: int = Field(ge=1, le=200)
    n_steps: int = Field(ge=2, le=500)
    n_procs: int = Field(ge=2, le=5)
    capacity: int = Field(ge=2, le=6)
    n_values: int = Field(ge=1, le=5)

    @model_validator(mode="after")
    def _check(self) -> TracesConfig:
        if len(set(self.systems)) != len(self.systems):
            raise ValueError(f"systems must be unique, got {self.systems}")
        return self

    @property
    def seed_indices(self) -> list[int]:
        """The seed indices of this run."""
        return list(range(self.first_seed, self.first_seed + self.n_seeds))


class EvaluateConfig(Section):
    """Candidates (reference, mutants) and how SANY and TLC run on them."""

    operators: list[Operator] = Field(min_length=1)
    mutants_per_operator: int = Field(ge=1, le=50)
    sim_traces: int = Field(ge=1, le=100000)
    sim_depth: int = Field(ge=1, le=10000)
    java: str = Field(min_length=1)
    heap_mb: int = Field(ge=64, le=8192)
    cpu_s: int = Field(ge=1, le=600)
    wall_s: float = Field(gt=0, le=3600)
    workers: int = Field(ge=1, le=16)

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if len(set(self.operators)) != len(self.operators):
            raise ValueError(f"operators must be unique, got {self.operators}")
        if self.wall_s < 3 * self.cpu_s:
            raise ValueError(f"wall_s ({self.wall_s}) must be at least 3 x cpu_s ({self.cpu_s}): the CPU limit decides "
                             f"a run's outcome, the wall clock only stops a run that hangs")
        return self


class EvaluateInputs(Section):
    """evaluate reads its own section and the systems and sizes of ``sysmobench.traces``."""

    evaluate: EvaluateConfig
    traces: TracesConfig


class GenerateConfig(Section):
    """The spec writers: the local LM's sampling, and an optional HTTP endpoint (off when null)."""

    n_samples: int = Field(ge=1, le=50)
    max_new_tokens: int = Field(ge=1, le=4096)
    temperature: float = Field(ge=0, le=2)
    max_threads: MaxThreads  # one token at a time through a small model: a second thread mostly synchronises
    endpoint: str | None = Field(default=None, pattern=r"^https?://")
    endpoint_timeout_s: float = Field(gt=0, le=600)


class GenerateInputs(Section):
    """generate reads its own section and the systems, seeds and sizes of ``sysmobench.traces``."""

    generate: GenerateConfig
    traces: TracesConfig

    @model_validator(mode="after")
    def _check(self) -> GenerateInputs:
        if self.generate.n_samples > self.traces.n_seeds:
            raise ValueError(f"generate.n_samples ({self.generate.n_samples}) must not exceed traces.n_seeds "
                             f"({self.traces.n_seeds}): one spec per system for each of the first seeds")
        return self


class PreviousRule(Section):
    """A rule this paper's verdict was decided by before, kept to report its outcome on the current run."""

    rule: VerdictRule
    outcome: str = Field(min_length=1)  # its outcome on the run it decided, in words
    why_replaced: str = Field(min_length=1)


class ReportInputs(Section):
    """The report reads the verdict rule, which checks are gates (positive controls), and evaluate's limits (the
    evaluation budget it states)."""

    verdict: VerdictRule
    evaluate: EvaluateConfig
    gates: list[str] = Field(min_length=1)
    sizing_history: list[str] = Field(min_length=1)
    previous_rules: list[PreviousRule]


class _Report(Section):
    gates: list[str] = Field(min_length=1)
    sizing_history: list[str] = Field(min_length=1)  # the pilot and every resizing, in words with their numbers
    previous_rules: list[PreviousRule] = Field(default_factory=list)


def load_traces(params: Path) -> TracesConfig:
    """``sysmobench.traces``."""
    return load_section(TracesConfig, f"{PAPER}.traces", params)


def load_generate(params: Path) -> GenerateInputs:
    """``sysmobench.generate`` with ``sysmobench.traces``."""
    try:
        return GenerateInputs(generate=load_section(GenerateConfig, f"{PAPER}.generate", params),
                              traces=load_section(TracesConfig, f"{PAPER}.traces", params))
    except ValueError as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"{PAPER}.generate: {err}") from None


def load_evaluate(params: Path) -> EvaluateInputs:
    """``sysmobench.evaluate`` with ``sysmobench.traces``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          traces=load_section(TracesConfig, f"{PAPER}.traces", params))


def load_report(params: Path) -> ReportInputs:
    """``sysmobench.verdict``, ``sysmobench.report`` and ``sysmobench.evaluate``."""
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    section = load_section(_Report, f"{PAPER}.report", params)
    gates = section.gates
    names = {c.name for c in verdict.checks}
    missing = [g for g in gates if g not in names]
    if missing:
        raise ConfigError(f"{PAPER}.report.gates: {missing} are not checks of {PAPER}.verdict")
    if set(gates) == names:
        raise ConfigError(f"{PAPER}.report.gates: at least one check of {PAPER}.verdict must be a claim, not a gate")
    return ReportInputs(verdict=verdict, evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                        gates=gates, sizing_history=section.sizing_history, previous_rules=section.previous_rules)
