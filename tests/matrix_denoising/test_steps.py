"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import contextlib

import pandas as pd
import pytest

from stages.core.config import load_global
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from tests.smoke import report_outs

PAPER = "matrix_denoising"


@contextlib.contextmanager
def one_thread():
    """A run capped here as in a worker (torch and BLAS at one thread), this process's counts restored after."""
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        torch.set_num_threads(before)


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


def test_flow_matrices_recomputed_here_equal_the_written_tables(smoke_repo):
    """Each matrix is seeded from its job alone: a run recomputed in this process equals what the step wrote."""
    from stages.matrix_denoising import flow_studies as fs

    paths = smoke_repo.paths(f"{PAPER}-flow_studies")
    cfg = smoke_repo.config(f"{PAPER}-flow_studies")
    sh = fs.Shared(cfg, load_global(smoke_repo.params).seed, threads=1)
    with one_thread():
        check_flow_runs(sh, cfg, paths)


def check_flow_runs(sh, cfg, paths):
    from stages.matrix_denoising import flow_studies as fs

    scaling, scan, transition = (read_parquet(paths.scaling), read_parquet(paths.scan),
                                 read_parquet(paths.transition))
    job = fs.scaling_jobs(cfg)[-1]
    _, _, n, lam, s = job
    mine = scaling[(scaling.n == n) & (scaling.lam == lam) & (scaling.seed_index == s)].reset_index(drop=True)
    pd.testing.assert_frame_equal(fs.flow_run(job, sh), mine, check_exact=True)
    job = fs.scan_jobs(cfg)[0]
    mine = scan[(scan.lam == job[1]) & (scan.seed_index == job[2])].reset_index(drop=True)
    pd.testing.assert_frame_equal(fs.flow_run(job, sh), mine, check_exact=True)
    job = fs.transition_jobs(cfg)[-1]
    row = transition[(transition.lam == job[1]) & (transition.seed_index == job[2]) & (transition.repeat == job[3])]
    assert fs.flow_run(job, sh) == row.iloc[0].to_dict()


def test_instances_give_the_same_trajectories_on_one_process_or_two(smoke_repo):
    """RGD instances over two worker processes equal the same instances run here and the written table."""
    from stages.core.workers import map_runs
    from stages.matrix_denoising import train

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    groups = [g for _, g in read_parquet(paths.instances).groupby("instance", sort=True)][:3]
    sh = train.Shared(cfg, threads=1)
    two = map_runs(train.instance_run, groups, sh, threads=2, max_threads=1, desc="two")
    with one_thread():
        one = [train.instance_run(g, sh) for g in groups]
    written = read_parquet(paths.trajectories)
    for a, b, g in zip(one, two, groups, strict=True):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
        mine = written[written.instance == g.instance.iloc[0]].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, mine, check_exact=True)
