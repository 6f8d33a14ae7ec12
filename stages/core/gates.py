"""Gated verdicts: checks that are positive controls (gates), not claims, and the seeds a decision needs.

A paper's verdict block may hold gates (e.g. "the CLIP is well above chance"): if any gate does
not hold on every seed, no claim can be read, every claim check is reported as unclear and the
verdict is inconclusive; once every gate holds, the claim checks alone decide the verdict by the
usual rule. New papers call :func:`gated_verdict` on the record from
``stages.core.report.decide_claim`` instead of writing the rule again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from stages.core.config import ConfigError, Section, load_section
from stages.core.verdict import ClaimRecord, VerdictRule


class ReportGates(Section):
    """A paper's ``<paper>.report`` section: the names of the verdict checks that are gates."""

    gates: list[str] = Field(min_length=1)


def load_gated_rule(paper: str, params: Path) -> tuple[VerdictRule, list[str]]:
    """``<paper>.verdict`` and ``<paper>.report.gates``: every gate is a check, one check at least is a claim."""
    verdict = load_section(VerdictRule, f"{paper}.verdict", params)
    gates = load_section(ReportGates, f"{paper}.report", params).gates
    names = {c.name for c in verdict.checks}
    missing = [g for g in gates if g not in names]
    if missing:
        raise ConfigError(f"{paper}.report.gates: {missing} are not checks of {paper}.verdict")
    if set(gates) == names:
        raise ConfigError(f"{paper}.report.gates: at least one check of {paper}.verdict must be a claim, not a gate")
    return verdict, gates


def gated_verdict(claim: ClaimRecord, gates: list[str]) -> ClaimRecord:
    """The verdict from the claim checks only; every claim is unclear (inconclusive) unless every gate holds."""
    status = {o.name: o.status for o in claim.checks}
    unknown = [g for g in gates if g not in status]
    if unknown:
        raise KeyError(f"gates {unknown} are not checks of the verdict rule (checks: {sorted(status)})")
    open_ = all(status[g] == "holds" for g in gates)
    checks = [o if o.name in gates or open_ else o.model_copy(update={"status": "unclear"}) for o in claim.checks]
    claims = {o.status for o in checks if o.name not in gates}
    if not open_ or not claims:
        verdict = "inconclusive"
    elif claims == {"holds"}:
        verdict = "reproduced"
    elif claims == {"fails"}:
        verdict = "not_reproduced"
    else:
        verdict = "partly" if "holds" in claims else "inconclusive"
    rule = (f"{claim.verdict_rule}; {gates} are gates (positive controls), not claims: the verdict comes from the "
            f"other checks, which are all unclear (inconclusive) unless every gate holds")
    return claim.model_copy(update={"verdict": verdict, "checks": checks, "verdict_rule": rule})


def seeds_to_decide(claim: ClaimRecord, thresholds: dict[str, float]) -> list[dict[str, Any]]:
    """Per check: mean, sample std over seeds, and the seeds a 95% interval of the mean needs to exclude the
    threshold, ceil((1.96 · std / |mean − threshold|)²) (normal approximation)."""
    rows = []
    for o in claim.checks:
        v = np.array([x for x in o.values if x is not None], dtype=float)
        if len(v) < 2:
            continue
        mean, sd = float(v.mean()), float(v.std(ddof=1))
        gap = abs(mean - thresholds[o.name])
        need = "any" if sd == 0 else ("∞" if gap == 0 else str(max(2, int(np.ceil((1.96 * sd / gap) ** 2)))))
        rows.append({"check": o.name, "mean": f"{mean:.4f}", "std": f"{sd:.4f}",
                     "threshold": f"{thresholds[o.name]:g}", "seeds for a 95% interval": need})
    return rows
