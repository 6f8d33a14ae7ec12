"""The verdict with positive controls: a claim check counts only when the gates it needs hold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from stages.core.verdict import CheckOutcome, Verdict, VerdictRule, decide


def gated_decide(rule: VerdictRule, per_seed: Mapping[str, Sequence[float | None]],
                 gates: Mapping[str, Sequence[str]]) -> tuple[Verdict, list[CheckOutcome]]:
    """Claim checks (metrics in ``gates``) become unclear unless every gate metric they need holds.

    The verdict is decided on the claim checks alone: all hold -> reproduced, all fail -> not_reproduced,
    some hold -> partly, otherwise inconclusive. The gate checks are reported with their own status.
    """
    _, outcomes = decide(rule, per_seed)
    metric_of = {c.name: c.metric for c in rule.checks}
    status_of = {metric_of[o.name]: o.status for o in outcomes}
    unknown = {g for needed in gates.values() for g in needed} - set(status_of)
    if unknown or not set(gates) <= set(status_of):
        raise KeyError(f"gates name metrics the verdict block lacks: {sorted(unknown | (set(gates) - set(status_of)))}")
    gated, claims = [], []
    for o in outcomes:
        metric = metric_of[o.name]
        if metric in gates:
            if any(status_of[g] != "holds" for g in gates[metric]):
                o = o.model_copy(update={"status": "unclear"})
            claims.append(o.status)
        gated.append(o)
    statuses = set(claims)
    if statuses == {"holds"}:
        verdict: Verdict = "reproduced"
    elif statuses == {"fails"}:
        verdict = "not_reproduced"
    elif "holds" in statuses:
        verdict = "partly"
    else:
        verdict = "inconclusive"
    return verdict, gated
