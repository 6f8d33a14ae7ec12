"""Smoke tests of the real steps at the smoke profile (called as plain functions)."""

from pathlib import Path

import pandas as pd
import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.denots import config, data, evaluate, report, train
from stages.denots.grid import RunSpec, run_grid

PAPER = "denots"


def _run_all(tmp: Path, params: Path, vowels: Path) -> dict[str, Path]:
    d, r = tmp / "data", tmp / "reports"
    dp = data.Paths(vowels_asset=vowels, datasets=d / "datasets")
    run_stage(PAPER, "data", data.run, config.load_data(params), dp, params, r / "timings" / "data.json")
    tp = train.Paths(datasets=dp.datasets, models=tmp / "models", runs=d / "runs.parquet",
                     train_log=d / "train_log.parquet")
    run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, r / "timings" / "train.json")
    ep = evaluate.Paths(datasets=dp.datasets, models=tp.models, runs=tp.runs, results=d / "results.parquet",
                        evaluation=d / "evaluation.json")
    run_stage(PAPER, "evaluate", evaluate.run, config.load_evaluate(params), ep, params,
              r / "timings" / "evaluate.json")
    rp = report.Paths(results=ep.results, evaluation=ep.evaluation, train_log=tp.train_log, timings=r / "timings",
                      report=r / "report.md", metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), rp, params, r / "timings" / "report.json")
    return {"datasets": dp.datasets, "models": tp.models, "runs": tp.runs, "train_log": tp.train_log,
            "results": ep.results, "evaluation": ep.evaluation, "report": rp.report, "metrics": rp.metrics,
            "claim": rp.claim, "plots": rp.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, japanese_vowels_asset):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("denots_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params, japanese_vowels_asset)


def test_data_tables_have_the_configured_sizes(smoke_run):
    params, out = smoke_run
    cfg = config.load_data(params)
    cases = read_parquet(out["datasets"] / "pendulum_cases.parquet")
    assert cases.groupby("split").size().to_dict() == {"train": cfg.pendulum.n_train, "val": cfg.pendulum.n_val,
                                                       "test": cfg.pendulum.n_test}
    assert cases.n_obs.between(cfg.pendulum.min_obs, cfg.pendulum.max_obs).all()
    vowels = read_parquet(out["datasets"] / "vowels_cases.parquet")
    assert (vowels.split == "train").sum() == cfg.vowels.max_train and (vowels.split == "test").sum() == 20
    assert set(vowels.target.unique()) <= set(range(9))


def test_train_records_every_run_and_saves_the_ones_that_finished(smoke_run):
    params, out = smoke_run
    runs = read_parquet(out["runs"])
    assert list(runs.run_id) == [s.run_id for s in run_grid(config.load_train(params))]
    saved = {p.stem for p in out["models"].iterdir()}
    assert saved == set(runs.run_id[~runs.diverged])


def test_evaluation_has_every_verdict_metric_per_seed(smoke_run):
    params, out = smoke_run
    ev = read_json(out["evaluation"])
    rule = config.load_report(params).verdict
    assert {c.metric for c in rule.checks} <= set(ev["per_seed"])
    assert all(len(v) == 2 for v in ev["per_seed"].values())
    res = read_parquet(out["results"])
    ode = res[(res.model == "denots") & ~res.diverged]
    assert (ode.test_nfe > 0).all()


def test_report_writes_claim_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in out["plots"].iterdir()} == {"score_vs_horizon.png", "score_vs_nfe.png",
                                                        "training_loss_long_horizon.png"}
    assert f"**Verdict: {claim.verdict}**" in out["report"].read_text()


def test_data_and_training_are_deterministic(smoke_run, tmp_path, japanese_vowels_asset):
    params, out = smoke_run
    dp = data.Paths(vowels_asset=japanese_vowels_asset, datasets=tmp_path / "datasets")
    run_stage(PAPER, "data", data.run, config.load_data(params), dp, params, None)
    for f in out["datasets"].iterdir():
        pd.testing.assert_frame_equal(read_parquet(f), read_parquet(dp.datasets / f.name))
    cfg = config.load_train(params)
    tasks = data.load_tasks(out["datasets"])
    spec = run_grid(cfg)[1]
    first, second = (train.train_run(spec, tasks[spec.dataset], cfg, 0).losses for _ in range(2))
    assert first == second and len(first) == cfg.trainer.max_steps


def test_a_run_that_hits_the_step_cap_is_recorded_as_diverged(smoke_run):
    params, out = smoke_run
    cfg = config.load_train(params)
    cfg = cfg.model_copy(update={"solver": cfg.solver.model_copy(update={"max_num_steps": 10})})
    tasks = data.load_tasks(out["datasets"])
    spec = RunSpec("pendulum", "denots", "no_feedback_gru", 5000.0, 1e-3, 1e-4, 0, "horizon")
    module = train.train_run(spec, tasks["pendulum"], cfg, 0)
    assert module.diverged.startswith("solver: max_num_steps exceeded") and module.losses == []


def test_corrupt_observations_fail_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    folder = tmp_path / "datasets"
    folder.mkdir()
    for f in out["datasets"].iterdir():
        write_parquet(read_parquet(f), folder / f.name)
    bad = read_parquet(folder / "pendulum_obs.parquet")
    bad.loc[3, "c0"] = None
    write_parquet(bad, folder / "pendulum_obs.parquet")
    tp = train.Paths(datasets=folder, models=tmp_path / "models", runs=tmp_path / "runs.parquet",
                     train_log=tmp_path / "log.parquet")
    with pytest.raises(DataValidationError, match=r"denots\.pendulum_obs.*column 'c0'"):
        run_stage(PAPER, "train", train.run, config.load_train(params), tp, params, None)
    assert not (tmp_path / "models").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from tests.conftest import write_params

    with pytest.raises(ConfigError, match=r"denots\.train\.pendulum.*horizons must include D = 1"):
        config.load_train(write_params(tmp_path, **{"denots.train.pendulum.horizons": [5.0, 20.0]}))
    with pytest.raises(ConfigError, match=r"denots\.train\.solver\.rtol"):
        config.load_train(write_params(tmp_path, **{"denots.train.solver.rtol": -1.0}))
    with pytest.raises(ConfigError, match=r"denots\.data\.unknown"):
        config.load_data(write_params(tmp_path, **{"denots.data.unknown": 1}))
