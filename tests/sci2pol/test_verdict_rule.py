"""The paper's verdict rule (from params.yaml) on made-up metrics, and config validation."""

from pathlib import Path

import pytest

from stages.core.config import ConfigError
from stages.core.verdict import decide
from stages.sci2pol.config import load_data, load_funnel, load_verdict
from tests.conftest import write_params

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"rho_lm_minus_rouge": [0.2, 0.3], "rho_lm_minus_bertscore": [0.1, 0.2],
        "overall_curated_minus_unfiltered": [1.0, 2.0], "overall_unfiltered_minus_none": [0.5, 1.0]}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"overall_curated_minus_unfiltered": [-1.0, -2.0]}, "partly"),
    ({k: [-0.5, -0.5] for k in GOOD}, "not_reproduced"),
    ({k: [0.3, -0.5] for k in GOOD}, "inconclusive"),
    ({k: v[:1] for k, v in GOOD.items()}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    assert decide(load_verdict(ROOT / "params.yaml"), {**GOOD, **edits})[0] == expected


def test_config_refuses_bad_values_with_dotted_key(tmp_path):
    with pytest.raises(ConfigError, match=r"sci2pol\.data"):
        load_data(write_params(tmp_path, **{"sci2pol.data.p_bad": 1.5}))
    with pytest.raises(ConfigError, match=r"sci2pol\.funnel"):
        load_funnel(write_params(tmp_path, **{"sci2pol.funnel.surprise": 1}))
    with pytest.raises(ConfigError, match="min_sim"):
        load_funnel(write_params(tmp_path, **{"sci2pol.funnel.min_sim": 0.99}))
    assert load_data(write_params(tmp_path)).n_documents == 30
