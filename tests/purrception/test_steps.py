"""Smoke tests of the real steps at the smoke profile (sklearn digits; called as plain functions)."""

from pathlib import Path

import numpy as np
import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.purrception import classifier, config, data, evaluate, report, tokenizer, train
from tests.conftest import write_params

PAPER = "purrception"

def _run_all(tmp: Path, params: Path, digits: Path) -> dict[str, Path]:
    d, m, r = tmp / "data", tmp / "models", tmp / "reports"
    t = r / "timings"
    dp = data.Paths(asset=digits, images=d / "images.npy", index=d / "images.parquet")
    run_stage(PAPER, "data", data.run, config.load_data(params), dp, params, t / "data.json")
    kp = tokenizer.Paths(images=dp.images, index=dp.index, tokenizer=m / "tokenizer", codes=d / "codes.parquet",
                         tokenizer_metrics=d / "tokenizer.json")
    run_stage(PAPER, "tokenizer", tokenizer.run, config.load_tokenizer(params), kp, params, t / "tokenizer.json")
    cp = classifier.Paths(images=dp.images, index=dp.index, classifier=m / "classifier",
                          classifier_metrics=d / "classifier.json")
    run_stage(PAPER, "classifier", classifier.run, config.load_classifier(params), cp, params, t / "classifier.json")
    tp = train.Paths(tokenizer=kp.tokenizer, codes=kp.codes, generators=m / "generators",
                     train_log=d / "train_log.parquet")
    run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, t / "train.json")
    ep = evaluate.Paths(images=dp.images, index=dp.index, tokenizer=kp.tokenizer, classifier=cp.classifier,
                        generators=tp.generators, evaluation=d / "evaluation.json", fid_curves=d / "fid.parquet",
                        samples=d / "samples.npy")
    run_stage(PAPER, "evaluate", evaluate.run, config.load_evaluate(params), ep, params, t / "evaluate.json")
    rp = report.Paths(evaluation=ep.evaluation, fid_curves=ep.fid_curves, samples=ep.samples,
                      train_log=tp.train_log, tokenizer_metrics=kp.tokenizer_metrics,
                      classifier_metrics=cp.classifier_metrics, timings=t, report=r / "report.md",
                      metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), rp, params, t / "report.json")
    return {"images": dp.images, "index": dp.index, "codes": kp.codes, "tokenizer": kp.tokenizer,
            "tokenizer_metrics": kp.tokenizer_metrics, "generators": tp.generators, "train_log": tp.train_log,
            "fid_curves": ep.fid_curves, "evaluation": ep.evaluation, "samples": ep.samples,
            "report": rp.report, "metrics": rp.metrics, "claim": rp.claim, "plots": rp.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, digits_asset):
    tmp = tmp_path_factory.mktemp("purrception_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params, digits_asset)


def test_data_has_the_configured_subsets_and_size(smoke_run):
    params, out = smoke_run
    cfg = config.load_data(params)
    index = read_parquet(out["index"])
    assert (index.split == "train").sum() == cfg.n_train and (index.split == "test").sum() == cfg.n_test
    assert np.load(out["images"]).shape == (cfg.n_train + cfg.n_test, cfg.image_size, cfg.image_size)


def test_tokenizer_codes_every_image_on_the_latent_grid(smoke_run):
    params, out = smoke_run
    d, k = config.load_data(params), config.load_tokenizer(params)
    codes = read_parquet(out["codes"])
    grid = d.image_size // 4
    assert len(codes) == (d.n_train + d.n_test) * grid * grid
    assert codes.code.between(0, k.codebook_size - 1).all()
    rec = read_json(out["tokenizer_metrics"])["reconstruction"]
    assert 0 < rec["test"]["mse"] < 1 and rec["train"]["codes_used"] >= 1


def test_train_keeps_every_checkpoint_of_every_method_and_seed(smoke_run):
    params, out = smoke_run
    cfg = config.load_train(params)
    names = {p.name for p in out["generators"].iterdir()}
    assert names == {"manifest.json"} | {f"{m}_s{s}_step{c}.safetensors" for m in cfg.methods
                                         for s in range(cfg.n_seeds) for c in cfg.checkpoints}
    log = read_parquet(out["train_log"])
    assert log.groupby(["method", "seed_index"]).step.max().eq(cfg.trainer.max_steps).all()


def test_evaluate_scores_every_checkpoint_and_the_temperatures(smoke_run):
    params, out = smoke_run
    tc, ec = config.load_train(params), config.load_evaluate(params).evaluate
    curves = read_parquet(out["fid_curves"])
    tau1 = curves[curves.temperature == 1.0]
    assert len(tau1) == len(tc.methods) * tc.n_seeds * len(tc.checkpoints)
    others = curves[curves.temperature != 1.0]
    assert set(others.method) == {"purrception"} and len(others) == tc.n_seeds * (len(ec.temperatures) - 1)
    assert (curves.fid >= 0).all() and curves.precision.between(0, 1).all()
    assert np.load(out["samples"]).shape[:2] == (2 + len(tc.methods), ec.grid_samples)


def test_report_writes_claim_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in out["plots"].iterdir()} == {"fid_vs_steps.png", "temperature.png", "samples.png",
                                                        "training_loss.png"}
    assert f"**Verdict: {claim.verdict}**" in out["report"].read_text()
    assert set(read_json(out["metrics"])["per_seed"]) == {"steps_saved_vs_continuous", "steps_saved_vs_discrete",
                                                          "final_fid_ratio"}


def test_steps_are_deterministic(smoke_run, tmp_path, digits_asset):
    params, out = smoke_run
    assert read_json(_run_all(tmp_path, params, digits_asset)["metrics"]) == read_json(out["metrics"])


def test_corrupt_codes_fail_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    bad = read_parquet(out["codes"])
    bad.loc[3, "code"] = 9999
    write_parquet(bad, tmp_path / "codes.parquet")
    tp = train.Paths(tokenizer=out["tokenizer"], codes=tmp_path / "codes.parquet", generators=tmp_path / "gen",
                     train_log=tmp_path / "log.parquet")
    with pytest.raises(DataValidationError, match=r"purrception\.codes.*column 'code'"):
        run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, None)
    assert not (tmp_path / "gen").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"purrception.train.checkpoints": [3, 2]})
    with pytest.raises(ConfigError, match=r"purrception\.train.*checkpoints"):
        config.load_train(params)
    params = write_params(tmp_path, **{"purrception.evaluate.temperatures": [0.5, -1.0, 1.0]})
    with pytest.raises(ConfigError, match=r"purrception\.evaluate"):
        config.load_evaluate(params)
