"""Smoke tests of the real steps at the smoke profile (called as plain functions)."""

from pathlib import Path

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.text2grad import config, data, ppo, report, reward_model, sft

PAPER = "text2grad"


def _run_all(tmp: Path, params: Path) -> dict[str, Path]:
    d, r, m = tmp / "data", tmp / "reports", tmp / "models"
    tables = {"sources": d / "sources.parquet", "outputs": d / "outputs.parquet", "tokenizer": d / "tokenizer.json"}
    run_stage(PAPER, "data", data.run, config.load_data(params), data.Paths(**tables), params,
              r / "timings" / "data.json")
    rp = reward_model.Paths(**tables, models=m / "reward_models", evaluation=d / "rm_evaluation.json",
                            examples=d / "rm_examples.parquet")
    run_stage(PAPER, "reward_model", reward_model.run, config.load_reward_model(params), rp, params,
              r / "timings" / "reward_model.json")
    sp = sft.Paths(**tables, models=m / "sft")
    run_stage(PAPER, "sft", sft.run, config.load_sft(params), sp, params, r / "timings" / "sft.json")
    pp = ppo.Paths(**tables, sft=sp.models, reward_models=rp.models, curves=d / "curves.parquet")
    run_stage(PAPER, "ppo", ppo.run, config.load_ppo(params), pp, params, r / "timings" / "ppo.json")
    op = report.Paths(curves=pp.curves, rm_evaluation=rp.evaluation, rm_examples=rp.examples, timings=r / "timings",
                      report=r / "report.md", metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), op, params, r / "timings" / "report.json")
    return {**tables, "rm": rp.models, "rm_evaluation": rp.evaluation, "sft": sp.models, "curves": pp.curves,
            "report": op.report, "metrics": op.metrics, "claim": op.claim, "plots": op.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("text2grad_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params)


def test_data_tables_have_the_configured_sizes_and_valid_annotations(smoke_run):
    params, out = smoke_run
    cfg = config.load_data(params)
    outputs = read_parquet(out["outputs"])
    assert (outputs.split == "sft").sum() == cfg.n_sft and (outputs.split == "rm_test").sum() == cfg.n_rm_test
    assert (outputs.n_words == outputs.output.str.split().str.len().fillna(0)).all()
    assert len(read_parquet(out["sources"])) == cfg.n_ppo + cfg.n_test


def test_reward_models_are_trained_and_scored(smoke_run):
    _, out = smoke_run
    assert {p.name for p in out["rm"].iterdir()} == {"critique.safetensors", "no_critique.safetensors",
                                                     "manifest.json"}
    ev = read_json(out["rm_evaluation"])
    for name in ("critique", "no_critique"):
        assert 0 <= ev[name]["good"]["f1"] <= 1 and 0 <= ev[name]["poor"]["f1"] <= 1


def test_ppo_writes_a_curve_for_every_scheme_and_seed(smoke_run):
    params, out = smoke_run
    cfg = config.load_ppo(params)
    curves = read_parquet(out["curves"])
    assert set(curves.scheme) == set(cfg.schemes) and set(curves.seed) == set(range(cfg.n_seeds))
    assert sorted(curves.step.unique()) == list(range(cfg.steps + 1))
    # every scheme starts from the same warm start and the same evaluation samples
    start = curves[curves.step == 0].groupby("seed").rouge_l.nunique()
    assert (start == 1).all()


def test_report_writes_claim_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in out["plots"].iterdir()} == {"rouge_l.png", "fact_f1.png", "kl.png", "span_f1.png"}
    assert f"**Verdict: {claim.verdict}**" in out["report"].read_text()


def test_steps_are_deterministic(smoke_run, tmp_path):
    params, out = smoke_run
    assert read_json(_run_all(tmp_path, params)["metrics"]) == read_json(out["metrics"])


def test_corrupt_outputs_fail_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    bad = read_parquet(out["outputs"])
    bad.loc[2, "word_scores"] = "1 2 0"
    write_parquet(bad, tmp_path / "outputs.parquet")
    sp = sft.Paths(sources=out["sources"], outputs=tmp_path / "outputs.parquet", tokenizer=out["tokenizer"],
                   models=tmp_path / "sft")
    with pytest.raises(DataValidationError, match=r"text2grad\.outputs.*column 'word_scores'"):
        run_stage(PAPER, "sft", sft.run, config.load_sft(params), sp, params, None)
    assert not (tmp_path / "sft").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"text2grad.ppo.lam": 1.5})
    with pytest.raises(ConfigError, match=r"text2grad\.ppo\.lam"):
        config.load_ppo(params)
    params = write_params(tmp_path, **{"text2grad.ppo.schemes": ["text2grad", "magic"]})
    with pytest.raises(ConfigError, match=r"text2grad\.ppo\.schemes"):
        config.load_ppo(params)
