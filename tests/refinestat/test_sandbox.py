"""The persistent PyMC worker: a program that loops forever and one that allocates past the memory limit are
killed and recorded, and the next program runs in a fresh worker; the CPU-time limit decides, the wall clock
only stops a worker that computes nothing."""



from stages.core.sandbox import Limits
from stages.refinestat.ppl_sandbox import ROOT, PplSandbox

DATA = {"y": [0.5, -0.1, 0.3, 0.9]}
OK = ['m = pm.Normal("m", mu=0, sigma=1)', 'y_obs = pm.Normal("y_obs", mu=m, sigma=1, observed=y)']


def request(program):
    return {"program": program, "data": DATA, "heldout": {"y": [0.2, 0.4]}, "chains": 2, "draws": 60, "tune": 60,
            "target_accept": 0.8, "seed": 1}


def test_kills_a_loop_and_a_memory_hog_and_carries_on():
    with PplSandbox(Limits(wall_s=60, memory_mb=1200, cpu_s=10), 900, ROOT / ".cache" / "pytensor") as sandbox:
        first = sandbox.run(request(OK))
        assert first["outcome"] == "ok" and first["heldout_lpd"] is not None and 0 < first["cpu_s"]
        loop = sandbox.run(request(["while True:\n    pass"]))
        # killed once past 10 s, reported to the millisecond: 10.0004 reads 10.0
        assert loop["outcome"] == "cpu" and sandbox.restarts == 1 and loop["cpu_s"] >= 10
        assert loop["wall_s"] < 60, "the CPU-time limit, not the wall clock, stopped the loop"
        hog = sandbox.run(request(["blocks = [bytearray(b'x' * 2**20) for _ in range(4000)]"]))
        assert hog["outcome"] == "memory" and sandbox.restarts == 2
        error = sandbox.run(request(['m = pm.Gaussian("m", 0, 1)']))
        assert error["outcome"] == "error" and "Gaussian" in error["error"]
        after = sandbox.run(request(OK))
        assert after["outcome"] == "ok" and sandbox.restarts == 2


def test_printing_does_not_break_the_protocol():
    with PplSandbox(Limits(wall_s=60, memory_mb=1500), 900, ROOT / ".cache" / "pytensor") as sandbox:
        result = sandbox.run(request(['print("hello")', *OK]))
        assert result["outcome"] == "ok"


def test_a_worker_that_sleeps_is_stopped_by_the_wall_clock_not_charged_cpu():
    """A program that waits without computing uses no CPU time: only the wall-clock safety net stops it."""
    with PplSandbox(Limits(wall_s=4, memory_mb=1200, cpu_s=2), 900, ROOT / ".cache" / "pytensor") as sandbox:
        sleeper = sandbox.run(request(["import time\ntime.sleep(30)"]))
        assert sleeper["outcome"] == "timeout" and sleeper["cpu_s"] < 2 and sandbox.restarts == 1
        assert sandbox.run(request(OK))["outcome"] == "ok"
