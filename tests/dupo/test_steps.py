"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.dupo import config, rl
from tests.conftest import write_params

PAPER = "dupo"


def test_data_splits_are_disjoint_and_the_filter_matters(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    problems, duals = read_parquet(paths.problems), read_parquet(paths.duals)
    assert problems.groupby("split").size().to_dict() == {"sft": cfg.n_sft, "rl": cfg.n_rl, "val": cfg.n_val,
                                                          "test": cfg.n_test}
    keys = problems.signature + ":" + problems.numbers
    assert keys.is_unique                                           # no expression in two splits
    assert 1 - duals.passes_filter.mean() >= cfg.min_filter_fail_share
    assert (duals.passes_filter == (duals.n_solutions == 1)).all()
    assert len(duals) == problems.numbers.str.count(",").add(1).sum()   # one dual per number


def test_data_refuses_a_generator_whose_filter_rejects_too_little(smoke_repo, tmp_path):
    params = write_params(tmp_path, **{"dupo.data.p_final_box": 0.0, "dupo.data.min_filter_fail_share": 0.9})
    with pytest.raises(DataValidationError, match=r"dupo\.duals.*passes_filter"):
        smoke_repo.run(f"{PAPER}-data", params=params, problems=tmp_path / "p.parquet", duals=tmp_path / "d.parquet")
    assert not (tmp_path / "p.parquet").exists()


def test_sft_chooses_a_checkpoint_on_validation(smoke_repo):
    folder = smoke_repo.paths(f"{PAPER}-sft").models
    manifest = read_json(folder / "manifest.json")
    assert manifest["chosen"] in manifest["val_curve"]
    assert manifest["n_params"] <= manifest["model"]["max_params"]
    assert {p.name for p in folder.iterdir()} >= {"model.safetensors", "tokenizer.json", "manifest.json"}


def test_rl_runs_every_method_and_seed_for_every_step(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-rl")
    cfg = smoke_repo.config(f"{PAPER}-rl")
    log = read_parquet(paths.rl_log)
    expected = {rl.run_name(m, s) for m in cfg.methods for s in range(cfg.n_seeds)}
    assert set(log.run) == expected
    assert log.groupby("run").step.max().eq(cfg.steps).all()
    assert {p.stem for p in paths.models.glob("*.safetensors")} == expected
    oracle, dupo = log[log.method == "oracle"], log[log.method == "dupo"]
    assert (oracle.reward == oracle.oracle_accuracy).all() and (dupo.reward == dupo.dual_reward).all()


def test_evaluation_has_paired_per_seed_metrics(smoke_repo):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    n_seeds = smoke_repo.config(f"{PAPER}-rl").n_seeds
    for key in ("dupo_minus_sft", "oracle_minus_sft", "dupo_minus_nofilter", "dual_minus_majority_at_8",
                "sft_primal_accuracy_low", "sft_dual_accuracy"):
        assert len(ev["per_seed"][key]) == n_seeds
    for r in ev["rerank"]["per_seed"]:      # pass@N is a ceiling for every selection rule and grows with N
        for key in ("dual", "majority", "random"):
            assert all(a <= p + 1e-12 for a, p in zip(r[key], r["pass"], strict=True))
        assert r["pass"] == sorted(r["pass"])
    assert 0 <= ev["filter"]["fail_share"] <= 1


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    names = {p.name for p in paths.plots.iterdir()}
    assert {"test_accuracy.png", "reward_curves.png", "rollout_accuracy.png", "rerank.png",
            "sft_validation.png"} <= names
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "## Sizing history" in text
    data_cfg = smoke_repo.config(f"{PAPER}-data")
    assert f"{data_cfg.n_sft} SFT" in text          # counts come from the run's params
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    assert ev["n_rl_pool"] == ev["n_rl_split"] > 0                  # no RL problem is selected with its label
    assert f"all {ev['n_rl_pool']:,} of {ev['n_rl_split']:,} RL problems" in text
    assert f"same {ev['n_rerank']} problems: {ev['rerank']['sft_greedy']:.3f}" in text  # the greedy baseline
    assert "**label-free**" in text


def test_report_depends_on_the_sft_manifest_not_the_weights(smoke_repo):
    assert smoke_repo.paths(f"{PAPER}-report").sft.name == "manifest.json"


def test_corrupt_problems_table_is_named(smoke_repo, tmp_path):
    problems = read_parquet(smoke_repo.paths(f"{PAPER}-data").problems).drop(columns=["answer"])
    write_parquet(problems, tmp_path / "p.parquet")
    with pytest.raises(DataValidationError, match=r"dupo\.problems"):
        smoke_repo.run(f"{PAPER}-sft", problems=tmp_path / "p.parquet", models=tmp_path / "m",
                       sft_log=tmp_path / "l.parquet")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("dupo.data.min_ops", 5, "min_ops"),
    ("dupo.evaluate.rerank_ns", [1, 2, 4], "rerank_ns"),
    ("dupo.rl.methods", ["dupo", "dupo"], "methods"),
    ("dupo.sft.model.n_heads", 3, "n_heads"),
    ("dupo.rl.lr", -0.1, "dupo.rl.lr"),
])
def test_bad_params_are_refused(tmp_path, key, value, needle):
    params = write_params(tmp_path, **{key: value})
    with pytest.raises(ConfigError, match=needle):
        for load in (config.load_data, config.load_sft, config.load_rl, config.load_evaluate):
            load(params)


def test_rl_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its runs over processes; each run seeds itself, so rerunning one here gives its weights."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.dupo.io import read_tables

    paths = smoke_repo.paths(f"{PAPER}-rl")
    cfg = smoke_repo.config(f"{PAPER}-rl")
    pool = rl.build_pool(*read_tables(paths), cfg.domains)
    spec = config.ModelConfig(**read_json(paths.sft / "manifest.json")["model"])
    shared = rl.Shared(cfg, pool, paths.sft, spec, load_global(smoke_repo.params).seed)
    log = read_parquet(paths.rl_log)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for job in [(cfg.methods[-1], cfg.n_seeds - 1), (cfg.methods[0], 0)]:
            state, steps = rl.rl_run(job, shared)
            saved = load_safetensors(paths.models / f"{rl.run_name(*job)}.safetensors")
            assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
            assert [s["loss"] for s in steps] == log[log.run == rl.run_name(*job)].sort_values("step").loss.tolist()
    finally:
        torch.set_num_threads(before)
