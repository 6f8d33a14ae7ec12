"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import json

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.sysmobench import config
from tests.conftest import write_params

PAPER = "sysmobench"


def test_traces_hold_every_execution_from_its_initial_state(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-traces")
    traces = read_parquet(smoke_repo.paths(f"{PAPER}-traces").traces)
    assert len(traces) == cfg.n_seeds * len(cfg.systems) * cfg.n_traces * (cfg.n_steps + 1)
    assert set(traces[traces.step == 0].action) == {"Init"}
    assert set(json.loads(traces.state.iloc[0])) == {"locked", "pc"}


def test_evaluate_scores_the_reference_and_its_rewritings_at_one_and_each_drawn_mutant(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-evaluate")
    scores = read_parquet(smoke_repo.paths(f"{PAPER}-evaluate").scores)
    for kind in ("reference", "renamed", "reordered"):
        rows = scores[scores.kind == kind]
        assert len(rows) == cfg.traces.n_seeds * len(cfg.traces.systems)
        assert (rows[["syntax", "runtime", "conformance", "invariants"]] == 1.0).all().all(), kind
    renamed = scores[scores.kind == "renamed"]
    assert all(json.loads(r) for r in renamed.renaming) and "lockWord" in renamed.spec.iloc[0]
    mutants = scores[scores.kind == "mutant"]
    assert set(mutants.operator) == set(cfg.evaluate.operators)
    assert not mutants.outcomes.str.contains("timeout").any()   # bounded: every check ends before its limit


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke"
    assert {p.name for p in paths.plots.iterdir()} == {"metrics_by_candidate.png", "checks_per_seed.png"}
    assert f"**Verdict: {claim.verdict}**" in paths.report.read_text()
    assert set(read_json(paths.metrics)["per_seed"]) <= set(config.METRICS)


def test_corrupt_traces_table_fails_validation_naming_the_column(smoke_repo, tmp_path):
    bad = read_parquet(smoke_repo.paths(f"{PAPER}-traces").traces)
    bad.loc[1, "action"] = "Teleport"
    write_parquet(bad, tmp_path / "traces.parquet")
    with pytest.raises(DataValidationError, match=r"sysmobench\.traces.*column 'action'"):
        smoke_repo.run(f"{PAPER}-evaluate", traces=tmp_path / "traces.parquet", scores=tmp_path / "s.parquet")
    assert not (tmp_path / "s.parquet").exists()


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    params = write_params(tmp_path, **{"sysmobench.traces.systems": ["spinlock", "spinlock"]})
    with pytest.raises(ConfigError, match=r"sysmobench\.traces"):
        config.load_traces(params)
    params = write_params(tmp_path, **{"sysmobench.evaluate.operators": ["flip_coin"]})
    with pytest.raises(ConfigError, match=r"sysmobench\.evaluate"):
        config.load_evaluate(params)
    params = write_params(tmp_path, **{"sysmobench.evaluate.cpu_s": 30, "sysmobench.evaluate.wall_s": 60})
    with pytest.raises(ConfigError, match=r"wall_s .* at least 3 x cpu_s"):     # the wall clock must not decide
        config.load_evaluate(params)
    params = write_params(tmp_path, **{"sysmobench.report.gates": ["no such check"]})
    with pytest.raises(ConfigError, match=r"gates"):
        config.load_report(params)
