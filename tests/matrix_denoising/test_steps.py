"""Smoke tests of the real steps at the smoke profile (called as plain functions)."""

from pathlib import Path

import pandas as pd
import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.matrix_denoising import config, data, evaluate, report, train


def _run_all(tmp: Path, params: Path) -> dict[str, Path]:
    d = tmp / "data"
    r = tmp / "reports"
    p = {"instances": d / "instances.parquet", "trajectories": d / "trajectories.parquet",
         "theory": d / "theory.parquet", "evaluation": d / "evaluation.json"}
    run_stage("matrix_denoising", "data", data.run, config.load_data(params),
              data.Paths(instances=p["instances"]), params, r / "timings" / "data.json")
    run_stage("matrix_denoising", "train", train.run, config.load_train(params),
              train.Paths(instances=p["instances"], trajectories=p["trajectories"]), params,
              r / "timings" / "train.json")
    run_stage("matrix_denoising", "evaluate", evaluate.run, config.load_evaluate(params),
              evaluate.Paths(instances=p["instances"], trajectories=p["trajectories"], theory=p["theory"],
                             evaluation=p["evaluation"]), params, r / "timings" / "evaluate.json")
    paths = report.Paths(instances=p["instances"], trajectories=p["trajectories"], theory=p["theory"],
                         evaluation=p["evaluation"], timings=r / "timings", report=r / "report.md",
                         metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    run_stage("matrix_denoising", "report", report.run, config.load_report(params), paths, params,
              r / "timings" / "report.json")
    return {**p, "report": paths.report, "metrics": paths.metrics, "claim": paths.claim, "plots": paths.plots}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("md_smoke")
    params = write_params(tmp)
    return params, _run_all(tmp, params)


def test_instances_hold_specs_and_seeds_not_matrices(smoke_run):
    params, out = smoke_run
    df = read_parquet(out["instances"])
    cfg = config.load_data(params)
    assert df.instance.nunique() == len(cfg.lambdas) * cfg.n_seeds
    assert {"stall", "stall_mirror"} <= set(df.init)
    assert set(df[df.init == "stall"].lam) == {lam for lam in cfg.lambdas if lam >= 0.75**0.25 + cfg.stall_min_gap}


def test_trajectories_start_at_the_initial_overlaps(smoke_run):
    _, out = smoke_run
    traj = read_parquet(out["trajectories"]).merge(read_parquet(out["instances"]), on=["instance", "init"])
    start = traj[traj.t == 0]
    pd.testing.assert_series_equal(start.q_u, start.alpha_u, check_names=False, atol=1e-12)


def test_report_writes_claim_metrics_and_plots(smoke_run):
    _, out = smoke_run
    claim = ClaimRecord.model_validate(read_json(out["claim"]))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.wall_time_s > 0
    metrics = read_json(out["metrics"])
    assert set(metrics["per_seed"]) >= {"max_trajectory_gap", "limit_error", "stall_slowdown"}
    assert all(len(v) == 2 for v in metrics["per_seed"].values())
    assert {p.name for p in out["plots"].iterdir()} == {"trajectories.png", "limits_vs_lambda.png", "stall.png"}
    text = out["report"].read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "![trajectories](plots/trajectories.png)" in text


def test_steps_are_deterministic(smoke_run, tmp_path):
    params, out = smoke_run
    again = _run_all(tmp_path, params)
    assert read_json(again["metrics"]) == read_json(out["metrics"])
    pd.testing.assert_frame_equal(read_parquet(again["trajectories"]), read_parquet(out["trajectories"]))


def test_corrupt_instances_fail_validation_naming_the_column(smoke_run, tmp_path):
    params, out = smoke_run
    bad = read_parquet(out["instances"])
    bad.loc[0, "alpha_u"] = 1.7
    write_parquet(bad, tmp_path / "bad.parquet")
    target = tmp_path / "traj.parquet"
    with pytest.raises(DataValidationError, match=r"matrix_denoising\.instances.*column 'alpha_u'"):
        run_stage("matrix_denoising", "train", train.run, config.load_train(params),
                  train.Paths(instances=tmp_path / "bad.parquet", trajectories=target), params, None)
    assert not target.exists()


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_run, tmp_path):
    params, out = smoke_run
    ev = read_json(out["evaluation"])
    del ev["per_seed"]["stall_slowdown"]
    write_json(ev, tmp_path / "ev.json")
    paths = report.Paths(instances=out["instances"], trajectories=out["trajectories"], theory=out["theory"],
                         evaluation=tmp_path / "ev.json", timings=out["report"].parent / "timings",
                         report=tmp_path / "r.md", metrics=tmp_path / "m.json", claim=tmp_path / "c.json",
                         plots=tmp_path / "plots")
    with pytest.raises(KeyError, match="stall_slowdown"):
        run_stage("matrix_denoising", "report", report.run, config.load_report(params), paths, params, None)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()
