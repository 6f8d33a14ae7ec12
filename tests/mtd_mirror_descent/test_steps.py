"""Smoke tests of the real steps at the smoke profile (called as plain functions)."""

from pathlib import Path

import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.mtd_mirror_descent import config, data, evaluate, report, train

PAPER = "mtd_mirror_descent"


def _run_all(tmp: Path, params: Path) -> dict[str, Path]:
    d, r = tmp / "data", tmp / "reports"
    tables = {"pi": d / "pi.parquet", "sequences": d / "sequences.parquet", "tokens": d / "tokens.parquet"}
    run_stage(PAPER, "data", data.run, config.load_data(params), data.Paths(**tables), params,
              r / "timings" / "data.json")
    tp = train.Paths(**tables, models=tmp / "models", train_log=d / "train_log.parquet")
    run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, r / "timings" / "train.json")
    ep = evaluate.Paths(**tables, models=tmp / "models", evaluation=d / "evaluation.json")
    run_stage(PAPER, "evaluate", evaluate.run, config.load_evaluate(params), ep, params,
              r / "timings" / "evaluate.json")
    rp = report.Paths(evaluation=ep.evaluation, train_log=tp.train_log, timings=r / "timings", report=r / "report.md",
                      metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), rp, params, r / "timings" / "report.json")
    return {**tables, "models": tp.models, "train_log": tp.train_log, "evaluation": ep.evaluation,
            "report": rp.report, "metrics": rp.metrics, "claim": rp.claim, "plots": rp.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("mtd_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params)


def test_data_tables_have_the_configured_sizes(smoke_run):
    params, out = smoke_run
    cfg = config.load_data(params)
    seqs = read_parquet(out["sequences"])
    assert (seqs.split == "train").sum() == cfg.n_train and (seqs.split == "test").sum() == cfg.n_test
    assert len(read_parquet(out["tokens"])) == len(seqs) * cfg.seq_len


def test_train_writes_every_model_and_seed(smoke_run):
    params, out = smoke_run
    cfg = config.load_train(params)
    names = {p.name for p in out["models"].iterdir()}
    assert names == {"manifest.json"} | {f"{s.name}_s{i}.safetensors" for s in cfg.models for i in range(cfg.n_seeds)}
    log = read_parquet(out["train_log"])
    assert log.groupby(["model", "seed_index"]).step.max().eq(cfg.trainer.max_steps).all()


def test_evaluation_reports_every_metric_per_seed_and_an_exact_construction(smoke_run):
    _, out = smoke_run
    ev = read_json(out["evaluation"])
    assert set(ev["per_seed"]) == {"shallow_uniform_minus_md1_tv", "shallow_bayes_minus_md1_tv",
                                   "md2_tv_shallow_minus_deep", "shallow_layer1_tv_gain"}
    assert all(len(v) == 2 for v in ev["per_seed"].values())
    assert ev["construction_max_abs_error"] < 1e-6
    for t in ev["lengths"]:
        assert ev["kl"]["md1"][str(t)] < ev["kl"]["uniform"][str(t)] or t < 10


def test_report_writes_claim_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in out["plots"].iterdir()} == {"kl_vs_length.png", "training_loss.png",
                                                        "attention_vs_gamma.png"}
    assert f"**Verdict: {claim.verdict}**" in out["report"].read_text()


def test_steps_are_deterministic(smoke_run, tmp_path):
    params, out = smoke_run
    assert read_json(_run_all(tmp_path, params)["metrics"]) == read_json(out["metrics"])


def test_corrupt_tokens_fail_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    bad = read_parquet(out["tokens"])
    bad.loc[3, "token"] = 99
    write_parquet(bad, tmp_path / "tokens.parquet")
    tp = train.Paths(pi=out["pi"], sequences=out["sequences"], tokens=tmp_path / "tokens.parquet",
                     models=tmp_path / "models", train_log=tmp_path / "log.parquet")
    with pytest.raises(DataValidationError, match=r"mtd_mirror_descent\.tokens.*column 'token'"):
        run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, None)
    assert not (tmp_path / "models").exists()
