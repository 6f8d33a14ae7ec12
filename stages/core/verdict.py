"""Verdicts computed from measured numbers by a rule fixed in params.yaml beforehand.

A rule is a list of checks, one per claim: a metric measured once per seed, a
direction and a threshold. A check *holds* when every seed satisfies it, *fails* when
every seed violates it, and is *unclear* when seeds disagree or there are fewer seeds
than the rule asks for. A check ``over: mean`` is read from the mean over seeds instead:
it holds when the one-sided t bound of the mean (``confidence``, 0.95 unless set) lies on
the passing side of the threshold, fails when the bound on the other side lies on the
failing side, and is unclear otherwise; more seeds narrow the bound, so a paper whose
runs scatter (numeric noise, chaotic training) can size its seeds for a decision.
The paper's verdict follows from the checks:
all hold -> reproduced; all fail -> not_reproduced; some hold -> partly;
none holds and some are unclear -> inconclusive.

A per-seed value that is missing (None, as non-finite numbers are written to JSON) or not
finite is a seed on which the check does not hold: a diverged run never passes and never
crashes the verdict. A metric the rule names that was not measured at all is an error.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stages.core.config import PROFILES, ConfigError, Section, load_section, read_params

VERDICTS = ("reproduced", "partly", "not_reproduced", "inconclusive")
Verdict = Literal["reproduced", "partly", "not_reproduced", "inconclusive"]


class Check(Section):
    """One claim: ``metric <op> threshold`` on every seed, or on the mean's one-sided bound (``over: mean``)."""

    name: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    op: Literal["<=", ">="]
    threshold: float
    over: Literal["seeds", "mean"] = "seeds"
    confidence: float = Field(default=0.95, gt=0.5, lt=1.0)

    @field_validator("name", "metric")
    @classmethod
    def _a_name(cls, value: str) -> str:
        if not value.strip() or value != value.strip():
            raise ValueError(f"must be a non-empty name without surrounding spaces, got {value!r}")
        return value

    def passes(self, value: float | None) -> bool:
        """Whether one measured value satisfies the check (None, NaN and ±inf never do)."""
        if value is None or not math.isfinite(value):
            return False
        return value <= self.threshold if self.op == "<=" else value >= self.threshold

    def describe(self) -> str:
        """The check in words."""
        if self.over == "mean":
            return (f"{self.name}: mean over seeds of {self.metric} {self.op} {self.threshold:g} "
                    f"(one-sided {self.confidence:.0%} t bound)")
        return f"{self.name}: {self.metric} {self.op} {self.threshold:g}"

    def mean_bounds(self, values: Sequence[float]) -> tuple[float, float, float]:
        """Mean of finite per-seed values and its one-sided t bounds (lower, upper) at ``confidence``."""
        from scipy.stats import t as student_t

        n = len(values)
        if n < 2:
            raise ValueError(f"check '{self.name}': a bound of the mean needs at least 2 seeds, got {n}")
        mean = math.fsum(values) / n
        sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
        half = float(student_t.ppf(self.confidence, n - 1)) * sd / math.sqrt(n)
        return mean, mean - half, mean + half


class VerdictRule(Section):
    """The verdict block of a paper's params section."""

    checks: list[Check] = Field(min_length=1)
    min_seeds: int = Field(ge=1)

    @model_validator(mode="after")
    def _unique_names(self) -> VerdictRule:
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"check names must be unique, got {names}")
        if self.min_seeds < 2 and any(c.over == "mean" for c in self.checks):
            raise ValueError("a check over the mean needs min_seeds >= 2 (a bound of the mean needs a spread)")
        return self

    def describe(self) -> str:
        """The whole rule in words, for report.md and claim.json."""
        checks = "; ".join(c.describe() for c in self.checks)
        if any(c.over == "mean" for c in self.checks):
            return (f"at least {self.min_seeds} seeds; a check on a metric holds on every seed, a check on a mean "
                    f"when its one-sided t bound clears the threshold (fails when the other bound misses it) "
                    f"[{checks}]; all hold -> reproduced, all fail -> not_reproduced, some hold -> partly, "
                    f"otherwise (seeds disagree, the bound straddles the threshold, or too few seeds) -> inconclusive")
        return (f"each check must hold on every one of at least {self.min_seeds} seeds "
                f"[{checks}]; all hold -> reproduced, all fail on every seed -> not_reproduced, "
                f"some hold -> partly, otherwise (seeds disagree or too few) -> inconclusive")


