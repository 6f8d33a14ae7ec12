"""Verdicts computed from measured numbers by a rule fixed in params.yaml beforehand.

A rule is a list of checks, one per claim: a metric measured once per seed, a
direction and a threshold. A check *holds* when every seed satisfies it, *fails* when
every seed violates it, and is *unclear* when seeds disagree or there are fewer seeds
than the rule asks for. The paper's verdict follows from the checks:
all hold -> reproduced; all fail -> not_reproduced; some hold -> partly;
none holds and some are unclear -> inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

VERDICTS = ("reproduced", "partly", "not_reproduced", "inconclusive")
Verdict = Literal["reproduced", "partly", "not_reproduced", "inconclusive"]


class Check(BaseModel):
    """One claim: ``metric <op> threshold`` must hold on every seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    op: Literal["<=", ">="]
    threshold: float

    def passes(self, value: float) -> bool:
        """Whether one measured value satisfies the check (NaN never does)."""
        if not math.isfinite(value):
            return False
        return value <= self.threshold if self.op == "<=" else value >= self.threshold

    def describe(self) -> str:
        """The check in words."""
        return f"{self.name}: {self.metric} {self.op} {self.threshold:g}"


class VerdictRule(BaseModel):
    """The verdict block of a paper's params section."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    checks: list[Check] = Field(min_length=1)
    min_seeds: int = Field(ge=1)

    @model_validator(mode="after")
    def _unique_names(self) -> VerdictRule:
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"check names must be unique, got {names}")
        return self

    def describe(self) -> str:
        """The whole rule in words, for report.md and claim.json."""
        checks = "; ".join(c.describe() for c in self.checks)
        return (f"each check must hold on every one of at least {self.min_seeds} seeds "
                f"[{checks}]; all hold -> reproduced, all fail on every seed -> not_reproduced, "
                f"some hold -> partly, otherwise (seeds disagree or too few) -> inconclusive")


class CheckOutcome(BaseModel):
    """What one check found."""

    name: str
    status: Literal["holds", "fails", "unclear"]
    values: list[float | None]
    description: str


def check_status(check: Check, values: Sequence[float], min_seeds: int) -> str:
    """Status of one check over per-seed values."""
    if len(values) < min_seeds:
        return "unclear"
    passed = [check.passes(v) for v in values]
    if all(passed):
        return "holds"
    if not any(passed):
        return "fails"
    return "unclear"


def decide(rule: VerdictRule, measured: Mapping[str, Sequence[float]]) -> tuple[Verdict, list[CheckOutcome]]:
    """Apply the rule to per-seed metric values; a missing metric is an error, not a pass."""
    outcomes = []
    for check in rule.checks:
        if check.metric not in measured:
            raise KeyError(f"verdict check '{check.name}' needs metric '{check.metric}', "
                           f"measured only {sorted(measured)}")
        values = [float(v) for v in measured[check.metric]]
        status = check_status(check, values, rule.min_seeds)
        outcomes.append(CheckOutcome(name=check.name, status=status, description=check.describe(),
                                     values=[v if math.isfinite(v) else None for v in values]))
    statuses = {o.status for o in outcomes}
    if statuses == {"holds"}:
        verdict: Verdict = "reproduced"
    elif statuses == {"fails"}:
        verdict = "not_reproduced"
    elif "holds" in statuses:
        verdict = "partly"
    else:
        verdict = "inconclusive"
    return verdict, outcomes


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
