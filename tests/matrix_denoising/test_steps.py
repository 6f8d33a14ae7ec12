"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pandas as pd
import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from tests.smoke import report_outs

PAPER = "matrix_denoising"


def test_instances_hold_specs_and_seeds_not_matrices(smoke_repo):
    df = read_parquet(smoke_repo.paths(f"{PAPER}-data").instances)
    cfg = smoke_repo.config(f"{PAPER}-data")
    assert df.instance.nunique() == len(cfg.lambdas) * cfg.n_seeds
    assert {"stall", "stall_mirror"} <= set(df.init)
    assert set(df[df.init == "stall"].lam) == {lam for lam in cfg.lambdas if lam >= 0.75**0.25 + cfg.stall_min_gap}


def test_trajectories_start_at_the_initial_overlaps(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    traj = read_parquet(paths.trajectories).merge(read_parquet(paths.instances), on=["instance", "init"])
    start = traj[traj.t == 0]
    pd.testing.assert_series_equal(start.q_u, start.alpha_u, check_names=False, atol=1e-12)


def test_report_writes_claim_metrics_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.wall_time_s > 0
    metrics = read_json(paths.metrics)
    assert set(metrics["per_seed"]) >= {"max_trajectory_gap", "limit_error", "stall_slowdown", "fss_exponent",
                                        "fss_exponent_deviation", "stall_peak_offset", "stall_peak_contrast",
                                        "transition_location_error"}
    assert all(len(v) == 2 for v in metrics["per_seed"].values())
    assert {p.name for p in paths.plots.iterdir()} == {"trajectories.png", "limits_vs_lambda.png", "stall.png",
                                                       "finite_size_scaling.png", "ratio_scan.png", "transition.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "![trajectories](plots/trajectories.png)" in text
    # counts in the prose come from the run, not from the default profile
    cfg = smoke_repo.config(f"{PAPER}-data")
    assert f"p = {cfg.p}, n = {cfg.n}" in text and f"{cfg.n_seeds} seeds per λ" in text
    flows = smoke_repo.config(f"{PAPER}-flow_studies")
    assert f"n ∈ {flows.fss_sizes}" in text and "## Rule history" in text


def test_flow_studies_tables_cover_their_grids(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-flow_studies")
    cfg = smoke_repo.config(f"{PAPER}-flow_studies")
    scaling, scan, transition = (read_parquet(paths.scaling), read_parquet(paths.scan),
                                 read_parquet(paths.transition))
    assert sorted(scaling.n.unique()) == cfg.fss_sizes
    assert len(scaling) == len(cfg.fss_sizes) * len(cfg.fss_lambdas) * cfg.n_seeds * len(cfg.fss_inits) * len(
        cfg.fss_times)
    assert sorted(scan.ratio.unique()) == cfg.scan_ratios
    start = scan[scan.t == 0]
    pd.testing.assert_series_equal(start.q_u, start.alpha_u, check_names=False, atol=1e-12)
    assert len(transition) == len(cfg.transition_lambdas) * cfg.n_seeds * cfg.transition_repeats


def test_corrupt_instances_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").instances)
    bad.loc[0, "alpha_u"] = 1.7
    write_parquet(bad, tmp_path / "bad.parquet")
    target = tmp_path / "traj.parquet"
    with pytest.raises(DataValidationError, match=r"matrix_denoising\.instances.*column 'alpha_u'"):
        smoke_repo.run(f"{PAPER}-train", instances=tmp_path / "bad.parquet", trajectories=target)
    assert not target.exists()


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["stall_peak_offset"]
    write_json(ev, tmp_path / "ev.json")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="stall_peak_offset"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **outs)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()
