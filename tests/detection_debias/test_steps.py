"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.detection_debias import config
from stages.detection_debias.config import ARMS
from tests.conftest import write_params

PAPER = "detection_debias"


def test_scenes_are_sized_per_split(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    objects = read_parquet(paths.objects)
    counts = objects.groupby("split").image.nunique().to_dict()
    assert counts == {"train": cfg.n_train, "val": cfg.n_val, "test": cfg.n_test}


def test_generator_step_logs_its_errors(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-generator")
    cfg = smoke_repo.config(f"{PAPER}-generator")
    log = read_json(paths.generator_log)
    assert len(log["loss"]) == cfg.generator.steps // cfg.generator.log_every
    assert 0 < log["val_l1"] < 1 and 0 < log["val_l1_untrained"] < 1 and log["n_train"] == cfg.data.n_train


def test_layout_accuracy_covers_every_seed_and_split(smoke_repo):
    training = read_json(smoke_repo.paths(f"{PAPER}-train").training)
    n_seeds = smoke_repo.config(f"{PAPER}-train").detector.n_seeds
    acc = training["layout_accuracy"]
    assert sorted((r["seed_index"], r["split"]) for r in acc) == sorted(
        (s, sp) for s in range(n_seeds) for sp in ("val", "test"))
    assert all(0 <= r[k] <= 1 for r in acc for k in ("generated", "procedural"))


def test_groups_and_layouts_cover_every_seed_and_arm(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-baseline")
    cfg = smoke_repo.config(f"{PAPER}-baseline")
    groups = read_parquet(paths.groups)
    assert len(groups) == cfg.detector.n_seeds * cfg.data.bins().n_groups
    for s in range(cfg.detector.n_seeds):
        g = groups[groups.seed_index == s]
        assert g.p_rs.sum() == pytest.approx(1.0) and g.p_inverse_frequency.sum() == pytest.approx(1.0)
    layouts = read_parquet(paths.layouts)
    per_arm = layouts.groupby(["seed_index", "arm"]).image.nunique()
    assert (per_arm == cfg.augment.n_synthetic).all() and len(per_arm) == 3 * cfg.detector.n_seeds


def test_ap_covers_every_arm_and_split(smoke_repo):
    ap = read_parquet(smoke_repo.paths(f"{PAPER}-train").ap)
    overall = ap[ap.group == -1]
    assert set(overall.arm) == set(ARMS) and set(overall.split) == {"val", "test"}
    assert ap.ap.between(0, 1).all()


def test_report_writes_a_claim(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS
    assert "Test mAP per arm" in paths.report.read_text()
    assert sorted(read_json(paths.metrics)["per_seed"]) == sorted(config.METRICS)


@pytest.mark.parametrize(("key", "value"), [("data.class_probs", [0.5, 0.5, 0.5, 0.5]),
                                            ("data.size_ranges", [[5, 12], [11, 15], [20, 28]]),
                                            ("augment.tau", 0.0)])
def test_bad_params_are_refused(tmp_path, key, value):
    params = write_params(tmp_path, **{f"{PAPER}.{key}": value})
    with pytest.raises(ConfigError, match=key.split(".")[0]):
        config.load_baseline(params)


@pytest.mark.parametrize(("key", "value"), [("generator.steps", 0), ("generator.width", 1), ("generator.lr", 0.0)])
def test_bad_generator_params_are_refused(tmp_path, key, value):
    params = write_params(tmp_path, **{f"{PAPER}.{key}": value})
    with pytest.raises(ConfigError, match=key):
        config.load_generator(params)


def test_a_corrupted_object_table_is_refused(smoke_repo, tmp_path):
    paths = smoke_repo.paths(f"{PAPER}-data")
    objects = read_parquet(paths.objects)
    objects.loc[0, "x1"] = objects.loc[0, "x0"]        # an empty box
    bad = tmp_path / "objects.parquet"
    write_parquet(objects, bad)
    with pytest.raises(DataValidationError):
        smoke_repo.run(f"{PAPER}-baseline", objects=bad, baseline=tmp_path / "b.safetensors",
                       groups=tmp_path / "g.parquet", layouts=tmp_path / "l.parquet",
                       baseline_log=tmp_path / "log.json")


def test_low_diversity_class_equal_to_rare_class_is_refused(tmp_path):
    params = write_params(tmp_path, **{f"{PAPER}.data.low_diversity_class": "cross",
                                       f"{PAPER}.data.rare_class": "cross"})
    with pytest.raises(ConfigError, match=rf"{PAPER}\.data.*low_diversity_class"):
        config.load_data(params)


def test_report_gives_the_rule_history(smoke_repo):
    text = smoke_repo.paths(f"{PAPER}-report").report.read_text()
    assert "## Rule history" in text and "Under the provisional rule this run's verdict would be" in text
    assert "Student-t 95% interval of each check" in text   # the table itself needs two seeds or more


def test_detectors_from_workers_equal_a_detector_trained_in_this_process(smoke_repo):
    """The step spread its detectors over processes; each seeds itself, so retraining one here gives its weights."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.detection_debias import train

    paths = smoke_repo.paths(f"{PAPER}-train")
    cfg = smoke_repo.config(f"{PAPER}-train")
    shared = train.read_inputs(cfg, paths, load_global(smoke_repo.params).seed)
    saved = load_safetensors(paths.models)
    logged = {(r["seed_index"], r["arm"]): r for r in read_json(paths.training)["arms"]}
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.detector.max_threads)  # as in the step's workers
        for job in [(0, ARMS[1]), (cfg.detector.n_seeds - 1, ARMS[-1])]:
            state, losses, n_synthetic = train.detector_run(job, shared)
            prefix = f"seed{job[0]}.{job[1]}."
            mine = {k[len(prefix):]: v for k, v in saved.items() if k.startswith(prefix)}
            assert mine.keys() == state.keys() and all(torch.equal(mine[k], state[k]) for k in state)
            assert losses == logged[job]["loss"] and n_synthetic == logged[job]["n_synthetic"]
    finally:
        torch.set_num_threads(before)
