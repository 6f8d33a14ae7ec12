"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest
import torch

from stages.core.gx import DataValidationError
from stages.core.io import load_safetensors, read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.ndm.config import METHODS
from tests.smoke import report_outs

PAPER = "ndm"


def test_toy_scores_every_method_on_every_seed_with_shared_sizes(smoke_repo):
    df = read_parquet(smoke_repo.paths(f"{PAPER}-toy").toy_results)
    cfg = smoke_repo.config(f"{PAPER}-toy")
    assert len(df) == cfg.n_seeds * (len(METHODS) + 1)
    for _, seed in df[df.method != "oracle"].groupby("seed"):
        assert seed.sizes.nunique() == 1  # baselines are cut into NDM's sizes
        assert sum(map(int, seed.sizes.iloc[0].split(","))) == cfg.hidden


def test_fit_and_patch_outputs_are_consistent(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-patch")
    sub = load_safetensors(paths.subspaces)
    effects = read_parquet(paths.patch_effects)
    kept = read_parquet(paths.competence)
    assert set(effects.prompt_id) == set(kept[kept.kept].prompt_id)
    for seed, sizes in ((int(k.split("/")[1]), v.tolist()) for k, v in sub.items() if k.startswith("sizes/")):
        for m in METHODS:
            r = sub[f"{m}/{seed}"].double()
            assert (r.T @ r - torch.eye(len(r), dtype=r.dtype)).abs().max() < 1e-4
            rows = effects[(effects.seed == seed) & (effects.method == m)]
            assert rows.groupby("prompt_id").subspace.count().eq(len(sizes)).all()


def test_prompts_for_fitting_and_patching_are_disjoint(smoke_repo):
    df = read_parquet(smoke_repo.paths(f"{PAPER}-prompts").prompts)
    assert not set(df[df.split == "fit"].text) & set(df[df.split == "patch"].text)


def test_report_writes_claim_metrics_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.wall_time_s > 0
    metrics = read_json(paths.metrics)
    assert {"toy_ari_margin", "lm_gini_margin", "toy_oracle_ari"} <= set(metrics["per_seed"])
    assert {p.name for p in paths.plots.iterdir()} == {"toy.png", "lm_gini.png"}
    text = paths.report.read_text()
    cfg = smoke_repo.config(f"{PAPER}-toy")
    assert f"**Verdict: {claim.verdict}**" in text and f"{cfg.n_groups} groups of {cfg.group_size}" in text


def test_corrupt_prompts_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-prompts").prompts)
    bad.loc[0, "split"] = "test"
    write_parquet(bad, tmp_path / "bad.parquet")
    outs = {"activations": tmp_path / "a.safetensors", "competence": tmp_path / "c.parquet"}
    with pytest.raises(DataValidationError, match=r"ndm\.prompts.*column 'split'"):
        smoke_repo.run(f"{PAPER}-activations", prompts=tmp_path / "bad.parquet", **outs)
    assert not outs["activations"].exists()


def test_missing_metric_table_is_an_error_not_a_pass(smoke_repo, tmp_path):
    toy = read_parquet(smoke_repo.paths(f"{PAPER}-toy").toy_results)
    write_parquet(toy[toy.method != "oracle"], tmp_path / "toy.parquet")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="oracle"):
        smoke_repo.run(f"{PAPER}-report", toy_results=tmp_path / "toy.parquet", **outs)
    assert not (tmp_path / "c.json").exists()
