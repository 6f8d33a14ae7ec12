"""Typed params the ``report`` step alone reads: ``refinestat.context`` beside the report's inputs of config.py."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from stages.core.config import Section, load_section
from stages.core.verdict import VerdictRule
from stages.refinestat.config import (
    PAPER,
    GenerateConfig,
    Generator,
    Method,
    PromptEnd,
    ReliabilityConfig,
    ReportConfig,
    SamplerConfig,
    SandboxConfig,
    load_report,
)


class PilotConfig(Section):
    """The pilot before the verdict rule (its own global seed and seed set, fit rows only): per method run rate,
    tokens per attempt, share of attempts that submitted a program; RefineStat's run rate per prompt ending;
    the measured decoding and sandbox throughput and the machine's load."""

    global_seed: int
    seeds: list[int]
    load: str
    n_attempts: int = Field(ge=1)
    token_budget: int = Field(ge=1)
    run_rates: dict[Method, float]
    submitted: dict[Method, float]
    tokens_per_attempt: dict[Method, float]
    prompt_end_seeds: list[int]
    prompt_end_token_budget: int = Field(ge=1)
    prompt_end_max_statements: int = Field(ge=1)
    prompt_end_run_rate: dict[PromptEnd, float]
    prompt_end_submitted: dict[PromptEnd, float]
    prompt_end_masked: dict[PromptEnd, float]
    prompt_end_tokens_per_s: dict[PromptEnd, float]
    decode_tokens_per_s: float = Field(gt=0)
    sandbox_run_s: float = Field(gt=0)
    sandbox_runs: int = Field(ge=0)
    target_minutes: float = Field(gt=0)


class HistoryEntry(Section):
    """An earlier verdict rule and what its default run gave."""

    commit: str
    size: str
    rule: str
    result: str


class GemmaConfig(Section):
    """Gemma-3-270M measured beside SmolLM2 (why it was not adopted)."""

    decode_tokens_per_s: float = Field(gt=0)
    load: str
    vocab: int = Field(ge=1)
    smollm2_vocab: int = Field(ge=1)


class GeneratorPilot(Section):
    """The generator pilot before the third rule (its own seed set, fit rows only): per generator and method the
    run rate, the share of attempts that submitted a program and the tokens spent when the first was submitted;
    RefineStat's masked draws per attempt; decoding tokens per CPU second; which generator was kept and why."""

    seeds: list[int]
    load: str
    n_attempts: int = Field(ge=1)
    token_budget: int = Field(ge=1)
    prompt_end: dict[Generator, PromptEnd]
    run_rates: dict[Generator, dict[Method, float]]
    submitted: dict[Generator, dict[Method, float]]
    first_program_tokens: dict[Generator, dict[Method, float | None]]
    masked_refinestat: dict[Generator, float]
    tokens_per_cpu_s: dict[Generator, float]
    sandbox_runs: dict[Generator, int]
    wall_s: dict[Generator, float]
    healed_smollm2: dict[str, float | None]
    chosen: Generator
    reason: str


class ContextConfig(Section):
    """The paper's run rates and programs per data set, the pilots, the rule history, the Gemma measurement."""

    paper_run_rates: dict[Method, float]
    paper_programs_per_task: int = Field(ge=1)
    pilot: PilotConfig
    generator_pilot: GeneratorPilot
    history: list[HistoryEntry]
    current_change: str = Field(min_length=1)
    gemma: GemmaConfig


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
