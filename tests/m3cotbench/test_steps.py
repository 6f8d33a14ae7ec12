"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.m3cotbench import config
from stages.m3cotbench.expectations import MODELS
from stages.m3cotbench.scene import TASKS
from tests.conftest import write_params

PAPER = "m3cotbench"


def test_scenes_are_sized_per_split(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    scenes = read_parquet(paths.scenes)
    assert scenes.split.value_counts().to_dict() == {"train": cfg.n_train, "val": cfg.n_val, "test": cfg.n_test}


def test_outputs_cover_every_model_seed_task_and_sample(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train").train
    n_test = smoke_repo.config(f"{PAPER}-data").n_test
    outputs = read_parquet(paths.outputs)
    assert len(outputs) == cfg.n_seeds * len(MODELS) * n_test * len(TASKS) * (cfg.n_samples + 1)
    direct = outputs[outputs.model == "direct"].text
    assert direct.str.startswith("Answer:").all() or (direct == "").any()
    assert (outputs[outputs.model == "shortcut"].text.str.startswith("Answer:")).all()


def test_scores_and_matcher(smoke_repo):
    scores = read_parquet(smoke_repo.paths(f"{PAPER}-score").scores)
    matcher = read_json(smoke_repo.paths(f"{PAPER}-score").matcher)
    assert matcher["threshold"] in matcher["grid"]
    rb = scores[scores.model == "rule_based"]
    assert (rb.correct == 1).all() and (scores[scores.model == "unfaithful"].correct == 1).all()
    assert (scores[scores.model == "shortcut"].f1 == 0).all()
    a = scores[scores.model == "cot"].sort_values(["seed_index", "scan", "task"]).correct.to_numpy()
    b = scores[scores.model == "cot_shuffled"].sort_values(["seed_index", "scan", "task"]).correct.to_numpy()
    assert (a == b).all()                        # the shuffled control keeps the CoT model's answers


def test_report_writes_a_claim(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS
    assert "Leaderboard" in paths.report.read_text()


def test_a_bad_pre_registered_task_is_refused(tmp_path):
    params = write_params(tmp_path, **{f"{PAPER}.score.cot_hurts_tasks": ["no_such_task"]})
    with pytest.raises(ConfigError):
        config.load_score(params)


def test_a_corrupted_scene_table_is_refused(smoke_repo, tmp_path):
    paths = smoke_repo.paths(f"{PAPER}-data")
    scenes = read_parquet(paths.scenes)
    scenes.loc[0, "shape"] = "triangle"
    bad = tmp_path / "scenes.parquet"
    write_parquet(scenes, bad)
    with pytest.raises(DataValidationError):
        smoke_repo.run(f"{PAPER}-train", scenes=bad, models=tmp_path / "m.safetensors",
                       outputs=tmp_path / "o.parquet", training=tmp_path / "t.json")
