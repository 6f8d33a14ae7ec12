import sys
import time
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
    assert t["cpu_time_s"] >= 0 and t["threads"] >= 1 and t["load_average_1min"] >= 0


def test_timing_records_the_threads_a_capped_step_ran_with(tmp_path, smoke_params):
    import torch

    from stages.core.threads import cap_threads
    from tests.conftest import write_params

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)

        def capped(cfg, paths, ctx):
            cap_threads(1)
            return _succeeds(cfg, paths, ctx)

        timing = tmp_path / "t" / "capped.json"
        run_stage("toy", "step", capped, None, _paths(tmp_path), write_params(tmp_path, threads=2), timing)
        assert read_json(timing)["threads"] == 1
    finally:
        torch.set_num_threads(before)


def _draw(job: int, shared: None) -> int:
    return job * job


def test_timing_records_the_worker_processes_and_the_other_work_beside_the_step(tmp_path):
    """``processes`` is the peak number of map_runs workers (1 without any); ``other_cpu_s`` is the machine's busy
    CPU seconds over the step less the step's own: a busy neighbour for the whole step shows in it."""
    import subprocess

    from stages.core.workers import map_runs
    from tests.conftest import write_params

    params = write_params(tmp_path, threads=2)

    def with_workers(cfg, paths, ctx):
        assert map_runs(_draw, [1, 2, 3], None, threads=2, max_threads=1, desc="draws") == [1, 4, 9]
        return _succeeds(cfg, paths, ctx)

    def beside_a_neighbour(cfg, paths, ctx):
        end = time.perf_counter() + 1.5
        while time.perf_counter() < end:  # the step's own CPU, while the neighbour burns its own
            pass
        return _succeeds(cfg, paths, ctx)

    first, second, third = (tmp_path / "t" / f"{n}.json" for n in ("workers", "alone", "neighbour"))
    run_stage("toy", "step", with_workers, None, _paths(tmp_path), params, first)
    run_stage("toy", "step", _succeeds, None, _paths(tmp_path), params, second)
    neighbour = subprocess.Popen([sys.executable, "-c", "import time\nend = time.perf_counter() + 3\n"
                                  "while time.perf_counter() < end: pass"])
    try:
        run_stage("toy", "step", beside_a_neighbour, None, _paths(tmp_path), params, third)
    finally:
        neighbour.wait()
    assert read_json(first)["processes"] == 2 and read_json(second)["processes"] == 1  # reset per step
    t = read_json(third)
    # the neighbour was busy for the step's whole 1.5 s (a 2-core machine can share it out at worst half and half)
    assert t["other_cpu_s"] >= 0.5 and t["cpu_time_s"] >= 0.5


def test_timing_counts_cpu_seconds_of_the_step_and_its_children(tmp_path, smoke_params):
    import subprocess

    def burns(cfg, paths, ctx):
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
        subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                        "while time.process_time() < end: pass"], check=True)
        return _succeeds(cfg, paths, ctx)

    paths, timing = _paths(tmp_path), tmp_path / "t" / "step.json"
    run_stage("toy", "step", burns, None, paths, smoke_params, timing)
    assert read_json(timing)["cpu_time_s"] >= 0.6


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


# ---- interruption, stray temporaries, one-line input errors, cleanup that fails

