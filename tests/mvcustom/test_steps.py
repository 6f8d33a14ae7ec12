"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import load_safetensors, read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.mvcustom import config
from stages.mvcustom.evaluate import ALL_ARMS
from tests.conftest import write_params

PAPER = "mvcustom"


def test_data_renders_every_role_with_depth(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    views, tensors = read_parquet(paths.views), load_safetensors(paths.renders)
    n_grid = 360 // cfg.azimuth_step * len(cfg.grid_elevations)
    per_subject = cfg.n_refs + cfg.n_targets + n_grid
    assert len(views) == cfg.n_pretrain_scenes * cfg.views_per_scene + (cfg.n_val_subjects + cfg.n_seeds) * per_subject
    assert tensors["images"].shape == (len(views), 3, cfg.image_size, cfg.image_size)
    assert float(tensors["depth"].min()) > 0
    for (_, _), g in views[views.split != "pretrain"].groupby(["split", "scene"]):
        refs = set(map(tuple, g[g.role == "ref"][["azimuth", "elevation"]].to_numpy()))
        targets = set(map(tuple, g[g.role == "target"][["azimuth", "elevation"]].to_numpy()))
        grid = set(map(tuple, g[g.role == "grid"][["azimuth", "elevation"]].to_numpy()))
        assert not refs & targets and targets <= grid              # targets are unseen poses of the grid


def test_evaluate_measures_every_arm_on_every_test_subject(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    cfg = smoke_repo.config(f"{PAPER}-evaluate")
    results, ev = read_parquet(paths.results), read_json(paths.evaluation)
    test = results[results.split == "test"]
    assert len(test) == cfg.data.n_seeds * len(ALL_ARMS)
    assert ev["window"] in cfg.evaluate.window_grid
    truth = test[test.arm == "ground_truth"]
    assert (truth.gt_mse == 0).all() and (truth.pose_accuracy == 1).all()
    shuffled = test[test.arm == "shuffled_truth"]
    assert (shuffled.reproj_error.to_numpy() > truth.reproj_error.to_numpy()).all()
    val = results[results.split == "val"]
    assert set(val.window) == {0.0, *cfg.evaluate.window_grid}


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"samples.png", "consistency_vs_fidelity.png",
                                                       "pretrain_loss.png"}
    assert f"**Verdict: {claim.verdict}**" in paths.report.read_text()
    assert set(read_json(paths.metrics)["per_seed"]) <= set(config.METRICS)


def test_corrupt_results_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-evaluate").results)
    bad.loc[0, "arm"] = "oracle"
    write_parquet(bad, tmp_path / "results.parquet")
    with pytest.raises(DataValidationError, match=r"mvcustom\.results.*column 'arm'"):
        smoke_repo.run(f"{PAPER}-report", results=tmp_path / "results.parquet", report=tmp_path / "r.md",
                       metrics=tmp_path / "m.json", claim=tmp_path / "c.json", plots=tmp_path / "plots")
    assert not (tmp_path / "r.md").exists() and not (tmp_path / "c.json").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"mvcustom.data.azimuth_step": 7})
    with pytest.raises(ConfigError, match=r"mvcustom\.data"):
        config.load_data(params)
    params = write_params(tmp_path, **{"mvcustom.evaluate.window_grid": [1.5]})
    with pytest.raises(ConfigError, match=r"mvcustom\.evaluate"):
        config.load_evaluate(params)
    params = write_params(tmp_path, profile="default", **{"mvcustom.evaluate.sampling_steps": 500})
    with pytest.raises(ConfigError, match=r"mvcustom\.evaluate"):
        config.load_evaluate(params)
    params = write_params(tmp_path, **{"mvcustom.pretrain.heads": 3})
    with pytest.raises(ConfigError, match=r"mvcustom\.pretrain"):
        config.load_pretrain(params)
