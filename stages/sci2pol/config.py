"""Typed params of ``sci2pol`` (params/sci2pol.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.verdict import VerdictRule

PAPER = "sci2pol"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "overall_curated_minus_unfiltered",
    "overall_unfiltered_minus_none",
    "rho_lm_minus_bertscore",
    "rho_lm_minus_rouge",
)


class DataConfig(Section):
    """Generated corpus papers, policy documents citing them, and disjoint benchmark papers."""

    n_corpus_papers: int = Field(ge=4)
    n_documents: int = Field(ge=4)
    n_bench_papers: int = Field(ge=2)
    p_bad: float = Field(ge=0, le=1)
    p_long: float = Field(ge=0, le=1)
    p_many: float = Field(ge=0, le=1)
    p_false: float = Field(ge=0, le=1)


class FunnelConfig(Section):
    """Corpus funnel thresholds (link, screen, split, filter, polish)."""

    min_ratio: float = Field(gt=0, le=1)
    max_cited: int = Field(ge=1)
    judge: Literal["rubric"]  # the screening judge: the ground-truth rubric (a ceiling; see the report)
    min_score: float = Field(ge=0, le=5)
    max_words: int = Field(ge=16)
    min_sim: float = Field(ge=0, le=1)
    max_sim: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _check(self) -> FunnelConfig:
        if self.min_sim >= self.max_sim:
            raise ValueError("min_sim must be below max_sim")
        return self


class JudgeConfig(Section):
    """Judge agreement: briefs scored by each judge and metric, rank-correlated with the labels."""

    n_papers: int = Field(ge=2)
    max_tokens: int = Field(ge=64, le=2048)
    n_seeds: int = Field(ge=1)


class BenchConfig(Section):
    """The 18-task benchmark: items per task and bootstrap standard errors."""

    items_per_task: int = Field(ge=1)
    n_bootstrap: int = Field(ge=10)
    bootstrap_seed: int


class FinetuneConfig(Section):
    """LoRA fine-tuning of SmolLM2 on curated vs unfiltered pairs (vs none)."""

    n_seeds: int = Field(ge=1)
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    lora_r: int = Field(ge=1)
    lora_alpha: float = Field(gt=0)
    max_tokens: int = Field(ge=32)
    max_new_tokens: int = Field(ge=1)  # open-task generation length


class CorpusInputs(Section):
    """The corpus step reads the generator's sizes and the funnel's thresholds."""

    data: DataConfig
    funnel: FunnelConfig


def load_corpus(params: Path) -> CorpusInputs:
    """``sci2pol.data`` and ``sci2pol.funnel``."""
    return CorpusInputs(data=load_data(params), funnel=load_funnel(params))


class BenchInputs(Section):
    """The bench step: benchmark papers, items, bootstrap, and the fine-tuning runs."""

    data: DataConfig
    bench: BenchConfig
    finetune: FinetuneConfig


def load_bench_inputs(params: Path) -> BenchInputs:
    """``sci2pol.data``, ``sci2pol.bench`` and ``sci2pol.finetune``."""
    return BenchInputs(data=load_data(params), bench=load_bench(params), finetune=load_finetune(params))


class ReportInputs(Section):
    """The report step reads the verdict rule and the sizes it states (LoRA steps also at the paper profile)."""

    verdict: VerdictRule
    data: DataConfig
    funnel: FunnelConfig
    judge: JudgeConfig
    bench: BenchConfig
    finetune: FinetuneConfig
    paper_finetune_steps: int


def load_report(params: Path) -> ReportInputs:
    """``sci2pol.verdict`` with the sizes the report states."""
    return ReportInputs(verdict=load_verdict(params), data=load_data(params), funnel=load_funnel(params),
                        judge=load_judge(params),
                        bench=load_bench(params), finetune=load_finetune(params),
                        paper_finetune_steps=load_finetune(params, profile="paper").steps)


def load_data(params: Path) -> DataConfig:
    """``sci2pol.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_funnel(params: Path) -> FunnelConfig:
    """``sci2pol.funnel``."""
    return load_section(FunnelConfig, f"{PAPER}.funnel", params)


def load_judge(params: Path) -> JudgeConfig:
    """``sci2pol.judge``."""
    return load_section(JudgeConfig, f"{PAPER}.judge", params)


def load_bench(params: Path) -> BenchConfig:
    """``sci2pol.bench``."""
    return load_section(BenchConfig, f"{PAPER}.bench", params)


def load_finetune(params: Path, profile: str | None = None) -> FinetuneConfig:
    """``sci2pol.finetune`` (at the run's profile unless ``profile`` is given)."""
    return load_section(FinetuneConfig, f"{PAPER}.finetune", params, profile)


def load_verdict(params: Path) -> VerdictRule:
    """``sci2pol.verdict``."""
    return load_section(VerdictRule, f"{PAPER}.verdict", params)
