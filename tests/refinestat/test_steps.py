"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import pytest

from stages.core.config import ConfigError
from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.refinestat import config
from stages.refinestat.tasks import TASKS
from tests.conftest import write_params

PAPER = "refinestat"


def test_tasks_split_fit_and_heldout(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-data")
    tasks = read_parquet(smoke_repo.paths(f"{PAPER}-data").tasks)
    assert set(tasks.task) == set(cfg.tasks)
    for (task, split), g in tasks.groupby(["task", "split"]):
        fit = set(g[g.role == "fit"].row)
        assert fit, (task, split)


def test_programs_cover_every_arm_within_budget(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-synthesize").generate
    programs = read_parquet(smoke_repo.paths(f"{PAPER}-synthesize").programs)
    n_tasks = len(smoke_repo.config(f"{PAPER}-data").tasks)
    n_controls = 3 + 3          # expert, mis-specified, null; the scripted control through each method's loop
    assert len(programs) == cfg.n_seeds * n_tasks * (n_controls + len(cfg.methods) * cfg.n_programs)
    methods = programs[programs.arm.isin(cfg.methods)]
    assert (methods.tokens <= cfg.token_budget).all() and (methods.n_versions <= cfg.max_runs).all()
    experts = programs[programs.arm == "expert"]
    assert experts.runnable.all()
    assert (programs[~programs.runnable].predictive.isna()).all()
    scripted = programs[programs.arm == "scripted_refinestat"]
    assert (scripted.program == scripted.task.map(lambda t: "\n".join(TASKS[t].expert))).all()
    assert scripted.runnable.all() and (scripted.masked > 0).all()
    assert not programs[programs.arm == "scripted_syntax"].runnable.any()      # a misspelled distribution


def test_trace_logs_the_masked_draws(smoke_repo):
    trace = read_parquet(smoke_repo.paths(f"{PAPER}-synthesize").trace)
    masked = trace[(trace.arm == "scripted_refinestat") & (trace.event == "masked")]
    assert len(masked) > 0 and masked.reason.str.contains("does not exist").any()
    assert set(trace.event) <= {"masked", "dead_end", "resampled", "sandbox"}


def test_report_writes_a_claim(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS
    assert "run rate" in paths.report.read_text()


def test_refinement_rounds_must_fit_the_run_budget(tmp_path):
    params = write_params(tmp_path, **{f"{PAPER}.generate.max_runs": 1, f"{PAPER}.generate.refine_rounds": 2})
    with pytest.raises(ConfigError, match="refine_rounds"):
        config.load_synthesize(params)


def test_a_corrupted_task_table_is_refused(smoke_repo, tmp_path):
    tasks = read_parquet(smoke_repo.paths(f"{PAPER}-data").tasks)
    tasks.loc[0, "role"] = "test"
    bad = tmp_path / "tasks.parquet"
    write_parquet(tasks, bad)
    with pytest.raises(DataValidationError):
        smoke_repo.run(f"{PAPER}-synthesize", tasks=bad, programs=tmp_path / "p.parquet",
                       versions=tmp_path / "v.parquet", trace=tmp_path / "t.parquet")
    # a failed stage deletes its declared outputs: none of the shared workspace's may be among them
    assert smoke_repo.paths(f"{PAPER}-synthesize").trace.exists()


def test_a_wall_clock_limit_that_could_decide_is_refused(tmp_path):
    """The CPU-time limit decides a program's outcome; a wall limit under 3 x cpu_s would let load decide it."""
    params = write_params(tmp_path, **{"refinestat.sandbox.cpu_s": 45, "refinestat.sandbox.wall_s": 100})
    with pytest.raises(ConfigError, match=r"wall_s .* at least 3 x cpu_s"):
        config.load_synthesize(params)
    config.load_synthesize(write_params(tmp_path, **{"refinestat.sandbox.cpu_s": 45, "refinestat.sandbox.wall_s": 135}))
