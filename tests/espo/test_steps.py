"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.espo import config, rl
from tests.conftest import write_params
from tests.smoke import report_outs

PAPER = "espo"


def test_data_splits_and_sizes(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    sud = read_parquet(paths.sudoku)
    n_train_grids = round(288 * cfg.sudoku.train_fraction)
    assert (sud.split == "train").sum() == n_train_grids * cfg.sudoku.puzzles_per_train_grid
    cd = read_parquet(paths.countdown)
    assert (cd.split == "test").sum() == cfg.countdown.n_test


def test_warmstart_saves_one_model_per_task_with_its_choice(smoke_repo):
    folder = smoke_repo.paths(f"{PAPER}-warmstart").models
    cfg = smoke_repo.config(f"{PAPER}-warmstart")
    manifest = read_json(folder / "manifest.json")
    assert set(manifest["tasks"]) == set(cfg.tasks)
    for task in cfg.tasks:
        assert (folder / f"{task}.safetensors").is_file()
        steps = [c["step"] for c in manifest["tasks"][task]["val_curve"]]
        assert manifest["tasks"][task]["chosen_step"] in steps


def test_rl_runs_every_grid_entry_for_every_iteration(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-rl")
    cfg = smoke_repo.config(f"{PAPER}-rl")
    log = read_parquet(paths.rl_log)
    expected = {rl.run_name(e.task, v, s) for e in cfg.grid for v in e.variants for s in range(e.n_seeds)}
    assert set(log.run) == expected
    assert log.groupby("run").iteration.max().eq(cfg.iterations).all()
    assert {p.stem for p in paths.models.glob("*.safetensors")} == expected
    assert log.reward.between(0, 1).all()
    # per objective and iteration: clip fraction, ratio spread and KL over the μ inner updates
    assert log.clip_fraction.between(0, 1).all() and log.kl.notna().all()
    assert (log.log_ratio_std >= 0).all() and (log.log_ratio_max >= log.log_ratio_std).all()


def test_evaluation_has_paired_per_seed_metrics(smoke_repo):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    grid = smoke_repo.config(f"{PAPER}-rl").grid
    n_seeds = next(e.n_seeds for e in grid if "espo" in e.variants and e.task == "sudoku")
    for key in ("sudoku_espo_minus_d1_success", "sudoku_espo_minus_token_elbo_success",
                "sudoku_espo_minus_warmstart_success", "sudoku_best_minus_warmstart_success",
                "sudoku_token_elbo_clip_fraction"):
        assert len(ev["per_seed"][key]) == n_seeds
    warm = ev["warmstart"]["sudoku"]["test_success"]
    for s, best in enumerate(ev["per_seed"]["sudoku_best_minus_warmstart_success"]):   # the max over objectives
        assert best == pytest.approx(max(r["test_success"] for r in ev["runs"] if r["task"] == "sudoku"
                                         and r["seed_index"] == s and r["variant"] in ("d1", "token_elbo", "espo"))
                                     - warm)
    for r in ev["runs"]:   # success (reward = 1) can never exceed the mean reward
        assert 0 <= r["test_success"] <= r["test_reward"] <= 1
        assert 0 <= r["test_sampled_success"] <= r["test_sampled_reward"] <= 1


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    names = {p.name for p in paths.plots.iterdir()}
    assert {"test_success.png", "reward_sudoku_main.png", "reward_sudoku_ablations.png", "warmstart_val.png",
            "diagnostics_sudoku.png"} <= names
    assert "## Rule history" in paths.report.read_text() and "## Sizing history" in paths.report.read_text()
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    # counts in the prose come from the run and its params, not from the default profile
    rl_cfg, data_cfg = smoke_repo.config(f"{PAPER}-rl"), smoke_repo.config(f"{PAPER}-data")
    assert (f"RL runs {rl_cfg.iterations} iterations of {rl_cfg.prompts_per_iteration} prompts × "
            f"{rl_cfg.group_size} samples with μ = {rl_cfg.inner_updates} inner updates") in text
    assert f"puzzles blank {data_cfg.sudoku.min_blanks}-{data_cfg.sudoku.max_blanks} cells" in text


def test_corrupt_sudoku_fails_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").sudoku)
    bad.loc[3, "puzzle"] = "5" * 16
    write_parquet(bad, tmp_path / "sudoku.parquet")
    with pytest.raises(DataValidationError, match=r"espo\.sudoku.*column 'puzzle'"):
        smoke_repo.run(f"{PAPER}-warmstart", sudoku=tmp_path / "sudoku.parquet", models=tmp_path / "ws",
                       train_log=tmp_path / "log.parquet")
    assert not (tmp_path / "ws").exists() and not (tmp_path / "log.parquet").exists()


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["sudoku_espo_minus_d1_success"]
    write_json(ev, tmp_path / "ev.json")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="sudoku_espo_minus_d1_success"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **outs)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"espo.rl.clip_eps": 1.5})
    with pytest.raises(ConfigError, match=r"espo\.rl\.clip_eps"):
        config.load_rl(params)
    params = write_params(tmp_path, **{"espo.rl.grid": [{"task": "sudoku", "variants": ["nope"], "n_seeds": 1}]})
    with pytest.raises(ConfigError, match="nope"):
        config.load_rl(params)


def test_rl_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its runs over processes; each run seeds itself, so rerunning one here gives its weights."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.espo.io import read_tables

    paths = smoke_repo.paths(f"{PAPER}-rl")
    cfg = smoke_repo.config(f"{PAPER}-rl")
    manifest = read_json(paths.warmstart / "manifest.json")
    shared = rl.Shared(cfg, read_tables(paths), paths.warmstart, config.ModelConfig(**manifest["model"]),
                       {task: m["max_len"] for task, m in manifest["tasks"].items()},
                       load_global(smoke_repo.params).seed)
    jobs = [(e.task, v, s) for e in cfg.grid for v in e.variants for s in range(e.n_seeds)]
    log = read_parquet(paths.rl_log)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for job in [jobs[-1], jobs[0]]:
            state, steps = rl.rl_run(job, shared)
            saved = load_safetensors(paths.models / f"{rl.run_name(*job)}.safetensors")
            assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
            written = log[log.run == rl.run_name(*job)].sort_values("iteration")
            assert written.drop(columns=["run", "task", "variant", "seed_index"]).to_dict("records") == steps
    finally:
        torch.set_num_threads(before)
