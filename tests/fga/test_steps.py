"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import load_safetensors, read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.fga import config
from stages.fga.report import METHODS
from tests.conftest import write_params

PAPER = "fga"


def test_splits_are_disjoint_and_sized(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-pretrain")
    cfg = smoke_repo.config(f"{PAPER}-pretrain")
    splits = read_parquet(paths.splits)
    assert not splits.duplicated(["source", "index"]).any()           # no image in two roles
    assert set(splits[splits.role == "test"].source) == {"test"}
    assert set(splits[splits.role != "test"].source) == {"train"}
    sizes = splits.groupby("role").size().to_dict()
    assert sizes == {"clip": 10 * cfg.n_clip_per_class, "pool": 10 * cfg.n_fewshot_pool_per_class,
                     "val": 10 * cfg.n_val_per_class, "test": 10 * cfg.n_test_per_class}
    assert load_safetensors(paths.clip)["class_features"].shape == (10, 384)


def test_views_cover_every_condition_with_every_view(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-views")
    cfg = smoke_repo.config(f"{PAPER}-views")
    table, emb = read_parquet(paths.views), load_safetensors(paths.embeddings)
    v = cfg.views
    n_test, n_val = 10 * cfg.clip.n_test_per_class, 10 * cfg.clip.n_val_per_class
    rows = table[table.tensor == "views"]
    assert len(rows) == n_test * (1 + len(v.test_corruptions) * len(v.severities)) + \
        n_val * len(v.val_corruptions) * len(v.severities)
    assert set(rows[rows.role == "val"].kind) == set(v.val_corruptions)
    assert set(rows[rows.role == "test"].kind) == {"clean", *v.test_corruptions}
    assert emb["views"].shape[:2] == (len(rows), v.n_views)
    assert emb["pool"].shape[0] == 10 * cfg.clip.n_fewshot_pool_per_class
    # augmented views differ from the image itself; embeddings are unit vectors
    shifted = emb["views"][rows[rows.kind != "clean"].row.to_numpy()]
    assert (shifted[:, 0] - shifted[:, 1]).abs().sum() > 0
    assert ((emb["views"].norm(dim=-1) - 1).abs() < 1e-4).all()


def test_adapt_scores_every_method_seed_and_shift_and_counts_passes(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-adapt")
    cfg = smoke_repo.config(f"{PAPER}-adapt")
    results, ad = read_parquet(paths.results), read_json(paths.adaptation)
    shifted = results[results.kind != "clean"]
    assert len(shifted) == cfg.adapt.n_seeds * len(METHODS) * len(cfg.test_corruptions) * len(cfg.severities)
    assert set(results[results.kind == "clean"].method) == {"zero_shot", "coop", "sapt"}
    assert set(results.split) == {"test"}
    for seed in ad["seeds"]:
        passes = seed["passes_per_image"]
        assert passes["zero_shot"] == {"image_forward": 1, "text_forward": 1, "text_backward": 0}
        assert passes["fga"]["text_backward"] == 0 and passes["zero"]["text_backward"] == 0
        assert passes["tpt"]["text_backward"] == 1
        n_shifted = len(cfg.test_corruptions) * len(cfg.severities) * ad["n_test_images"]
        # the prompt and its perturbations go through the text side once per seed, shared by every test image
        assert passes["fga"]["text_forward"] == pytest.approx((1 + cfg.adapt.n_perturbations) / n_shifted)
        assert passes["fga"]["image_forward"] == cfg.n_views
        assert seed["text_passes_fga_over_tpt"] == pytest.approx(passes["fga"]["text_forward"] / 5)
        assert "coop" in seed["validation_best"] and "coop" not in seed["knobs"]
        assert seed["knobs"]["sapt"]["rho"] == seed["knobs"]["fga"]["rho"]


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"accuracy_by_shift.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    assert set(read_json(paths.metrics)["per_seed"]) == set(config.METRICS)
    assert "## Rule history" in text


def test_corrupt_views_table_fails_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-views").views)
    bad.loc[0, "kind"] = "snow"
    write_parquet(bad, tmp_path / "views.parquet")
    with pytest.raises(DataValidationError, match=r"fga\.views.*column 'kind'"):
        smoke_repo.run(f"{PAPER}-adapt", views=tmp_path / "views.parquet", results=tmp_path / "r.parquet",
                       adaptation=tmp_path / "a.json")
    assert not (tmp_path / "r.parquet").exists() and not (tmp_path / "a.json").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"fga.views.val_corruptions": ["blur"]})
    with pytest.raises(ConfigError, match=r"fga\.views"):
        config.load_views(params)
    params = write_params(tmp_path, **{"fga.clip.eval_template": "a picture of a {}."})
    with pytest.raises(ConfigError, match=r"fga\.clip"):
        config.load_clip(params)
    params = write_params(tmp_path, profile="default", **{"fga.adapt.keep_grid": [64]})  # more than n_views
    with pytest.raises(ConfigError, match=r"fga\.adapt"):
        config.load_adapt(params)
    params = write_params(tmp_path, **{"fga.report.gates": ["no such check"]})
    with pytest.raises(ConfigError, match=r"gates"):
        config.load_report(params)


def test_views_conditions_from_workers_equal_conditions_in_this_process(smoke_repo):
    """Each condition seeds itself, so recomputing one here (and over 2 processes) gives the written embeddings."""
    import torch

    from stages.assets.image_encoder import load_image_encoder
    from stages.assets.loaders import load_images
    from stages.core.config import load_global
    from stages.core.threads import cap_threads
    from stages.core.workers import map_runs
    from stages.fga import views
    from stages.fga.io import load_clip_model, read_splits

    paths = smoke_repo.paths(f"{PAPER}-views")
    cfg = smoke_repo.config(f"{PAPER}-views")
    data, splits = load_images(paths.images), read_splits(paths.splits)
    model, extra = load_clip_model(paths.clip, cfg.clip.embed_dim, cfg.clip.hidden)
    source = {"train": data.train_images, "test": data.test_images}
    parts = {r: splits[splits.role == r] for r in ("pool", "test", "val")}
    images = {r: source[p.source.iloc[0]][p["index"].to_numpy()] for r, p in parts.items()}
    shared = views.Shared(cfg, load_image_encoder(paths.image_encoder), model, extra["feature_mean"],
                          extra["feature_std"], images, load_global(smoke_repo.params).seed)
    table, written = read_parquet(paths.views), load_safetensors(paths.embeddings)
    conditions = views.conditions(cfg)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.views.max_threads)  # as in the step's workers
        assert torch.equal(views.condition_run(("pool", "clean", 0, 1), shared), written["pool"])
        role, kind, severity, _ = conditions[-1]
        rows = table[(table.tensor == "views") & (table.role == role) & (table.kind == kind)
                     & (table.severity == severity)].row.to_numpy()
        assert torch.equal(views.condition_run(conditions[-1], shared), written["views"][rows])
        jobs = [conditions[0], conditions[1]]  # the clean test condition and the first shifted one
        in_process = [views.condition_run(job, shared) for job in jobs]
        from_workers = map_runs(views.condition_run, jobs, shared, threads=2, max_threads=1, desc="t")
        assert all(torch.equal(a, b) for a, b in zip(in_process, from_workers, strict=True))
    finally:
        torch.set_num_threads(before)
