"""Smoke tests of the real steps at the smoke profile (called as plain functions)."""

from pathlib import Path

import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.espo import config, data, evaluate, report, rl, warmstart

PAPER = "espo"


def _run_all(tmp: Path, params: Path) -> dict[str, Path]:
    d, r, m = tmp / "data", tmp / "reports", tmp / "models"
    tables = {"sudoku": d / "sudoku.parquet", "countdown": d / "countdown.parquet"}
    run_stage(PAPER, "data", data.run, config.load_data(params), data.Paths(**tables), params,
              r / "timings" / "data.json")
    wp = warmstart.Paths(**tables, models=m / "warmstart", train_log=d / "warmstart_log.parquet")
    run_stage(PAPER, "warmstart", warmstart.run, config.load_warmstart(params), wp, params,
              r / "timings" / "warmstart.json")
    rp = rl.Paths(**tables, warmstart=wp.models, models=m / "rl", rl_log=d / "rl_log.parquet")
    run_stage(PAPER, "rl", rl.run, config.load_rl(params), rp, params, r / "timings" / "rl.json")
    ep = evaluate.Paths(**tables, warmstart=wp.models, rl_models=rp.models, rl_log=rp.rl_log,
                        evaluation=d / "evaluation.json")
    run_stage(PAPER, "evaluate", evaluate.run, config.load_evaluate(params), ep, params,
              r / "timings" / "evaluate.json")
    pp = report.Paths(evaluation=ep.evaluation, rl_log=rp.rl_log, warmstart_log=wp.train_log, warmstart=wp.models,
                      timings=r / "timings", report=r / "report.md", metrics=r / "metrics.json",
                      claim=r / "claim.json", plots=r / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), pp, params, r / "timings" / "report.json")
    return {**tables, "warmstart": wp.models, "rl_models": rp.models, "rl_log": rp.rl_log,
            "evaluation": ep.evaluation, "report": pp.report, "metrics": pp.metrics, "claim": pp.claim,
            "plots": pp.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("espo_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params)


def test_data_splits_and_sizes(smoke_run):
    params, out = smoke_run
    cfg = config.load_data(params)
    sud = read_parquet(out["sudoku"])
    n_train_grids = round(288 * cfg.sudoku.train_fraction)
    assert (sud.split == "train").sum() == n_train_grids * cfg.sudoku.puzzles_per_train_grid
    cd = read_parquet(out["countdown"])
    assert (cd.split == "test").sum() == cfg.countdown.n_test


def test_warmstart_saves_one_model_per_task_with_its_choice(smoke_run):
    params, out = smoke_run
    cfg = config.load_warmstart(params)
    manifest = read_json(out["warmstart"] / "manifest.json")
    assert set(manifest["tasks"]) == set(cfg.tasks)
    for task in cfg.tasks:
        assert (out["warmstart"] / f"{task}.safetensors").is_file()
        steps = [c["step"] for c in manifest["tasks"][task]["val_curve"]]
        assert manifest["tasks"][task]["chosen_step"] in steps


def test_rl_runs_every_grid_entry_for_every_iteration(smoke_run):
    params, out = smoke_run
    cfg = config.load_rl(params)
    log = read_parquet(out["rl_log"])
    expected = {rl.run_name(e.task, v, s) for e in cfg.grid for v in e.variants for s in range(e.n_seeds)}
    assert set(log.run) == expected
    assert log.groupby("run").iteration.max().eq(cfg.iterations).all()
    assert {p.stem for p in out["rl_models"].glob("*.safetensors")} == expected
    assert log.reward.between(0, 1).all()


def test_evaluation_has_paired_per_seed_metrics(smoke_run):
    params, out = smoke_run
    ev = read_json(out["evaluation"])
    n_seeds = next(e.n_seeds for e in config.load_rl(params).grid if "espo" in e.variants and e.task == "sudoku")
    for key in ("sudoku_espo_minus_d1_success", "sudoku_espo_minus_token_elbo_success",
                "sudoku_espo_minus_warmstart_success", "sudoku_k2_minus_best_k1_k3_success"):
        assert len(ev["per_seed"][key]) == n_seeds
    for r in ev["runs"]:   # success (reward = 1) can never exceed the mean reward
        assert 0 <= r["test_success"] <= r["test_reward"] <= 1
        assert 0 <= r["test_sampled_success"] <= r["test_sampled_reward"] <= 1


def test_report_writes_claim_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    names = {p.name for p in out["plots"].iterdir()}
    assert {"test_success.png", "reward_sudoku_main.png", "reward_sudoku_ablations.png", "warmstart_val.png"} <= names
    assert f"**Verdict: {claim.verdict}**" in out["report"].read_text()


def test_steps_are_deterministic(smoke_run, tmp_path):
    params, out = smoke_run
    assert read_json(_run_all(tmp_path, params)["metrics"]) == read_json(out["metrics"])


def test_corrupt_sudoku_fails_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    bad = read_parquet(out["sudoku"])
    bad.loc[3, "puzzle"] = "5" * 16
    write_parquet(bad, tmp_path / "sudoku.parquet")
    wp = warmstart.Paths(sudoku=tmp_path / "sudoku.parquet", countdown=out["countdown"], models=tmp_path / "ws",
                         train_log=tmp_path / "log.parquet")
    with pytest.raises(DataValidationError, match=r"espo\.sudoku.*column 'puzzle'"):
        run_stage(PAPER, "warmstart", warmstart.run, config.load_warmstart(params), wp, params, None)
    assert not (tmp_path / "ws").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from stages.core.config import ConfigError
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"espo.rl.clip_eps": 1.5})
    with pytest.raises(ConfigError, match=r"espo\.rl\.clip_eps"):
        config.load_rl(params)
    params = write_params(tmp_path, **{"espo.rl.grid": [{"task": "sudoku", "variants": ["nope"], "n_seeds": 1}]})
    with pytest.raises(ConfigError, match="nope"):
        config.load_rl(params)
