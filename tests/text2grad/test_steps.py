"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.text2grad import config
from tests.smoke import report_outs

PAPER = "text2grad"


def test_data_tables_have_the_configured_sizes_and_valid_annotations(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-data")
    cfg = smoke_repo.config(f"{PAPER}-data")
    outputs = read_parquet(paths.outputs)
    assert (outputs.split == "sft").sum() == cfg.n_sft and (outputs.split == "rm_test").sum() == cfg.n_rm_test
    assert (outputs.n_words == outputs.output.str.split().str.len().fillna(0)).all()
    assert len(read_parquet(paths.sources)) == cfg.n_ppo + cfg.n_test


def test_reward_models_are_trained_per_seed_and_scored(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-reward_model")
    cfg = smoke_repo.config(f"{PAPER}-reward_model")
    assert {p.name for p in paths.models.iterdir()} == {
        "manifest.json", *(f"{n}_seed{s}.safetensors" for n in ("critique", "no_critique") for s in range(cfg.n_seeds))}
    ev = read_json(paths.evaluation)
    for name in ("critique", "no_critique"):
        assert [e["seed"] for e in ev[name]] == list(range(cfg.n_seeds))
        for e in ev[name]:
            assert 0 <= e["good"]["f1"] <= 1 and 0 <= e["poor"]["f1"] <= 1


def test_ppo_writes_a_curve_for_every_scheme_and_seed(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-ppo")
    curves = read_parquet(smoke_repo.paths(f"{PAPER}-ppo").curves)
    assert set(curves.scheme) == set(cfg.schemes) and set(curves.seed) == set(range(cfg.n_seeds))
    assert sorted(curves.step.unique()) == list(range(cfg.steps + 1))
    # every scheme starts from the same warm start and the same evaluation samples
    start = curves[curves.step == 0].groupby("seed").rouge_l.nunique()
    assert (start == 1).all()
    assert ((curves.rouge_p >= 0) & (curves.rouge_p <= 1) & (curves.rouge_r >= 0) & (curves.rouge_r <= 1)).all()


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"rouge_l.png", "fact_f1.png", "kl.png", "span_f1.png",
                                                       "length.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text
    # counts in the prose come from the run, not from the default profile
    data, ppo = smoke_repo.config(f"{PAPER}-data"), smoke_repo.config(f"{PAPER}-ppo")
    rm = smoke_repo.config(f"{PAPER}-reward_model")
    assert f"{ppo.steps} PPO steps per run, {ppo.n_seeds} seeds per scheme" in text
    assert f"trained from scratch on {data.n_rm_train} annotated noisy outputs" in text
    assert f"trains {rm.n_seeds} pairs of reward models" in text
    assert "## Rule history" in text and "Gate (positive control, not a claim)" in text
    assert f"−{ppo.omission_penalty:g} per source fact" in text


def test_corrupt_outputs_fail_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-data").outputs)
    bad.loc[2, "word_scores"] = "1 2 0"
    write_parquet(bad, tmp_path / "outputs.parquet")
    with pytest.raises(DataValidationError, match=r"text2grad\.outputs.*column 'word_scores'"):
        smoke_repo.run(f"{PAPER}-sft", outputs=tmp_path / "outputs.parquet", models=tmp_path / "sft")
    assert not (tmp_path / "sft").exists()


def test_missing_scheme_in_curves_is_an_error_not_a_pass(smoke_repo, tmp_path):
    curves = read_parquet(smoke_repo.paths(f"{PAPER}-ppo").curves)
    write_parquet(curves[curves.scheme != "dense"], tmp_path / "curves.parquet")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="rouge_text2grad_minus_dense"):
        smoke_repo.run(f"{PAPER}-report", curves=tmp_path / "curves.parquet", **outs)
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "plots").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"text2grad.ppo.lam": 1.5})
    with pytest.raises(ConfigError, match=r"text2grad\.ppo\.lam"):
        config.load_ppo(params)
    params = write_params(tmp_path, **{"text2grad.ppo.schemes": ["text2grad", "magic"]})
    with pytest.raises(ConfigError, match=r"text2grad\.ppo\.schemes"):
        config.load_ppo(params)


def test_reward_models_from_workers_equal_one_trained_in_this_process(smoke_repo):
    """The step spread its reward models over processes; each seeds itself, so retraining one here gives the same."""
    import torch

    from stages.core.config import load_global
    from stages.core.io import load_safetensors
    from stages.core.threads import cap_threads
    from stages.text2grad import reward_model
    from stages.text2grad.io import model_file

    paths = smoke_repo.paths(f"{PAPER}-reward_model")
    cfg = smoke_repo.config(f"{PAPER}-reward_model")
    shared = reward_model.read_inputs(cfg, paths, load_global(smoke_repo.params).seed)
    evaluation = read_json(paths.evaluation)
    variants = list(reward_model.VARIANTS)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        for s, name in [(0, variants[0]), (cfg.n_seeds - 1, variants[-1])]:
            state, scores, _ = reward_model.reward_model_run((s, name), shared)
            saved = load_safetensors(paths.models / model_file(name, s))
            assert saved.keys() == state.keys() and all(torch.equal(saved[k], state[k]) for k in state)
            assert scores == evaluation[name][s]
    finally:
        torch.set_num_threads(before)


def test_ppo_runs_from_workers_equal_runs_in_this_process(smoke_repo):
    """The step spread its PPO runs over processes; each seeds itself, so rerunning one here gives its curve."""
    import pandas as pd
    import torch

    from stages.core.config import load_global
    from stages.core.threads import cap_threads
    from stages.text2grad import ppo

    paths = smoke_repo.paths(f"{PAPER}-ppo")
    cfg = smoke_repo.config(f"{PAPER}-ppo")
    shared = ppo.read_inputs(cfg, paths, load_global(smoke_repo.params).seed)
    curves = read_parquet(paths.curves)
    before = torch.get_num_threads()
    try:
        cap_threads(cfg.max_threads)  # as in the step's workers
        # the last run of the step (an oracle arm, last seed) and the first (a reward-model arm, seed 0)
        for scheme, s in [(cfg.schemes[-1], cfg.n_seeds - 1), (cfg.schemes[0], 0)]:
            curve = ppo.ppo_run((scheme, s), shared)
            written = curves[(curves.scheme == scheme) & (curves.seed == s)].reset_index(drop=True)
            here = pd.DataFrame([{"scheme": scheme, "seed": s, **p} for p in curve])[ppo.COLUMNS]
            pd.testing.assert_frame_equal(written, here, check_exact=True)
    finally:
        torch.set_num_threads(before)
