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


def _train_shared(smoke_repo):
    """The step's shared inputs, read from the smoke DAG's tables as the step reads them."""
    from stages.core.config import load_global
    from stages.m3cotbench import train
    from stages.m3cotbench.io import read_images, read_scenes
    from stages.m3cotbench.model import vocabulary

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train").train
    scenes = read_scenes(paths.scenes)
    split = {s: scenes[scenes.split == s] for s in ("train", "val", "test")}
    return train.Shared(cfg, read_images(paths.images, len(scenes)), split["train"], split["val"], split["test"],
                        vocabulary(), load_global(smoke_repo.params).seed)


def test_train_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its (seed, model) runs over processes; each seeds itself, so rerunning one here gives its
    weights, training record and texts."""
    import torch

    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.m3cotbench import train

    paths = smoke_repo.paths(f"{PAPER}-train")
    shared = _train_shared(smoke_repo)
    cfg = shared.cfg
    saved = load_safetensors(paths.models)
    training = read_json(paths.training)
    outputs = read_parquet(paths.outputs)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for seed_index, kind in [(cfg.n_seeds - 1, "cot"), (0, "direct")]:
            record, weights, texts = train.model_run((seed_index, kind), shared)
            assert record in training
            assert weights.keys() <= saved.keys() and all(torch.equal(saved[k], weights[k]) for k in weights)
            assert len([k for k in saved if k.startswith(f"seed{seed_index}.{kind}.")]) == len(weights)
            written = outputs[(outputs.seed_index == seed_index) & (outputs.model == kind)]
            assert [written[written["sample"] == i].text.tolist() for i in range(cfg.n_samples + 1)] == texts
    finally:
        torch.set_num_threads(before)


def test_train_runs_are_identical_in_this_process_and_in_workers(smoke_repo):
    """Each run seeds itself from its job, so the results do not depend on how many processes ran them."""
    import torch

    from stages.m3cotbench import train
    from tests.runs import in_one_and_two_processes

    shared = _train_shared(smoke_repo)
    jobs = [(0, "cot"), (1, "direct"), (0, "direct")]
    one, two = in_one_and_two_processes(train.model_run, jobs, shared)
    for (r1, w1, t1), (r2, w2, t2) in zip(one, two, strict=True):
        assert r1 == r2 and t1 == t2 and w1.keys() == w2.keys()
        assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert one[1][0]["loss"] != one[2][0]["loss"]  # the seeds differ, so a run that ignored its job would fail
