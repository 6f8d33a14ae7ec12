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


def test_train_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its seeds over processes; each run seeds itself, so rerunning one here gives its weights,
    its logged losses and its summary; the FLOP count of a fresh model of the same shape is the manifest's."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.ssg import train
    from stages.ssg.io import read_tokens
    from stages.ssg.multiscale_vq import load_vq

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    vq, m = load_vq(paths.tokenizer)
    data = {}
    for split in ("train", "val"):
        tokens, labels = read_tokens(paths.tokens, m["codebook_size"], m["seq_len"], split)
        data[split] = (tokens, train.teacher_inputs(vq.codebook.weight.detach(), tokens, m["scales"]), labels)
    shared = train.Shared(cfg, data["train"], data["val"], m["codebook_size"], m["code_dim"], m["scales"],
                          load_global(smoke_repo.params).seed)
    manifest = read_json(paths.var / "manifest.json")
    log = read_parquet(paths.train_log)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        s = cfg.n_seeds - 1
        state, log_rows, summary = train.train_run(s, shared)
        saved = load_safetensors(paths.var / f"var_s{s}.safetensors")
        assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
        written = log[log.seed_index == s].sort_values("step")
        assert list(zip(written.step, written.loss, strict=True)) == log_rows
        assert manifest["seeds"][s] == summary
        model = train.build_model(shared)
        assert sum(p.numel() for p in model.parameters()) == manifest["n_parameters"]
        assert train.step_flops(model.train(), data["train"], cfg.batch_size) == manifest["step_flops"]
    finally:
        torch.set_num_threads(before)


def _evaluate_shared(smoke_repo):
    """The evaluate step's shared inputs, built as the step builds them."""
    from pathlib import Path

    from stages.core.config import load_global
    from stages.core.image_metrics import load_feature_net
    from stages.ssg import evaluate
    from stages.ssg.io import read_images, read_tokens
    from stages.ssg.multiscale_vq import load_vq

    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    cfg = smoke_repo.config(f"{PAPER}-evaluate").evaluate
    data = read_images(paths.images, paths.index)
    vq, m = load_vq(paths.tokenizer)
    size = int(read_json(Path(paths.classifier) / "manifest.json")["image_size"])
    scorer = evaluate.Scorer(load_feature_net(paths.classifier), size, cfg.knn_k)
    real = {split: scorer.features(data[split][0]) for split in ("val", "test")}
    train_tokens, _ = read_tokens(paths.tokens, m["codebook_size"], m["seq_len"], "train")
    return evaluate.Shared(cfg, vq, Path(paths.var), scorer, real, train_tokens, m["codebook_size"], m["scales"],
                           load_global(smoke_repo.params).seed)


def test_evaluate_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """Each validation and test run draws its numbers from its seed index alone, so rerunning some here gives the
    written scores, high-frequency shares and costs exactly."""
    import torch
    from threadpoolctl import threadpool_limits

    from stages.core.config import load_global
    from stages.core.threads import cap_threads
    from stages.ssg import evaluate
    from stages.ssg.guidance import Arm

    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    n_seeds = smoke_repo.config(f"{PAPER}-evaluate").n_seeds
    results = read_parquet(paths.results)
    ev = read_json(paths.evaluation)
    before = torch.get_num_threads()
    try:
        with threadpool_limits(load_global(smoke_repo.params).threads):
            shared = _evaluate_shared(smoke_repo)
            cap_threads(shared.cfg.max_threads)  # as in the step's workers
            s = n_seeds - 1
            val = results[(results.split == "val") & (results.seed_index == s)]
            for arm in evaluate.validation_arms(shared.cfg)[::3]:
                scores = evaluate.validation_run((s, arm), shared)
                written = val[(val.arm == arm.name) & (val.beta == arm.beta) & (val.temperature == arm.temperature)]
                assert len(written) == 1 and written[["fd", "precision", "recall"]].iloc[0].to_dict() == scores
            chosen = ev["seeds"][s]["chosen"]
            test = results[(results.split == "test") & (results.seed_index == s)]
            for name in ("ssg_dse", "marginal"):
                arm = evaluate.MARGINAL if name == "marginal" else Arm(name, **chosen[name])
                done = evaluate.final_run((s, arm), shared)
                assert test[test.arm == name][["fd", "precision", "recall"]].iloc[0].to_dict() == done.scores
                assert ev["seeds"][s]["high_frequency_share"][name] == done.high_frequency_share
                assert done.cost == ev["seeds"][s]["cost"].get(name)
            assert done.cost is None and done.grid.shape[0] == shared.cfg.grid_samples
    finally:
        torch.set_num_threads(before)


def test_evaluate_runs_are_identical_in_this_process_and_in_workers(smoke_repo):
    """The runs' results do not depend on how many processes ran them."""
    import torch

    from stages.ssg import evaluate
    from tests.runs import in_one_and_two_processes

    shared = _evaluate_shared(smoke_repo)
    n_seeds = smoke_repo.config(f"{PAPER}-evaluate").n_seeds
    arms = evaluate.validation_arms(shared.cfg)
    jobs = [(0, arms[1]), (n_seeds - 1, arms[1]), (0, evaluate.MARGINAL)]
    one, two = in_one_and_two_processes(evaluate.final_run, jobs, shared)
    for a, b in zip(one, two, strict=True):
        assert (a.scores, a.high_frequency_share, a.cost) == (b.scores, b.high_frequency_share, b.cost)
        assert torch.equal(a.grid, b.grid)
    assert one[0].scores != one[1].scores  # the seeds differ, so a run that ignored its job would fail here
