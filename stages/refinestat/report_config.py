"""Typed params the ``report`` step alone reads: ``refinestat.context`` beside the report's inputs of config.py."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from stages.core.config import Section, load_section
from stages.core.verdict import VerdictRule
from stages.refinestat.config import (
    PAPER,
    GenerateConfig,
    Method,
    ReliabilityConfig,
    ReportConfig,
    SamplerConfig,
    SandboxConfig,
    TaskName,
    load_report,
)


class SizingConfig(Section):
    """Measurements before the verdict rule and the registered size, as the report's sizing history states them."""

    load: str
    global_seed: int
    decode_tokens_per_s: float = Field(gt=0)
    sandbox_run_s: tuple[float, float]
    compile_s: float = Field(gt=0)
    smoke_token_budget: tuple[int, int]
    pilot_expert_scores: dict[TaskName, int]
    pilot_misspecified_scores: dict[TaskName, int]
    target_minutes: float = Field(gt=0)
    registered_n_programs: int = Field(ge=1)
    registered_token_budget: int = Field(ge=1)
    aborted_s_per_attempt: float = Field(gt=0)
    next_token_budget: int = Field(ge=1)


class ContextConfig(Section):
    """The paper's run rates and programs per data set, analytic null-model gaps (not runs), the sizing history."""

    paper_run_rates: dict[Method, float]
    paper_programs_per_task: int = Field(ge=1)
    null_model_gaps: dict[TaskName, float]
    sizing: SizingConfig


class ReportStepInputs(Section):
    """Everything the report reads: the verdict rule, its section, the context, reliability, generator, sampler
    and the sandbox's limits."""

    verdict: VerdictRule
    report: ReportConfig
    context: ContextConfig
    reliability: ReliabilityConfig
    generate: GenerateConfig
    sampler: SamplerConfig
    sandbox: SandboxConfig
    min_passing: int
    token_budget: int
    max_runs: int


def load_report_step(params: Path) -> ReportStepInputs:
    """``refinestat.verdict``, ``.report``, ``.context``, ``.reliability``, ``.generate``, ``.sampler`` and
    ``.sandbox``."""
    base = load_report(params)
    reliability = load_section(ReliabilityConfig, f"{PAPER}.reliability", params)
    generate = load_section(GenerateConfig, f"{PAPER}.generate", params)
    return ReportStepInputs(verdict=base.verdict, report=base.report,
                            context=load_section(ContextConfig, f"{PAPER}.context", params),
                            reliability=reliability, generate=generate,
                            sampler=load_section(SamplerConfig, f"{PAPER}.sampler", params),
                            sandbox=load_section(SandboxConfig, f"{PAPER}.sandbox", params),
                            min_passing=base.min_passing, token_budget=base.token_budget, max_runs=base.max_runs)
