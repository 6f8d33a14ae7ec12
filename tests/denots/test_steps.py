"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.denots import config, fitting
from stages.denots.grid import RunSpec, config_grid, reads_for_verdict, run_grid
from stages.denots.io import load_tasks
from tests.smoke import report_outs

PAPER = "denots"


def test_data_tables_have_the_configured_sizes(smoke_repo):
    datasets = smoke_repo.paths(f"{PAPER}-data").datasets
    cfg = smoke_repo.config(f"{PAPER}-data")
    cases = read_parquet(datasets / "pendulum_cases.parquet")
    assert cases.groupby("split").size().to_dict() == {"train": cfg.pendulum.n_train, "val": cfg.pendulum.n_val,
                                                       "test": cfg.pendulum.n_test}
    assert cases.n_obs.between(cfg.pendulum.min_obs, cfg.pendulum.max_obs).all()
    vowels = read_parquet(datasets / "vowels_cases.parquet")
    assert (vowels.split == "train").sum() == cfg.vowels.max_train and (vowels.split == "test").sum() == 20
    assert set(vowels.target.unique()) <= set(range(9))


def test_train_records_every_run_and_saves_the_ones_that_finished(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    runs = read_parquet(paths.runs)
    assert list(runs.run_id) == [s.run_id for s in run_grid(cfg)]
    saved = {p.stem for p in paths.models.iterdir()}
    assert saved == set(runs.run_id[~runs.diverged])
    assert set(runs.lr) == set(cfg.lrs) and runs.groupby("config_id").size().eq(len(cfg.lrs)).all()
    assert (runs.steps <= cfg.trainer.max_steps).all() and (runs.best_step <= runs.steps).all()
    read = {s.config_id for s in config_grid(cfg) if s.group != "perturbed" and s.seed_index in cfg.stability.seeds
            and reads_for_verdict(s, cfg)}
    perturbed = runs[runs.group == "perturbed"]
    assert set(perturbed.config_id.str.removesuffix("__ulp")) == read and len(perturbed) == len(read) * len(cfg.lrs)


def test_saved_checkpoint_is_the_best_validation_one(smoke_repo):
    from stages.denots.neural_cde import base_solver

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    runs = read_parquet(paths.runs).set_index("run_id")
    tasks = load_tasks(paths.datasets)
    from stages.core.io import load_safetensors
    from stages.denots.grid import build_model

    for spec in [s for s in run_grid(cfg) if s.group == "horizon"][:3]:
        if runs.diverged[spec.run_id]:
            continue
        model = build_model(spec, tasks[spec.dataset], cfg)
        model.load_state_dict(load_safetensors(paths.models / f"{spec.run_id}.safetensors"))
        val = fitting.mean_loss(model, spec, tasks[spec.dataset], "val", spec.solver(base_solver(cfg)),
                              cfg.batch_size * 4)
        assert val == pytest.approx(runs.best_val_loss[spec.run_id], rel=1e-4)


def test_lr_is_chosen_per_configuration_on_validation(smoke_repo):
    res = read_parquet(smoke_repo.paths(f"{PAPER}-evaluate").results)
    assert res.groupby("config_id").lr_chosen.sum().eq(1).all()
    for _, g in res[~res.diverged].groupby("config_id"):
        assert g[g.lr_chosen].best_val_loss.iloc[0] == g.best_val_loss.min()


def test_evaluation_has_every_verdict_metric_per_seed(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    ev = read_json(paths.evaluation)
    rule = smoke_repo.config(f"{PAPER}-report").verdict
    assert {c.metric for c in rule.checks} <= set(ev["per_seed"])
    assert all(len(v) == 2 for v in ev["per_seed"].values())
    cfg = smoke_repo.config(f"{PAPER}-train")
    read = [s for s in config_grid(cfg) if s.group != "perturbed" and s.seed_index in cfg.stability.seeds
            and reads_for_verdict(s, cfg)]
    assert sorted(r["config"] for r in ev["stability"]) == sorted(s.config_id for s in read)
    rep = ev["replicate"]
    assert rep["seeds"] == cfg.stability.seeds and rep["complete"] and rep["rerun"] == rep["needed"] == len(read)
    assert {c.metric for c in rule.checks} <= set(rep["per_seed"])
    assert all(len(v) == len(cfg.stability.seeds) for v in rep["per_seed"].values())
    res = read_parquet(paths.results)
    ode = res[(res.model == "denots") & ~res.diverged]
    assert (ode.test_nfe > 0).all()


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"score_vs_horizon.png", "score_vs_nfe.png",
                                                       "training_loss_long_horizon.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    # counts in the prose come from the run, not from the default profile
    cfg = smoke_repo.config(f"{PAPER}-train")
    fields = set(cfg.pendulum.fields) | set(cfg.vowels.fields)
    assert f"Counts: {len(run_grid(cfg))} trained runs" in text
    assert f"at most {cfg.trainer.max_steps} Adam steps per run with early stopping, {cfg.n_seeds} seeds" in text
    assert "DeNOTS: Stable Deep Neural ODEs for Time Series" in text and "## Rule history" in text
    assert "### The verdict under numeric noise, measured" in text
    assert read_json(paths.metrics)["verdict_one_ulp_replicate"] in VERDICTS
    assert f"the {len(fields)} fields within ±10%" in text


def test_a_run_that_hits_the_step_cap_is_recorded_as_diverged(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-train")
    cfg = cfg.model_copy(update={"solver": cfg.solver.model_copy(update={"max_num_steps": 10})})
    tasks = load_tasks(smoke_repo.paths(f"{PAPER}-train").datasets)
    spec = RunSpec("pendulum", "denots", "no_feedback_gru", 5000.0, 1e-3, 1e-4, 0, "horizon")
    res = fitting.fit(spec, tasks["pendulum"], cfg, 0, 2)
    assert res.diverged.startswith("solver: max_num_steps exceeded") and res.failure == res.diverged
    assert res.losses == [] and res.best_step == 0 and res.val_curve == [(0, float("inf"))]


def test_corrupt_observations_fail_validation_naming_the_column(smoke_repo, tmp_path):
    folder = tmp_path / "datasets"
    folder.mkdir()
    for f in smoke_repo.paths(f"{PAPER}-data").datasets.iterdir():
        write_parquet(read_parquet(f), folder / f.name)
    bad = read_parquet(folder / "pendulum_obs.parquet")
    bad.loc[3, "c0"] = None
    write_parquet(bad, folder / "pendulum_obs.parquet")
    outs = {"models": tmp_path / "models", "runs": tmp_path / "runs.parquet", "train_log": tmp_path / "log.parquet"}
    with pytest.raises(DataValidationError, match=r"denots\.pendulum_obs.*column 'c0'"):
        smoke_repo.run(f"{PAPER}-train", datasets=folder, **outs)
    assert not any(p.exists() for p in outs.values())


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["scale_minus_tolerance"]
    write_json(ev, tmp_path / "ev.json")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="scale_minus_tolerance"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **outs)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from tests.conftest import write_params

    with pytest.raises(ConfigError, match=r"denots\.train\.pendulum.*horizons must include D = 1"):
        config.load_train(write_params(tmp_path, **{"denots.train.pendulum.horizons": [5.0, 20.0]}))
    with pytest.raises(ConfigError, match=r"denots\.train\.solver\.rtol"):
        config.load_train(write_params(tmp_path, **{"denots.train.solver.rtol": -1.0}))
    with pytest.raises(ConfigError, match=r"denots\.data\.unknown"):
        config.load_data(write_params(tmp_path, **{"denots.data.unknown": 1}))
