"""The paper's verdict rule (params/sci2pol.yaml) on made-up metrics, the judge gate, and config validation."""

from pathlib import Path

import pytest

from stages.core.config import ConfigError
from stages.core.report import decide_claim
from stages.sci2pol.config import load_data, load_finetune, load_funnel, load_judge, load_report, load_verdict
from stages.sci2pol.report import CARD, gate_checks
from tests.conftest import write_params

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"auc_lm_gold_vs_off_topic": [0.9, 0.95, 0.85], "rho_lm_minus_rouge": [0.2, 0.3, 0.1],
        "rho_lm_minus_bertscore": [0.1, 0.2, 0.1], "overall_curated_minus_unfiltered": [1.5, 2.0, 3.0],
        "overall_curated_minus_none": [2.0, 4.0, 1.5], "overall_curated_minus_unfiltered_lo": [0.5, 0.3, 1.0],
        "overall_curated_minus_none_lo": [1.0, 2.0, 0.2]}
JUDGE = ("rho_lm_minus_rouge", "rho_lm_minus_bertscore")
FINETUNE = ("overall_curated_minus_unfiltered", "overall_curated_minus_none", "overall_curated_minus_unfiltered_lo",
            "overall_curated_minus_none_lo")


def _verdict(per_seed):
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=[0, 1, 2], profile="default", timings={})
    return gate_checks(claim, cfg.report.gate, cfg.report.gated)


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"overall_curated_minus_unfiltered": [-1.0, -2.0, -0.5]}, "partly"),
    ({k: [-0.5] * 3 for k in (*JUDGE, *FINETUNE)}, "not_reproduced"),
    ({k: [0.3, -0.5, 0.3] for k in (*JUDGE, *FINETUNE)}, "inconclusive"),
    ({k: v[:2] for k, v in GOOD.items()}, "inconclusive"),  # fewer seeds than the rule asks for
    # a constant shift of 0 (adapters that learn nothing) does not pass the 1-point margin
    ({k: [0.0] * 3 for k in FINETUNE}, "partly"),
    # a margin that the choice of items explains: the point difference passes, its bootstrap bound does not
    ({"overall_curated_minus_unfiltered_lo": [-1.5, -0.8, -2.0]}, "partly"),
])
def test_rule_gives_each_verdict(edits, expected):
    assert _verdict({**GOOD, **edits}).verdict == expected


def test_a_judge_below_the_gate_leaves_its_checks_inconclusive_with_their_numbers():
    claim = _verdict({**GOOD, "auc_lm_gold_vs_off_topic": [0.55, 0.5, 0.6]})
    status = {o.name: o.status for o in claim.checks}
    assert status["LM judge beats ROUGE-L"] == status["LM judge beats BERTScore"] == "unclear"
    assert status["LM judge separates gold from off-topic briefs"] == "fails"
    assert claim.verdict == "partly"  # the fine-tuning checks still decide, the judge checks are unclear
    assert [o.values for o in claim.checks if o.name == "LM judge beats ROUGE-L"] == [[0.2, 0.3, 0.1]]
    failing = _verdict({**GOOD, "auc_lm_gold_vs_off_topic": [0.5] * 3,
                        **{k: [-2.0] * 3 for k in FINETUNE}})
    assert failing.verdict == "inconclusive"  # untested judge checks: the failed fine-tuning checks alone do not decide


def test_config_refuses_bad_values_with_dotted_key(tmp_path):
    with pytest.raises(ConfigError, match=r"sci2pol\.data"):
        load_data(write_params(tmp_path, **{"sci2pol.data.p_bad": 1.5}))
    with pytest.raises(ConfigError, match=r"sci2pol\.funnel"):
        load_funnel(write_params(tmp_path, **{"sci2pol.funnel.surprise": 1}))
    with pytest.raises(ConfigError, match="min_sim"):
        load_funnel(write_params(tmp_path, **{"sci2pol.funnel.min_sim": 0.99}))
    with pytest.raises(ConfigError, match="lr_grid"):
        load_finetune(write_params(tmp_path, **{"sci2pol.finetune.lr_grid": [0.001, 0.0001]}))
    with pytest.raises(ConfigError, match="backends"):
        load_judge(write_params(tmp_path, **{"sci2pol.judge.backends": ["gemma3", "gemma3"]}))
    with pytest.raises(ConfigError, match=r"sci2pol\.report"):
        load_report(write_params(tmp_path, **{"sci2pol.report.gate": "no such check"}))
    assert load_data(write_params(tmp_path)).n_documents == 30
    assert load_verdict(ROOT / "params.yaml").min_seeds == 3
