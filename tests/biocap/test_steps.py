"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import numpy as np
import pytest

from stages.biocap import config
from stages.biocap.io import run_file
from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import load_safetensors, read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from tests.conftest import write_params

PAPER = "biocap"


def test_data_has_every_split_and_captions_only_for_training_images(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    specimens, taxa, texts = (read_parquet(p) for p in (paths.specimens, paths.taxa, paths.texts))
    n_train_taxa = 3 * (cfg.species_per_genus - cfg.val_taxa_per_genus - cfg.test_taxa_per_genus)
    assert (taxa.role == "train").sum() == n_train_taxa
    assert (specimens.split == "train").sum() == n_train_taxa * cfg.n_train_per_taxon
    assert np.load(paths.images).shape == (len(specimens), cfg.image_size, cfg.image_size, 3)
    train_rows = set(specimens[specimens.split == "train"].row)
    for kind in ("caption", "hallucinated", "shuffled"):
        part = texts[texts.kind == kind]
        assert set(part.row) == train_rows and len(part) == len(train_rows) * cfg.captions_per_image
    queries = texts[texts.kind == "query"]
    assert not set(queries.row) & train_rows
    # held-out taxa never appear in training
    held_out = set(taxa[taxa.role != "train"].species_id)
    assert not held_out & set(specimens[specimens.split == "train"].species_id)


def test_features_cover_every_image_and_text(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-features")
    feats = load_safetensors(paths.features)
    assert feats["images"].shape == (len(read_parquet(paths.specimens)), 1280)
    assert feats["texts"].shape == (len(read_parquet(paths.texts)), 384)


def test_train_writes_every_arm_and_seed(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    assert {p.name for p in paths.models.iterdir()} == {run_file(a, s) for a in cfg.arms for s in range(cfg.n_seeds)}
    log = read_parquet(paths.train_log)
    assert log.groupby(["arm", "seed_index"]).step.max().eq(cfg.steps).all()
    assert (log[log.arm == "taxonomy"].caption_loss == 0).all() and (log[log.arm != "taxonomy"].caption_loss > 0).all()


def test_evaluate_scores_every_arm_seed_and_metric(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    cfg = smoke_repo.config(f"{PAPER}-evaluate")
    results = read_parquet(paths.results)
    n_metrics = 5 + 2 * len(cfg.evaluate.recall_ks)
    assert len(results) == len(cfg.arms) * cfg.n_seeds * n_metrics
    assert results.value.between(0, 1).all()


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"zero_shot.png", "retrieval.png", "training_loss.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    cfg = smoke_repo.config(f"{PAPER}-train")
    assert f"Every arm trains for {cfg.steps} steps, {cfg.n_seeds} seeds" in text
    assert set(read_json(paths.metrics)["per_seed"]) == {"seen_taxa_accuracy_taxonomy", "shifted_zero_shot_gain_dual",
                                                         "retrieval_r5_gain_dual",
                                                         "shifted_zero_shot_gain_hallucinated"}


def test_corrupt_specimens_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").specimens)
    bad.loc[0, "colour"] = "turquoise"
    write_parquet(bad, tmp_path / "specimens.parquet")
    with pytest.raises(DataValidationError, match=r"biocap\.specimens.*column 'colour'"):
        smoke_repo.run(f"{PAPER}-train", specimens=tmp_path / "specimens.parquet", models=tmp_path / "m",
                       train_log=tmp_path / "log.parquet")
    assert not (tmp_path / "m").exists() and not (tmp_path / "log.parquet").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"biocap.train.arms": ["caption_dual", "hallucinated"]})
    with pytest.raises(ConfigError, match=r"biocap\.train.*taxonomy"):
        config.load_train(params)
    params = write_params(tmp_path, **{"biocap.data.test_taxa_per_genus": 7})
    with pytest.raises(ConfigError, match=r"biocap\.data"):
        config.load_data(params)
    params = write_params(tmp_path, **{"biocap.control.check": "no such check"})
    with pytest.raises(ConfigError, match=r"positive_control"):
        config.load_report(params)


def test_train_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its runs over processes; each run seeds itself, so rerunning one here gives its weights."""
    import torch

    from stages.biocap import train
    from stages.biocap.contrastive import training_data
    from stages.biocap.io import read_features, read_tables
    from stages.core.config import load_global
    from stages.core.threads import cap_threads

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    specimens, _, texts = read_tables(paths.specimens, paths.taxa, paths.texts)
    data = training_data(*read_features(paths.features, len(specimens), len(texts)), specimens, texts)
    shared = train.Shared(cfg, data, load_global(smoke_repo.params).seed)
    log = read_parquet(paths.train_log)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for arm, s in [(cfg.arms[-1], cfg.n_seeds - 1), (cfg.arms[0], 0)]:
            state, steps = train.train_run((arm, s), shared)
            saved = load_safetensors(paths.models / run_file(arm, s))
            assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
            written = log[(log.arm == arm) & (log.seed_index == s)].sort_values("step")
            assert written.drop(columns=["arm", "seed_index"]).to_dict("records") == steps
    finally:
        torch.set_num_threads(before)
