"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import numpy as np
import pytest

from stages.assets.hypergraph_tables import load_hypergraphs
from stages.assets.manifest import AssetError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from tests.smoke import report_outs

PAPER = "relash"


def test_asset_holds_both_contact_data_sets(hypergraphs_asset, tmp_path):
    h = load_hypergraphs(hypergraphs_asset)
    assert set(h.contacts.dataset) == {"high_school", "workplace"}
    assert h.node_classes.groupby("dataset").node.nunique().to_dict() == {"high_school": 327, "workplace": 92}
    assert h.hyperedges.groupby("dataset").size().to_dict() == {"high_school": 7818, "workplace": 788}
    bad = tmp_path / "hypergraphs"
    bad.mkdir()
    for f in hypergraphs_asset.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    (bad / "contacts.parquet").write_bytes(b"corrupt")
    with pytest.raises(AssetError, match="dvc repro assets-hypergraphs"):
        load_hypergraphs(bad)


def test_hyperlinks_are_split_by_time_and_never_repeat(smoke_repo):
    links = read_parquet(smoke_repo.paths(f"{PAPER}-data").hyperlinks)
    cfg = smoke_repo.config(f"{PAPER}-data")
    for _, g in links.groupby("dataset"):
        assert len(g) == cfg.max_hyperlinks
        order = {"train": 0, "val": 1, "test": 2}
        assert (np.diff(g.split.map(order).to_numpy()) >= 0).all()
        assert g.groupby("split").first_t.max()["train"] <= g.groupby("split").first_t.min()["val"]
        assert not g.members.duplicated().any()


def test_evaluation_has_every_method_and_the_verdict_metrics(smoke_repo):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    cfg = smoke_repo.config(f"{PAPER}-train")
    assert set(ev["per_seed"]) == {"structure_ratio", "attribute_ratio", "frechet_ratio", "memorisation_rate",
                                   "control_ratio"}
    assert all(len(v) == cfg.n_seeds for v in ev["per_seed"].values())
    methods = {r["method"] for r in ev["rows"]}
    assert methods == {"heldout_real", "null", "gaussian", "vae", "relash"}
    assert all(r["memorisation"] == 0 for r in ev["rows"] if r["method"] == "heldout_real")


def test_report_writes_claim_metrics_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.wall_time_s > 0
    assert {p.name for p in paths.plots.iterdir()} == {"scores.png", "sizes_attributes.png", "training.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    cfg = smoke_repo.config(f"{PAPER}-train")
    assert f"k = {cfg.latent_dim})" in text and f"({cfg.fit_steps} full-batch steps" in text


def test_corrupt_hyperlinks_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").hyperlinks)
    bad.loc[0, "time_of_day"] = 30.0
    write_parquet(bad, tmp_path / "bad.parquet")
    target = tmp_path / "models"
    with pytest.raises(DataValidationError, match=r"relash\.hyperlinks.*column 'time_of_day'"):
        smoke_repo.run(f"{PAPER}-train", hyperlinks=tmp_path / "bad.parquet", models=target,
                       train_log=tmp_path / "log.parquet")
    assert not target.exists()


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["frechet_ratio"]
    write_json(ev, tmp_path / "ev.json")
    with pytest.raises(KeyError, match="frechet_ratio"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **report_outs(tmp_path))
    assert not (tmp_path / "c.json").exists()


def test_fits_from_workers_equal_a_fit_in_this_process(smoke_repo, tmp_path):
    """The step spread its fits over processes; each seeds itself, so refitting one here gives the same file."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.relash.io import model_file, read_hyperlinks, read_nodes, save_models
    from stages.relash.train import Shared, fit_run

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    seed = load_global(smoke_repo.params).seed
    shared = Shared(cfg, read_hyperlinks(paths.hyperlinks), read_nodes(paths.nodes), seed)
    job = (str(shared.hyperlinks.dataset.unique()[-1]), cfg.n_seeds - 1)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        fitted, rows = fit_run(job, shared)
    finally:
        torch.set_num_threads(before)
    save_models(fitted, tmp_path / "refit.safetensors")
    saved, refit = load_safetensors(model_file(paths.models, *job)), load_safetensors(tmp_path / "refit.safetensors")
    assert saved.keys() == refit.keys() and all(torch.equal(saved[k], refit[k]) for k in saved)
    log = read_parquet(paths.train_log)
    mine = log[(log.dataset == job[0]) & (log.seed_index == job[1])]
    assert sorted(r["loss"] for r in rows) == sorted(mine.loss.tolist())
