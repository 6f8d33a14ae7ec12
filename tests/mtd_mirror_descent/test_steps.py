"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from tests.smoke import report_outs

PAPER = "mtd_mirror_descent"


def test_data_tables_have_the_configured_sizes(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    seqs = read_parquet(paths.sequences)
    assert (seqs.split == "train").sum() == cfg.n_train and (seqs.split == "test").sum() == cfg.n_test
    assert len(read_parquet(paths.tokens)) == len(seqs) * cfg.seq_len


def test_train_writes_every_model_and_seed(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    names = {p.name for p in paths.models.iterdir()}
    assert names == {"manifest.json"} | {f"{s.name}_s{i}.safetensors" for s in cfg.models for i in range(cfg.n_seeds)}
    log = read_parquet(paths.train_log)
    assert log.groupby(["model", "seed_index"]).step.max().eq(cfg.trainer.max_steps).all()


def test_evaluation_reports_every_metric_per_seed_and_an_exact_construction(smoke_repo):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    assert set(ev["per_seed"]) == {"shallow_kl_over_md1", "shallow_bayes_minus_md1_shrunk_tv",
                                   "deep_multistep_margin_shrunk_tv", "shallow_layer1_gain_over_positional"}
    assert all(len(v) == 2 for v in ev["per_seed"].values())
    assert all(len(v) == 2 for v in ev["reported"].values())
    # every shrinkage β was fitted inside [0, 1]; the baseline is in every table
    for runs in ev["shrunk"].values():
        assert all(0.0 <= r[e]["beta"] <= 1.0 for r in runs for e in r)
    assert ev["baseline_model"] in ev["shrunk"] and ev["baseline_model"] in ev["model_kl"]
    # the positional control is the same for every seed and no worse than uniform over lags
    att = ev["attention"][ev["shallow_model"]]
    assert len({a["positional_tv"] for a in att}) == 1
    assert ev["construction_max_abs_error"] < 1e-6
    for t in ev["lengths"]:
        assert ev["kl"]["md1"][str(t)] < ev["kl"]["uniform"][str(t)] or t < 10


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"kl_vs_length.png", "training_loss.png",
                                                       "attention_vs_gamma.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    # counts in the prose come from the run, not from the default profile
    data, train = smoke_repo.config(f"{PAPER}-data"), smoke_repo.config(f"{PAPER}-train")
    assert f"Test sequences: {data.n_test} (validation: {data.n_val});" in text
    assert f"trained from scratch for {train.trainer.max_steps} steps each" in text
    assert "## Rule history" in text and "## Sizing history" in text


def test_corrupt_tokens_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").tokens)
    bad.loc[3, "token"] = 99
    write_parquet(bad, tmp_path / "tokens.parquet")
    with pytest.raises(DataValidationError, match=r"mtd_mirror_descent\.tokens.*column 'token'"):
        smoke_repo.run(f"{PAPER}-train", tokens=tmp_path / "tokens.parquet", models=tmp_path / "models",
                       train_log=tmp_path / "log.parquet")
    assert not (tmp_path / "models").exists() and not (tmp_path / "log.parquet").exists()


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["shallow_layer1_gain_over_positional"]
    write_json(ev, tmp_path / "ev.json")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="shallow_layer1_gain_over_positional"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **outs)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()


def test_training_runs_are_identical_in_this_process_and_in_workers():
    """Each run seeds itself from its job, so the step's weights do not depend on how many processes ran it."""
    import numpy as np
    import torch

    from stages.core.config import load_section
    from stages.mtd_mirror_descent.config import TrainConfig
    from stages.mtd_mirror_descent.models import init_seed
    from stages.mtd_mirror_descent.mtd import sample_sequences, transition_matrix
    from stages.mtd_mirror_descent.train import Shared, train_run
    from tests.runs import in_one_and_two_processes

    cfg = load_section(TrainConfig, f"{PAPER}.train", profile="smoke")
    pi = transition_matrix(5, 0.3, 0.1, np.random.default_rng(0))
    tokens, _, _ = sample_sequences(pi, 3, 12, 8, 1.0, np.random.default_rng(1))
    shared = Shared(cfg, torch.as_tensor(tokens), q=5, m=3, seq_len=12)
    jobs = [(cfg.models[0], s, init_seed(0, cfg.models[0].name, s)) for s in range(2)] + [
        (cfg.models[-1], 0, init_seed(0, cfg.models[-1].name, 0))]
    one, two = in_one_and_two_processes(train_run, jobs, shared)
    for (w1, l1), (w2, l2) in zip(one, two, strict=True):
        assert l1 == l2 and w1.keys() == w2.keys()
        assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert one[0][1] != one[1][1]  # the seeds differ, so a run that ignored its job would fail above or here
