"""The paper's own verdict rule (params.yaml) with its positive controls, on made-up metrics."""

from pathlib import Path

import pytest

from stages.ndm.config import load_report
from stages.ndm.verdict import gated_decide

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"toy_oracle_ari": [1.0] * 3, "toy_ari_margin": [0.5] * 3, "lm_kept_min": [40.0] * 3,
        "lm_full_patch_fraction": [1.0] * 3, "lm_gini_margin": [0.2] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"lm_gini_margin": [-0.1] * 3}, "partly"),
    ({"toy_ari_margin": [-0.1] * 3, "lm_gini_margin": [-0.1] * 3}, "not_reproduced"),
    ({"toy_ari_margin": [0.5, -0.1, 0.5], "lm_gini_margin": [0.2, 0.2, -0.1]}, "inconclusive"),
    # a failed positive control makes its claim unclear, whatever the claim's numbers
    ({"toy_oracle_ari": [0.3] * 3, "lm_kept_min": [3.0] * 3}, "inconclusive"),
    ({"lm_full_patch_fraction": [0.1] * 3}, "partly"),
    ({"toy_oracle_ari": [0.3] * 3, "lm_gini_margin": [-0.1] * 3}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    cfg = load_report(ROOT / "params.yaml")
    assert gated_decide(cfg.verdict, {**GOOD, **edits}, cfg.report.gates)[0] == expected


def test_gated_claim_is_reported_unclear_and_gates_keep_their_status():
    cfg = load_report(ROOT / "params.yaml")
    _, outcomes = gated_decide(cfg.verdict, {**GOOD, "toy_oracle_ari": [0.3] * 3}, cfg.report.gates)
    status = {o.name: o.status for o in outcomes}
    assert status["toy ground truth is recoverable"] == "fails"
    assert status["toy ARI above every baseline"] == "unclear"


def test_a_gate_naming_an_unknown_metric_is_an_error():
    cfg = load_report(ROOT / "params.yaml")
    with pytest.raises(KeyError, match="nonexistent"):
        gated_decide(cfg.verdict, GOOD, {"lm_gini_margin": ["nonexistent"]})


@pytest.mark.parametrize("gates", [{"toy_ari_margin": ["toy_oracle_arl"]}, {"lm_gini_margn": ["lm_kept_min"]}])
def test_gates_naming_an_unchecked_metric_are_refused_when_the_params_load(tmp_path, gates):
    from stages.core.config import ConfigError
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"ndm.report.gates": gates})
    with pytest.raises(ConfigError, match=r"no check of ndm\.verdict reads"):
        load_report(params)
