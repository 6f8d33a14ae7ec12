from dataclasses import dataclass
from pathlib import Path

import pytest

from stages.core.io import read_json, write_json
from stages.core.stage import inp, out, run_stage, stage_main
from stages.core.trainer import TrainerConfig


@dataclass(frozen=True)
class ToyPaths:
    source: Path = inp()
    first: Path = out()
    second: Path = out()


def _fails_halfway(cfg, paths, ctx):
    write_json({"ok": 1}, paths.first)
    raise RuntimeError("boom after the first output")


def _succeeds(cfg, paths, ctx):
    write_json({"seed": ctx.seed, "profile": ctx.profile}, paths.first)
    write_json({}, paths.second)
    return {}


def _paths(tmp_path):
    return ToyPaths(source=tmp_path / "in.json", first=tmp_path / "o" / "a.json", second=tmp_path / "o" / "b.json")


def test_exception_leaves_no_partial_output(tmp_path, smoke_params):
    paths, timing = _paths(tmp_path), tmp_path / "timing.json"
    with pytest.raises(RuntimeError, match="boom"):
        run_stage("toy", "step", _fails_halfway, None, paths, smoke_params, timing)
    assert not paths.first.exists() and not paths.second.exists() and not timing.exists()


def test_success_writes_outputs_and_timing(tmp_path, smoke_params):
    paths, timing = _paths(tmp_path), tmp_path / "t" / "step.json"
    run_stage("toy", "step", _succeeds, None, paths, smoke_params, timing)
    assert read_json(paths.first) == {"seed": 0, "profile": "smoke"}
    t = read_json(timing)
    assert t["step"] == "step" and t["wall_time_s"] >= 0


def test_cli_refuses_bad_params_before_any_work(tmp_path, capsys):
    from tests.conftest import write_params

    params = write_params(tmp_path, threads=0)
    called = []
    with pytest.raises(SystemExit) as exit_info:
        stage_main("toy", "step", lambda *a: called.append(a), lambda p: None, ToyPaths,
                   ["--params", str(params), "--timing", str(tmp_path / "t.json"), "--source", "x",
                    "--first", str(tmp_path / "a"), "--second", str(tmp_path / "b")])
    assert exit_info.value.code == 2 and not called
    assert "params.threads" in capsys.readouterr().err


def test_trainer_config_validates_and_builds():
    cfg = TrainerConfig(max_steps=3)
    kwargs = cfg.trainer_kwargs()
    assert kwargs["deterministic"] is True and kwargs["accelerator"] == "cpu" and kwargs["max_steps"] == 3
    with pytest.raises(ValueError):
        TrainerConfig(max_steps=0)
    with pytest.raises(ValueError):
        TrainerConfig(max_steps=1, precision="8-bit")
