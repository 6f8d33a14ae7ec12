"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import numpy as np
import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.ssg import config
from tests.conftest import write_params

PAPER = "ssg"


def test_data_has_three_disjoint_splits_of_the_configured_size(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    index = read_parquet(paths.index)
    assert index.split.value_counts().to_dict() == {"train": cfg.n_train, "val": cfg.n_val, "test": cfg.n_test}
    assert np.load(paths.images).shape == (cfg.n_train + cfg.n_val + cfg.n_test, cfg.image_size, cfg.image_size)


def test_tokenizer_codes_every_image_at_every_scale(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-tokenizer")
    d, k = smoke_repo.config(f"{PAPER}-data"), smoke_repo.config(f"{PAPER}-tokenizer").tokenizer
    tokens = read_parquet(paths.tokens)
    seq_len = sum(s * s for s in k.scales)
    assert len(tokens) == (d.n_train + d.n_val + d.n_test) * seq_len
    assert tokens.code.between(0, k.codebook_size - 1).all()
    rec = read_json(paths.tokenizer_metrics)["reconstruction"]
    assert 0 < rec["test"]["mse"] < 1 and len(rec["test"]["codes_used_per_scale"]) == len(k.scales)


def test_train_writes_one_model_per_seed(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    names = {p.name for p in paths.var.iterdir()}
    assert names == {"manifest.json"} | {f"var_s{s}.safetensors" for s in range(cfg.n_seeds)}
    manifest = read_json(paths.var / "manifest.json")
    assert [s["steps"] for s in manifest["seeds"]] == [cfg.trainer.max_steps] * cfg.n_seeds


def test_evaluate_scores_the_validation_grid_and_every_test_arm(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    ec = smoke_repo.config(f"{PAPER}-evaluate")
    cfg, n_seeds = ec.evaluate, ec.n_seeds
    results = read_parquet(paths.results)
    val = results[results.split == "val"]
    n_grid = 1 + len(cfg.priors) * sum(b > 0 for b in cfg.beta_grid) + sum(t != 1 for t in cfg.temperature_grid)
    assert len(val) == n_grid * n_seeds
    test = results[results.split == "test"]
    assert len(test) == (2 + len(cfg.priors) + 1) * n_seeds + 1  # arms, marginal per seed, one reconstruction
    assert (results.fd >= 0).all() and results.precision.between(0, 1).all()
    ev = read_json(paths.evaluation)
    for seed in ev["seeds"]:
        chosen = seed["chosen"]
        assert all(chosen[f"ssg_{p}"]["beta"] in cfg.beta_grid for p in cfg.priors)
        assert chosen["temperature"]["temperature"] in cfg.temperature_grid
        # SSG adds no transformer call
        assert seed["cost"]["ssg_dse"]["transformer_calls"] == seed["cost"]["none"]["transformer_calls"]
    assert np.load(paths.samples).shape[:2] == (len(ev["grid_rows"]), cfg.grid_samples)


def test_report_writes_claim_metrics_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"fd_by_arm.png", "validation_grid.png",
                                                       "high_frequency_share.png", "samples.png",
                                                       "training_loss.png"}
    metrics = read_json(paths.metrics)
    assert set(metrics["per_seed"]) <= set(config.METRICS)
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "## Sizing history" in text
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    assert f"{ev['n_test_samples']:,} samples" in text  # counts in the prose come from the run


def test_corrupt_tokens_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-tokenizer").tokens)
    bad.loc[3, "code"] = 9999
    write_parquet(bad, tmp_path / "tokens.parquet")
    with pytest.raises(DataValidationError, match=r"ssg\.tokens.*column 'code'"):
        smoke_repo.run(f"{PAPER}-train", tokens=tmp_path / "tokens.parquet", var=tmp_path / "var",
                       train_log=tmp_path / "log.parquet")
    assert not (tmp_path / "var").exists() and not (tmp_path / "log.parquet").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, "default", **{"ssg.tokenizer.scales": [1, 2, 3]})
    with pytest.raises(ConfigError, match=r"ssg\.tokenizer\.scales"):
        config.load_tokenizer(params)
    params = write_params(tmp_path, "default", **{"ssg.evaluate.beta_grid": [0.5, 1.0]})
    with pytest.raises(ConfigError, match=r"ssg\.evaluate"):
        config.load_evaluate(params)
    params = write_params(tmp_path, "default", **{"ssg.evaluate.priors": ["bilinear"]})
    with pytest.raises(ConfigError, match=r"ssg\.evaluate"):
        config.load_evaluate(params)
    params = write_params(tmp_path, "default", **{"ssg.report.gates": ["no such check"]})
    with pytest.raises(ConfigError, match=r"ssg\.report\.gates"):
        config.load_report(params)
