"""Typed params of ``matrix_denoising`` (params/matrix_denoising.yaml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.threads import MaxThreads, cap_threads
from stages.core.verdict import VerdictRule
from stages.matrix_denoising.theory import bbp_threshold, stall_ratio

PAPER = "matrix_denoising"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "fss_exponent",
    "fss_exponent_deviation",
    "fss_exponent_wrong_theory",
    "fss_gap_largest_n",
    "limit_error",
    "max_trajectory_gap",
    "max_trajectory_gap_above",
    "max_trajectory_gap_below",
    "stall_peak_contrast",
    "stall_peak_offset",
    "stall_slowdown",
    "svd_limit_error",
    "svd_transition_estimate_error",
    "transition_estimate_error",
    "transition_location_error",
)


def limit_threads(max_threads: int, threads: int) -> int:
    """Cap torch and the BLAS pools (numpy's matrix products) at ``max_threads`` (never above ``threads``)."""
    from threadpoolctl import threadpool_limits

    n = min(max_threads, threads)
    cap_threads(n)
    threadpool_limits(n)
    return n


class InitialOverlaps(Section):
    """A named initial condition (α_u, α_v) = (⟨u*, u₀⟩, ⟨v*, v₀⟩)."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9_]+$")
    alpha_u: float = Field(ge=-1.0, le=1.0)
    alpha_v: float = Field(ge=-1.0, le=1.0)


class DataConfig(Section):
    """Instance grid: SNRs λ around λ_c = c^{1/4}, seeds, initial overlaps."""

    max_threads: MaxThreads = 1

    p: int = Field(ge=2)
    n: int = Field(ge=2)
    lambdas: list[float] = Field(min_length=3)
    n_seeds: int = Field(ge=1)
    initial_overlaps: list[InitialOverlaps] = Field(min_length=1)
    stall_alpha_v: float = Field(gt=0.0, lt=1.0)
    stall_min_gap: float = Field(ge=0.0)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if any(lam <= 0 for lam in self.lambdas):
            raise ValueError("lambdas must be positive")
        if len(set(self.lambdas)) != len(self.lambdas):
            raise ValueError("lambdas must be distinct")
        names = [i.name for i in self.initial_overlaps]
        if len(set(names)) != len(names) or {"stall", "stall_mirror"} & set(names):
            raise ValueError("initial_overlaps names must be unique and not 'stall'/'stall_mirror'")
        return self


class TrainConfig(Section):
    """Riemannian gradient descent: step size η, horizon T, recording interval."""

    max_threads: MaxThreads = 1

    step_size: float = Field(gt=0.0, le=0.5)
    horizon: float = Field(gt=0.0)
    record_every: float = Field(gt=0.0)

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        ratio = self.record_every / self.step_size
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise ValueError("record_every must be a positive multiple of step_size")
        if self.record_every > self.horizon:
            raise ValueError("record_every must not exceed horizon")
        return self


class EvaluateConfig(Section):
    """Theory-vs-simulation metrics."""

    max_threads: MaxThreads = 1

    transition_window: float = Field(ge=0.0)
    theory_nodes: int = Field(ge=50)
    stall_fraction: float = Field(gt=0.0, lt=1.0)
    settle_tolerance: float = Field(gt=0.0, lt=1.0)
    wrong_theory_shift: float = Field(gt=0.0, lt=0.5)
    bootstrap_draws: int = Field(ge=100)


class ReportConfig(Section):
    """What the report plots."""

    max_threads: MaxThreads = 1

    trajectory_lambdas: list[float] = Field(min_length=1)


class FlowStudiesConfig(Section):
    """Exact finite-n flows: finite-size scaling, initial-overlap ratio scan, transition grid."""

    max_threads: MaxThreads = 1
    n_seeds: int = Field(ge=1)
    fss_aspect: float = Field(gt=0.0, le=4.0)
    fss_sizes: list[int] = Field(min_length=2)
    fss_lambdas: list[float] = Field(min_length=2)
    fss_times: list[float] = Field(min_length=1)
    fss_inits: list[InitialOverlaps] = Field(min_length=1)
    fss_krylov_dim: int = Field(ge=4)
    scan_p: int = Field(ge=2)
    scan_n: int = Field(ge=2)
    scan_lambdas: list[float] = Field(min_length=1)
    scan_alpha_v: float = Field(gt=0.0, lt=1.0)
    scan_ratios: list[float] = Field(min_length=3)
    scan_horizon: float = Field(gt=0.0)
    scan_record_every: float = Field(gt=0.0)
    scan_krylov_dim: int = Field(ge=4)
    transition_p: int = Field(ge=2)
    transition_n: int = Field(ge=2)
    transition_lambdas: list[float] = Field(min_length=4)
    transition_time: float = Field(gt=0.0)
    transition_repeats: int = Field(ge=1)
    transition_krylov_dim: int = Field(ge=4)
    transition_init: InitialOverlaps

    @model_validator(mode="after")
    def _check(self) -> FlowStudiesConfig:
        for name in ("fss_sizes", "fss_lambdas", "fss_times", "scan_lambdas", "scan_ratios", "transition_lambdas"):
            values = getattr(self, name)
            if len(set(values)) != len(values) or list(values) != sorted(values):
                raise ValueError(f"{name} must be distinct and increasing")
        if any(n < 2 or abs(self.fss_aspect * n - round(self.fss_aspect * n)) > 1e-9 for n in self.fss_sizes):
            raise ValueError("fss_aspect × n must be an integer ≥ 1 for every n in fss_sizes")
        if min(self.fss_lambdas + self.scan_lambdas + self.transition_lambdas) <= 0:
            raise ValueError("signal strengths must be positive")
        if min(self.fss_times) <= 0 or min(self.scan_ratios) <= 0:
            raise ValueError("fss_times and scan_ratios must be positive")
        if self.scan_record_every > self.scan_horizon:
            raise ValueError("scan_record_every must not exceed scan_horizon")
        c = self.scan_p / self.scan_n
        if min(self.scan_lambdas) <= bbp_threshold(c):
            raise ValueError("scan_lambdas must lie above λ_c of scan_p/scan_n (the stall set exists only there)")
        if max(self.scan_ratios) * abs(stall_ratio(max(self.scan_lambdas), c)) * self.scan_alpha_v > 1:
            raise ValueError("scan_ratios × stall ratio × scan_alpha_v must stay within [-1, 1]")
        return self

    @property
    def fss_pairs(self) -> list[tuple[int, int]]:
        """(p, n) of every size of the scaling study, c = p/n fixed."""
        return [(round(self.fss_aspect * n), n) for n in self.fss_sizes]


def load_flow_studies(params: Path) -> FlowStudiesConfig:
    """``matrix_denoising.flow_studies``."""
    return load_section(FlowStudiesConfig, f"{PAPER}.flow_studies", params)


def load_data(params: Path) -> DataConfig:
    """``matrix_denoising.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainConfig:
    """``matrix_denoising.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateConfig:
    """``matrix_denoising.evaluate``."""
    return load_section(EvaluateConfig, f"{PAPER}.evaluate", params)


class ReportInputs(Section):
    """The report step reads its own section and the verdict rule."""

    report: ReportConfig
    verdict: VerdictRule


def load_report(params: Path) -> ReportInputs:
    """``matrix_denoising.report`` and ``matrix_denoising.verdict``."""
    return ReportInputs(report=load_section(ReportConfig, f"{PAPER}.report", params),
                        verdict=load_section(VerdictRule, f"{PAPER}.verdict", params))
