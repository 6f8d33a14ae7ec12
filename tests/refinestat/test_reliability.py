"""The reliability score (RefineStat §3.2): each check by hand, and a known-good vs a mis-specified model."""

from pathlib import Path

import pytest

from stages.core.sandbox import Limits
from stages.refinestat.config import load_synthesize
from stages.refinestat.ppl_sandbox import ROOT, PplSandbox
from stages.refinestat.reliability import CHECKS, reliability_checks, reliability_score
from stages.refinestat.tasks import TASKS

TH = load_synthesize(ROOT / "params.yaml").reliability
GOOD = {"rhat_max": 1.01, "ess_bulk_min": 800, "ess_tail_min": 500, "divergences": 0, "bfmi_min": 0.9,
        "pareto_k_max": 0.3, "elpd_loo": -30.0}


def test_thresholds_are_the_papers():
    assert (TH.rhat_max, TH.ess_bulk_min, TH.ess_tail_min, TH.bfmi_min, TH.pareto_k_max, TH.min_passing) == \
        (1.05, 400, 100, 0.3, 0.7, 5)


def test_each_check_by_hand():
    assert reliability_score(GOOD, TH) == 7
    bad = {"rhat_max": 1.05, "ess_bulk_min": 399, "ess_tail_min": 99, "divergences": 1, "bfmi_min": 0.3,
           "pareto_k_max": 0.7, "elpd_loo": float("-inf")}
    assert reliability_checks(bad, TH) == dict.fromkeys(CHECKS, False)
    for key, check in zip(bad, CHECKS, strict=True):
        one = {**GOOD, key: bad[key]}
        assert reliability_checks(one, TH) == {c: c != check for c in CHECKS}
    assert reliability_score({**GOOD, "rhat_max": None}, TH) == 6      # a missing diagnostic fails its check
    assert reliability_score({**GOOD, "elpd_loo": float("nan")}, TH) == 6


@pytest.mark.slow
def test_known_good_scores_high_and_misspecified_low(tmp_path: Path):
    """Eight Schools: the non-centred expert model passes every check, the centred funnel fails some."""
    data = {"y": [28, 8, -3, 7, -1, 1, 18, 12], "sigma": [15, 10, 16, 11, 9, 11, 10, 18]}
    t = TASKS["eight_schools"]
    with PplSandbox(Limits(wall_s=300, memory_mb=3000), 900, ROOT / ".cache" / "pytensor") as sandbox:
        scores = {}
        for arm in ("expert", "misspecified"):
            result = sandbox.run({"program": list(getattr(t, arm)), "data": data, "heldout": None, "chains": 2,
                                  "draws": 500, "tune": 500, "target_accept": 0.9, "seed": 3})
            assert result["outcome"] == "ok", result
            scores[arm] = reliability_score(result, TH)
    assert scores["expert"] >= TH.min_passing
    assert scores["misspecified"] < scores["expert"]