def refuse_unmeasured(rule: VerdictRule, measured: Collection[str], dotted: str) -> None:
    """Refuse a check on a metric the paper's report does not measure (a cross-key check, before any work)."""
    for i, check in enumerate(rule.checks):
        if check.metric not in measured:
            raise ConfigError(f"{dotted}.checks.{i}.metric: unknown metric '{check.metric}' "
                              f"(the report measures {', '.join(sorted(measured))})")


def check_verdict_metrics(paper: str, measured: Collection[str], params_path: Path | str) -> None:
    """Every profile's ``<paper>.verdict`` names only metrics in ``measured`` (no-op without a block).

    Run by every stage of the paper before its work (``stages.core.stage``), so a misspelt metric is
    refused by the first stage a ``dvc repro`` runs, not by the report after the training.
    """
    section = read_params(params_path).get(paper)
    if not isinstance(section, dict) or "verdict" not in section:
        return
    overrides = (section["verdict"].get("profiles") or {}) if isinstance(section["verdict"], dict) else {}
    for name in PROFILES:
        rule = load_section(VerdictRule, f"{paper}.verdict", params_path, profile=name)
        replaced = isinstance(overrides.get(name), dict) and "checks" in overrides[name]
        refuse_unmeasured(rule, measured, f"{paper}.verdict.profiles.{name}" if replaced else f"{paper}.verdict")


class CheckOutcome(BaseModel):
    """What one check found."""

    name: str
    status: Literal["holds", "fails", "unclear"]
    values: list[float | None]
    description: str


def check_status(check: Check, values: Sequence[float | None], min_seeds: int) -> str:
    """Status of one check over per-seed values (a None or non-finite value fails on its seed)."""
    if len(values) < min_seeds:
        return "unclear"
    if check.over == "mean":
        return _mean_status(check, values)
    passed = [check.passes(v) for v in values]
    if all(passed):
        return "holds"
    if not any(passed):
        return "fails"
    return "unclear"


def _mean_status(check: Check, values: Sequence[float | None]) -> str:
    """Status of a check over the mean: its one-sided bound on the passing side holds, on the failing side fails.

    A missing or non-finite seed leaves no mean: the check cannot hold (fails if no seed is finite).
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    if len(finite) < len(values) or len(finite) < 2:
        return "fails" if not finite else "unclear"
    _, low, high = check.mean_bounds(finite)
    if check.op == ">=":
        return "holds" if low >= check.threshold else ("fails" if high < check.threshold else "unclear")
    return "holds" if high <= check.threshold else ("fails" if low > check.threshold else "unclear")


def _seed_value(check: Check, value: Any) -> float:
    """One per-seed value as a float; None (a non-finite number read back from JSON) becomes NaN."""
    if value is None:
        return math.nan
    try:
        if isinstance(value, str | bytes):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"verdict check '{check.name}': per-seed value of '{check.metric}' is not a number: "
                        f"{value!r}") from None


def decide(rule: VerdictRule,
           measured: Mapping[str, Sequence[float | None] | None]) -> tuple[Verdict, list[CheckOutcome]]:
    """Apply the rule to per-seed metric values; a missing metric is an error, not a pass.

    A per-seed value that is None or not finite fails the check on that seed; a metric whose
    values are None as a whole counts as no seeds (the check is unclear).
    """
    outcomes = []
    for check in rule.checks:
        if check.metric not in measured:
            raise KeyError(f"verdict check '{check.name}' needs metric '{check.metric}', "
                           f"measured only {sorted(measured)}")
        raw = measured[check.metric]
        values = [] if raw is None else [_seed_value(check, v) for v in raw]
        status = check_status(check, values, rule.min_seeds)
        outcomes.append(CheckOutcome(name=check.name, status=status, description=check.describe(),
                                     values=[v if math.isfinite(v) else None for v in values]))
    return verdict_of([o.status for o in outcomes]), outcomes


def verdict_of(statuses: Sequence[str]) -> Verdict:
    """The rule over check statuses: all hold -> reproduced, all fail -> not_reproduced, some hold -> partly,
    otherwise (none, or unclear without a hold) -> inconclusive."""
    found = set(statuses)
    if found == {"holds"}:
        return "reproduced"
    if found == {"fails"}:
        return "not_reproduced"
    return "partly" if "holds" in found else "inconclusive"


class ClaimRecord(BaseModel):
    """The schema of ``reports/<paper>/claim.json``, read by the claims ledger."""

    model_config = ConfigDict(extra="forbid")
    paper: str
    title: str
    claim: str
    paper_result: str
    measured: dict[str, str]
    verdict: Verdict
    verdict_rule: str
    checks: list[CheckOutcome]
    profile: str
    seeds: list[int]
    wall_time_s: float = Field(ge=0)