TOY_STEP = '''
import time
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stages.core.io import atomic_path, write_json
from stages.core.stage import Step, inp, out


@dataclass(frozen=True)
class Paths:
    marker: Path = inp("progress marker")
    first: Path = out()
    model: Path = out()


def run(cfg, paths, ctx):
    write_json({"done": 1}, paths.first)
    with atomic_path(paths.model) as tmp:
        tmp.write_text("half a model")
        paths.marker.write_text("started")
        time.sleep(120)
    return {}


main = Step("toy", "slow", run, lambda params: None, Paths)

if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("sig", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_stops_a_real_stage_with_a_message_and_no_outputs(tmp_path, smoke_params, sig, code):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    script = tmp_path / "toy_slow.py"
    script.write_text(TOY_STEP)
    marker, out_dir = tmp_path / "marker", tmp_path / "out"
    outs = [out_dir / "first.json", out_dir / "model.bin", tmp_path / "timings" / "slow.json"]
    proc = subprocess.Popen(
        [sys.executable, str(script), "--params", str(smoke_params), "--timing", str(outs[2]),
         "--marker", str(marker), "--first", str(outs[0]), "--model", str(outs[1])],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():  # the step is under way: one output written, one half written
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the toy step never started"
            time.sleep(0.05)
        assert outs[0].exists()
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    assert err.strip().splitlines()[-1] == f"[toy-slow] interrupted by {sig}; its outputs were removed"
    assert not any(p.exists() for p in outs)
    assert list(out_dir.iterdir()) == []  # nor the half-written temporary


def _stage_cli(tmp_path, params, run):
    args = ["--params", str(params), "--timing", str(tmp_path / "t.json"), "--source", "x",
            "--first", str(tmp_path / "o" / "a.json"), "--second", str(tmp_path / "o" / "b.json")]
    with pytest.raises(SystemExit) as exit_info:
        stage_main("toy", "step", run, lambda p: None, ToyPaths, args)
    return exit_info.value.code


def _writes_then(exc):
    def run(cfg, paths, ctx):
        write_json({"ok": 1}, paths.first)
        raise exc
    return run


@pytest.mark.parametrize(("exc", "code", "line"), [
    # Lightning raises SIGTERMException (a SystemExit with no code) when its own handler saw SIGTERM
    (SystemExit(), 1, "[toy-step] stopped before finishing (SystemExit(None)); its outputs were removed"),
    (SystemExit(0), 1, "[toy-step] stopped before finishing (SystemExit(0)); its outputs were removed"),
    (KeyboardInterrupt(), 130, "[toy-step] interrupted by SIGINT; its outputs were removed"),
])
def test_system_exit_and_keyboard_interrupt_exit_non_zero(tmp_path, smoke_params, capsys, exc, code, line):
    assert _stage_cli(tmp_path, smoke_params, _writes_then(exc)) == code
    assert capsys.readouterr().err.strip().splitlines()[-1] == line
    assert not (tmp_path / "o" / "a.json").exists()


@pytest.mark.parametrize("swallowed_as", [RuntimeError, "input_error"])
def test_a_signal_whose_exception_native_code_swallowed_is_still_an_interruption(tmp_path, smoke_params, capsys,
                                                                                  swallowed_as):
    """Native code (torch building a tensor from a safetensors file) can catch the handler's exception and raise
    its own, e.g. "could not determine the shape": a failure after SIGTERM arrived exits 143, outputs removed."""
    import os
    import signal

    from stages.core.io import InputError
    from stages.core.stage import StageInterrupted

    def run(cfg, paths, ctx):
        write_json({"ok": 1}, paths.first)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0) if hasattr(signal, "sigtimedwait") else None  # let the handler run here
        except StageInterrupted:
            if swallowed_as == "input_error":
                raise InputError("model.safetensors: not a readable safetensors file (truncated or corrupt)") from None
            raise RuntimeError("could not determine the shape of object type 'torch.storage.UntypedStorage'") from None
        raise AssertionError("the signal handler did not run")

    assert _stage_cli(tmp_path, smoke_params, run) == 143
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == "[toy-step] interrupted by SIGTERM; its outputs were removed"
    assert not (tmp_path / "o" / "a.json").exists()


def test_input_error_is_one_line_and_exit_1(tmp_path, smoke_params, capsys):
    from stages.core.io import read_parquet

    (tmp_path / "in.parquet").write_bytes(b"PAR1 not really")

    def run(cfg, paths, ctx):
        write_json({"ok": 1}, paths.first)
        read_parquet(tmp_path / "in.parquet")

    assert _stage_cli(tmp_path, smoke_params, run) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"[toy-step] {tmp_path / 'in.parquet'}: not a readable Parquet table")
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "o" / "a.json").exists()


def test_a_failed_cleanup_is_reported_not_claimed(tmp_path, smoke_params, capsys, monkeypatch):
    import stages.core.io as io

    real = io.remove_outputs

    def stuck(paths):
        paths = list(paths)
        if any(p.name == "a.json" for p in map(Path, paths)):
            raise PermissionError(13, "Permission denied")
        real(paths)

    monkeypatch.setattr(io, "remove_outputs", stuck)
    assert _stage_cli(tmp_path, smoke_params, _fails_halfway) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"[toy-step] failed; could not remove its outputs: {tmp_path / 'o' / 'a.json'} "
                    "(Permission denied); delete them before rerunning")
    assert "were removed" not in last


def test_stray_temporaries_are_swept_when_the_stage_starts(tmp_path, smoke_params):
    paths, timing = _paths(tmp_path), tmp_path / "t" / "step.json"
    paths.first.parent.mkdir(parents=True)
    timing.parent.mkdir()
    strays = [paths.first.parent / ".a.json.x.tmp", timing.parent / ".step.json.k3_9zq1m.tmp"]
    for stray in strays:
        stray.write_text("left by a SIGKILLed run")
    (paths.first.parent / ".model.x.tmp").mkdir()  # not an output of this step: kept
    seen = []

    def run(cfg, p, ctx):
        seen.append([s.exists() for s in strays])
        return _succeeds(cfg, p, ctx)

    run_stage("toy", "step", run, None, paths, smoke_params, timing)
    assert seen == [[False, False]]  # gone before the step ran
    assert sorted(p.name for p in paths.first.parent.iterdir()) == [".model.x.tmp", "a.json", "b.json"]
