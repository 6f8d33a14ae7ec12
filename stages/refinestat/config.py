"""Typed params of ``refinestat`` (params/refinestat.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "refinestat"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "conclusive_tasks",
    "expert_reliability_min",
    "heldout_within_tolerance_fraction",
    "heldout_not_below_null_fraction",
    "reliability_separation_min",
    "run_rate_refinestat",
    "run_rate_refinestat_minus_syntax",
    "run_rate_refinestat_minus_unconstrained",
    "run_rate_syntax",
    "run_rate_unconstrained",
    "scripted_control_accepts",
    "null_within_tolerance_fraction",
)
TaskName = Literal["eight_schools", "dugongs", "diabetes"]
Method = Literal["unconstrained", "syntax", "refinestat"]
PromptEnd = Literal["indent", "healed", "newline"]
Generator = Literal["smollm2-135m", "gemma3-270m"]  # causal-LM asset folders under models/assets/
METHODS: tuple[str, ...] = ("unconstrained", "syntax", "refinestat")


class DataConfig(Section):
    """Which bundled data sets become tasks, and the held-out share of the exchangeable ones."""

    tasks: list[TaskName] = Field(min_length=1)
    n_splits: int = Field(ge=1, le=20)
    heldout_fraction: float = Field(gt=0, lt=1)
    diabetes_n_fit: int = Field(ge=10, le=300)
    diabetes_n_heldout: int = Field(ge=5, le=142)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be distinct, got {self.tasks}")
        return self


class SamplerConfig(Section):
    """NUTS in the sandbox: chains x draws (+ tune), per program."""

    chains: int = Field(ge=1, le=8)
    draws: int = Field(ge=10)
    tune: int = Field(ge=10)
    target_accept: float = Field(gt=0.5, lt=1)


class SandboxConfig(Section):
    """The persistent PyMC worker's limits: per program, and for its start-up (import and first compile)."""

    cpu_s: int = Field(ge=1, le=3600)
    wall_s: float = Field(gt=0, le=3600)
    startup_wall_s: float = Field(gt=0, le=3600)
    memory_mb: int = Field(ge=200, le=16000)

    @model_validator(mode="after")
    def _wall_is_a_safety_net(self) -> SandboxConfig:
        if self.wall_s < 3 * self.cpu_s:
            raise ValueError(f"wall_s ({self.wall_s}) must be at least 3 x cpu_s ({self.cpu_s}): the CPU-time "
                             "limit decides a program's outcome, the wall clock only stops a worker that hangs")
        return self


class ReliabilityConfig(Section):
    """The seven diagnostic checks (RefineStat §3.2) and how many must pass for a program to be reliable."""

    rhat_max: float = Field(gt=1, le=2)
    ess_bulk_min: float = Field(gt=0)
    ess_tail_min: float = Field(gt=0)
    bfmi_min: float = Field(gt=0, lt=1)
    pareto_k_max: float = Field(gt=0, le=2)
    min_passing: int = Field(ge=1, le=7)


class GenerateConfig(Section):
    """The generator, the methods and their equal token budget."""

    generator: Generator
    n_seeds: int = Field(ge=1, le=20)
    n_programs: int = Field(ge=1, le=100)
    sampling_round: int = Field(ge=0, le=1000)
    methods: list[Method] = Field(min_length=1)
    temperature: float = Field(gt=0, le=2)
    resample_temperature: float = Field(gt=0, le=2)
    top_p: float = Field(gt=0, le=1)
    token_budget: int = Field(ge=16, le=20000)
    max_runs: int = Field(ge=1, le=10)
    refine_rounds: int = Field(ge=0, le=5)
    max_statements: int = Field(ge=2, le=30)
    max_line_tokens: int = Field(ge=8, le=256)
    n_shots: int = Field(ge=1, le=6)
    prompt_end: PromptEnd
    max_checks: int = Field(ge=1, le=100000)
    max_resamples: int = Field(ge=0, le=100)
    script_token_budget: int = Field(ge=16, le=20000)
    script_line_tokens: int = Field(ge=8, le=1000)
    max_threads: MaxThreads
    workers: int = Field(ge=1, le=8)

    @model_validator(mode="after")
    def _check(self) -> GenerateConfig:
        if len(set(self.methods)) != len(self.methods):
            raise ValueError(f"methods must be distinct, got {self.methods}")
        if self.refine_rounds + 1 > self.max_runs:
            raise ValueError(f"refine_rounds + 1 ({self.refine_rounds + 1}) runs must fit in "
                             f"max_runs ({self.max_runs})")
        return self


class SynthesizeInputs(Section):
    """synthesize reads its own sections and the data section's task list."""

    generate: GenerateConfig
    sampler: SamplerConfig
    sandbox: SandboxConfig
    reliability: ReliabilityConfig


class ReportConfig(Section):
    """The held-out tolerance, and which checks of the verdict rule are gates (positive controls)."""

    heldout_tolerance: float = Field(gt=0)
    null_margin: float = Field(ge=0)
    gates: list[str] = Field(min_length=1)


class ReportInputs(Section):
    """The report reads the verdict rule, its own section, the reliability threshold and the budget per attempt."""

    verdict: VerdictRule
    report: ReportConfig
    min_passing: int
    token_budget: int
    max_runs: int


def load_data(params: Path) -> DataConfig:
    """``refinestat.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_synthesize(params: Path) -> SynthesizeInputs:
    """``refinestat.generate``, ``.sampler``, ``.sandbox`` and ``.reliability``."""
    return SynthesizeInputs(generate=load_section(GenerateConfig, f"{PAPER}.generate", params),
                            sampler=load_section(SamplerConfig, f"{PAPER}.sampler", params),
                            sandbox=load_section(SandboxConfig, f"{PAPER}.sandbox", params),
                            reliability=load_section(ReliabilityConfig, f"{PAPER}.reliability", params))


def load_report(params: Path) -> ReportInputs:
    """``refinestat.verdict``, ``refinestat.report``, the reliability threshold and the budget per attempt."""
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    names = {c.name for c in verdict.checks}
    missing = [g for g in report.gates if g not in names]
    if missing:
        raise ConfigError(f"{PAPER}.report.gates: {missing} are not checks of {PAPER}.verdict")
    if set(report.gates) == names:
        raise ConfigError(f"{PAPER}.report.gates: at least one check of {PAPER}.verdict must be a claim, not a gate")
    min_passing = load_section(ReliabilityConfig, f"{PAPER}.reliability", params).min_passing
    generate = load_section(GenerateConfig, f"{PAPER}.generate", params)
    return ReportInputs(verdict=verdict, report=report, min_passing=min_passing, token_budget=generate.token_budget,
                        max_runs=generate.max_runs)
