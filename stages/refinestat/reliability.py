"""A program's reliability: how many of seven diagnostic checks its posterior passes (RefineStat §3.2).

R-hat < 1.05, bulk ESS >= 400, tail ESS >= 100, no divergent transitions, BFMI > 0.3 on every chain,
the largest PSIS Pareto k < 0.7, and a finite ELPD-LOO. A program is reliable when at least
``min_passing`` (5 in the paper) pass; a check whose diagnostic is missing or not finite fails.
"""

from __future__ import annotations

import math
from typing import Any

CHECKS = ("rhat", "ess_bulk", "ess_tail", "divergences", "bfmi", "pareto_k", "elpd_finite")


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def reliability_checks(diag: dict[str, Any], th: Any) -> dict[str, bool]:
    """Each of the seven checks (§3.2) on a run's diagnostics, with the thresholds of ``th``."""
    def below(key: str, limit: float) -> bool:
        return _finite(diag.get(key)) and diag[key] < limit

    def at_least(key: str, limit: float) -> bool:
        return _finite(diag.get(key)) and diag[key] >= limit

    return {"rhat": below("rhat_max", th.rhat_max),
            "ess_bulk": at_least("ess_bulk_min", th.ess_bulk_min),
            "ess_tail": at_least("ess_tail_min", th.ess_tail_min),
            "divergences": _finite(diag.get("divergences")) and diag["divergences"] == 0,
            "bfmi": _finite(diag.get("bfmi_min")) and diag["bfmi_min"] > th.bfmi_min,
            "pareto_k": below("pareto_k_max", th.pareto_k_max),
            "elpd_finite": _finite(diag.get("elpd_loo"))}


def reliability_score(diag: dict[str, Any], th: Any) -> int:
    """The number of checks passed, 0..7 (§3.2)."""
    return sum(reliability_checks(diag, th).values())
