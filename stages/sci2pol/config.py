"""Typed params of ``sci2pol`` (params/sci2pol.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.verdict import VerdictRule

PAPER = "sci2pol"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "auc_lm_gold_vs_off_topic",
    "overall_curated_minus_none",
    "overall_curated_minus_none_lo",
    "overall_curated_minus_unfiltered",
    "overall_curated_minus_unfiltered_lo",
    "rho_lm_minus_bertscore",
    "rho_lm_minus_rouge",
)
BACKENDS = ("smollm2", "gemma3")  # the LM judge's candidate models (asset folders in pipeline.PATHS)


class DataConfig(Section):
    """Generated corpus papers, policy documents citing them, and disjoint benchmark papers."""

    n_corpus_papers: int = Field(ge=4)
    n_documents: int = Field(ge=4)
    n_bench_papers: int = Field(ge=2)
    n_val_briefs: int = Field(ge=1)  # held-out gold briefs for LoRA validation (corpus papers no pair is about)
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
    n_val_papers: int = Field(ge=2)  # validation papers on which the backend is chosen (never the test sets)
    backends: list[Literal["smollm2", "gemma3"]] = Field(min_length=1)
    max_tokens: int = Field(ge=64, le=4096)
    n_seeds: int = Field(ge=1)

    @model_validator(mode="after")
    def _unique(self) -> JudgeConfig:
        if len(set(self.backends)) != len(self.backends):
            raise ValueError(f"backends must be distinct, got {self.backends}")
        return self


class BenchConfig(Section):
    """The 18-task benchmark: items per task and bootstrap standard errors."""

    items_per_task: int = Field(ge=1)
    tasks: list[str] | None = None  # the tasks run (all 18 when unset), in the benchmark's order
    gen_batch: int = Field(ge=1)  # open answers generated per left-padded batch

    @model_validator(mode="after")
    def _tasks(self) -> BenchConfig:
        from stages.sci2pol.tasks import TASK_BY_NAME

        if self.tasks is not None and (not self.tasks or any(t not in TASK_BY_NAME for t in self.tasks)
                                       or len(set(self.tasks)) != len(self.tasks)):
            raise ValueError(f"tasks must be distinct names of {list(TASK_BY_NAME)}, got {self.tasks}")
        return self

    def task_specs(self) -> list:
        """The tasks run, in the benchmark's order."""
        from stages.sci2pol.tasks import TASKS

        return [t for t in TASKS if self.tasks is None or t.name in self.tasks]
    n_bootstrap: int = Field(ge=10)
    bootstrap_seed: int


class FinetuneConfig(Section):
    """LoRA fine-tuning of SmolLM2 on curated vs unfiltered pairs (vs none)."""

    n_seeds: int = Field(ge=1)
    max_steps: int = Field(ge=1)
    eval_every: int = Field(ge=1)
    patience: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr_grid: list[float] = Field(min_length=1)  # tried on the first seed of each set; later seeds reuse the choice
    lora_r: int = Field(ge=1)
    lora_alpha: float = Field(gt=0)
    max_tokens: int = Field(ge=32)
    max_new_tokens: int = Field(ge=1)  # open-task generation length

    @model_validator(mode="after")
    def _grid(self) -> FinetuneConfig:
        if any(not 0 < lr <= 1 for lr in self.lr_grid) or sorted(set(self.lr_grid)) != self.lr_grid:
            raise ValueError(f"lr_grid must be distinct rates in (0, 1], small to large, got {self.lr_grid}")
        return self


class ReportConfig(Section):
    """The competence gate of the LM judge and the checks it gates (the judge checks only)."""

    gate: str = Field(min_length=1)
    gated: list[str] = Field(min_length=1)


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
    report: ReportConfig
    data: DataConfig
    funnel: FunnelConfig
    judge: JudgeConfig
    bench: BenchConfig
    finetune: FinetuneConfig
    paper_finetune_steps: int


def load_report(params: Path) -> ReportInputs:
    """``sci2pol.verdict`` and ``sci2pol.report`` (its gate and gated checks must be checks of the rule, the
    gate not gated) with the sizes the report states."""
    verdict, report = load_verdict(params), load_section(ReportConfig, f"{PAPER}.report", params)
    names = {c.name for c in verdict.checks}
    unknown = [n for n in [report.gate, *report.gated] if n not in names]
    if unknown or report.gate in report.gated:
        raise ConfigError(f"{PAPER}.report: gate and gated checks must be distinct checks of {PAPER}.verdict "
                          f"(unknown: {unknown})")
    return ReportInputs(verdict=verdict, report=report, data=load_data(params), funnel=load_funnel(params),
                        judge=load_judge(params), bench=load_bench(params), finetune=load_finetune(params),
                        paper_finetune_steps=load_finetune(params, profile="paper").max_steps)


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
