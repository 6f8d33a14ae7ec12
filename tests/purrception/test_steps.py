"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import numpy as np
import pytest
import torch

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.purrception import config
from stages.purrception.io import read_codes
from tests.conftest import write_params

PAPER = "purrception"


def test_data_has_the_configured_subsets_and_size(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    index = read_parquet(paths.index)
    assert (index.split == "train").sum() == cfg.n_train and (index.split == "test").sum() == cfg.n_test
    assert np.load(paths.images).shape == (cfg.n_train + cfg.n_test, cfg.image_size, cfg.image_size)


def test_tokenizer_codes_every_image_on_the_latent_grid(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-tokenizer")
    d, k = smoke_repo.config(f"{PAPER}-data"), smoke_repo.config(f"{PAPER}-tokenizer")
    codes = read_parquet(paths.codes)
    grid = d.image_size // 4
    assert len(codes) == (d.n_train + d.n_test) * grid * grid
    assert codes.code.between(0, k.codebook_size - 1).all()
    rec = read_json(paths.tokenizer_metrics)["reconstruction"]
    assert 0 < rec["test"]["mse"] < 1 and rec["train"]["codes_used"] >= 1


def test_train_keeps_every_checkpoint_of_every_method_and_seed(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    names = {p.name for p in paths.generators.iterdir()}
    assert names == {"manifest.json"} | {f"{m}_s{s}_step{c}.safetensors" for m in cfg.methods
                                         for s in range(cfg.n_seeds) for c in cfg.checkpoints}
    log = read_parquet(paths.train_log)
    assert log.groupby(["method", "seed_index"]).step.max().eq(cfg.trainer.max_steps).all()


def test_evaluate_scores_every_checkpoint_both_purrception_samplers_and_the_temperatures(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    tc, ec = smoke_repo.config(f"{PAPER}-train"), smoke_repo.config(f"{PAPER}-evaluate").evaluate
    curves = read_parquet(paths.fid_curves)
    tau1 = curves[curves.temperature == 1.0]
    n_arms = len(tc.methods) + 1  # Purrception twice: stochastic and deterministic
    assert len(tau1) == n_arms * tc.n_seeds * len(tc.checkpoints)
    assert set(tau1[tau1.method == "purrception"].sampler) == {"stochastic", "deterministic"}
    assert set(tau1[tau1.method == "discrete_fm"].sampler) == {"stochastic"}
    others = curves[curves.temperature != 1.0]
    assert set(others.method) == {"purrception"} and len(others) == 2 * tc.n_seeds * (len(ec.temperatures) - 1)
    assert (curves.fid >= 0).all() and curves.precision.between(0, 1).all()
    assert np.load(paths.samples).shape[:2] == (2 + n_arms, ec.grid_samples)
    ev = read_json(paths.evaluation)
    assert len(ev["known_bad"]) == tc.n_seeds and all(kb["fid"] > 0 for kb in ev["known_bad"])


def test_the_feature_net_loads_from_its_folder_and_embeds(smoke_repo):
    from stages.core.image_metrics import load_feature_net

    folder = smoke_repo.paths(f"{PAPER}-classifier").classifier
    cfg = smoke_repo.config(f"{PAPER}-classifier")
    net = load_feature_net(folder)
    size = read_json(folder / "manifest.json")["image_size"]
    images = torch.rand(5, size, size)
    assert net.embed(images).shape == (5, cfg.feature_dim) and not net.training


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"fid_vs_steps.png", "temperature.png", "samples.png",
                                                       "training_loss.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    metrics = read_json(paths.metrics)
    assert set(metrics["per_seed"]) == set(config.METRICS)
    assert set(metrics["by_sampler"]) == {"stochastic", "deterministic"}
    assert "## Rule history" in text and "## Confounds" in text
    # counts in the prose come from the run, not from the default profile
    cfg = smoke_repo.config(f"{PAPER}-train")
    assert (f"trained from scratch for {cfg.trainer.max_steps} steps under each of {len(cfg.methods)} objectives × "
            f"{cfg.n_seeds} seeds") in text


def test_corrupt_codes_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-tokenizer").codes)
    bad.loc[3, "code"] = 9999
    write_parquet(bad, tmp_path / "codes.parquet")
    with pytest.raises(DataValidationError, match=r"purrception\.codes.*column 'code'"):
        smoke_repo.run(f"{PAPER}-train", codes=tmp_path / "codes.parquet", generators=tmp_path / "gen",
                       train_log=tmp_path / "log.parquet")
    assert not (tmp_path / "gen").exists() and not (tmp_path / "log.parquet").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    for bad in ([100, 300], [200, 100, 1000], [0, 500, 1000]):  # not ending at max_steps, not increasing, step 0
        params = write_params(tmp_path, profile="default", **{"purrception.train.checkpoints": bad})
        with pytest.raises(ConfigError, match=r"purrception\.train.*checkpoints"):
            config.load_train(params)
    params = write_params(tmp_path, **{"purrception.report.speed_target": "final"})
    with pytest.raises(ConfigError, match=r"purrception\.report.*speed_target"):
        config.load_report(params)
    params = write_params(tmp_path, **{"purrception.report.gates": ["no such check"]})
    with pytest.raises(ConfigError, match=r"purrception\.report\.gates"):
        config.load_report(params)
    params = write_params(tmp_path, **{"purrception.report.verdict_sampler": "greedy"})
    with pytest.raises(ConfigError, match=r"purrception\.report.*verdict_sampler"):
        config.load_report(params)
    params = write_params(tmp_path, **{"purrception.evaluate.temperatures": [0.5, -1.0, 1.0]})
    with pytest.raises(ConfigError, match=r"purrception\.evaluate"):
        config.load_evaluate(params)


def _train_shared(smoke_repo):
    """The train step's Shared, rebuilt from the smoke run's inputs."""
    from stages.core.config import load_global
    from stages.purrception import train
    from stages.purrception.flow_matching import flow_codebook

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    manifest = read_json(paths.generators / "manifest.json")
    shape = {k: manifest[k] for k in ("codebook_size", "code_dim", "seq_len", "d_model", "n_layers", "n_heads")}
    codes = read_codes(paths.codes, manifest["codebook_size"], manifest["seq_len"])
    codebook, _ = flow_codebook(paths.tokenizer)
    return train.Shared(cfg, codes, codebook, shape, load_global(smoke_repo.params).seed)


def _evaluate_shared(smoke_repo):
    """The evaluate step's Shared, rebuilt from the smoke run's inputs."""
    from stages.core.config import load_global
    from stages.purrception import evaluate
    from stages.purrception.io import read_images

    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    cfg = smoke_repo.config(f"{PAPER}-evaluate")
    test_x = read_images(paths.images, paths.index)["test"][0]
    return evaluate.shared_inputs(cfg, paths, load_global(smoke_repo.params).seed, test_x)


def test_train_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its runs over processes; each run seeds itself, so rerunning one here gives its weights."""
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.purrception import train

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    shared = _train_shared(smoke_repo)
    log = read_parquet(paths.train_log)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for method, s in [(cfg.methods[-1], cfg.n_seeds - 1), (cfg.methods[0], 0)]:
            snapshots, losses = train.train_run((method, s), shared)
            assert list(snapshots) == list(cfg.checkpoints)
            for step, state in snapshots.items():
                saved = load_safetensors(paths.generators / f"{method}_s{s}_step{step}.safetensors")
                assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
            written = log[(log.method == method) & (log.seed_index == s)].sort_values("step")
            assert written.loss.tolist() == losses
    finally:
        torch.set_num_threads(before)


def test_evaluate_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """Every sampling run draws its noise from its seed index alone: rerunning one here gives the written scores."""
    from stages.core.threads import cap_threads
    from stages.purrception import evaluate

    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    ec = smoke_repo.config(f"{PAPER}-evaluate").evaluate
    shared = _evaluate_shared(smoke_repo)
    manifest = read_json(paths.generators / "manifest.json")
    jobs = evaluate.jobs_of(manifest, ec.temperatures)
    curves = read_parquet(paths.fid_curves)
    grid = np.load(paths.samples)
    pairs = evaluate.arms(manifest["methods"])
    final = manifest["checkpoints"][-1]
    picked = [jobs[-1], ("purrception", "deterministic", 0, final, 1.0), ("discrete_fm", "stochastic", 0, final, 1.0)]
    before = torch.get_num_threads()
    try:
        cap_threads(ec.max_threads)  # as in the step's workers
        for job in picked:
            assert job in jobs
            scores, first = evaluate.score_run(job, shared)
            method, smp, s, step, tau = job
            row = curves[(curves.method == method) & (curves.sampler == smp) & (curves.seed_index == s)
                         & (curves.step == step) & (curves.temperature == tau)]
            assert len(row) == 1 and row[list(scores)].iloc[0].to_dict() == scores
            if s == 0 and step == final and tau == 1.0:
                assert np.array_equal(grid[2 + pairs.index((method, smp))], first)
    finally:
        torch.set_num_threads(before)


def test_train_and_evaluate_runs_are_identical_in_this_process_and_in_two_workers(smoke_repo):
    """Each run seeds itself from its job, so the results do not depend on how many processes ran them."""
    from stages.purrception import evaluate, train
    from tests.runs import in_one_and_two_processes

    cfg = smoke_repo.config(f"{PAPER}-train")
    assert cfg.max_threads == 1  # the helper caps each run at one thread, as the step does
    jobs = [("purrception", 0), ("purrception", 1), ("discrete_fm", 0)]
    one, two = in_one_and_two_processes(train.train_run, jobs, _train_shared(smoke_repo))
    for (s1, l1), (s2, l2) in zip(one, two, strict=True):
        assert l1 == l2 and s1.keys() == s2.keys()
        assert all(torch.equal(s1[c][k], s2[c][k]) for c in s1 for k in s1[c])
    assert one[0][1] != one[1][1]  # the seeds differ, so a run that ignored its job would fail here

    final = cfg.checkpoints[-1]
    ev_jobs = [("purrception", "stochastic", 0, final, 1.0), ("purrception", "stochastic", 1, final, 1.0),
               ("cfm_velocity", "deterministic", 1, cfg.checkpoints[0], 1.0)]
    one, two = in_one_and_two_processes(evaluate.score_run, ev_jobs, _evaluate_shared(smoke_repo))
    for (sc1, g1), (sc2, g2) in zip(one, two, strict=True):
        assert sc1 == sc2 and np.array_equal(g1, g2)
    assert one[0][0] != one[1][0]
