"""A persistent sandbox worker that runs generated PyMC programs: PyMC is imported once per worker.

The stage never runs a generated program itself. :class:`PplSandbox` starts
``python -m stages.refinestat.ppl_sandbox`` in its own process group (the way
``stages.core.sandbox.run_limited`` does) and sends it one JSON request per line; the worker builds
the model, samples with NUTS, computes the diagnostics with arviz and the held-out log predictive
density, and answers one JSON line. A watchdog enforces, per request, a CPU-time limit on the worker's
whole process group (it decides: a program's CPU seconds are the same on an idle and on a busy machine,
where a wall-clock limit would turn a slow run into a failure), a wall-clock limit as a safety net for a
worker that hangs without computing, and a limit on the group's resident memory; at a limit the group
is killed, the request is recorded as ``cpu``, ``timeout`` or ``memory``, and the next request starts a
fresh worker. pytensor compiles into a
folder the stage owns (``PYTENSOR_FLAGS=compiledir=...``), never the home directory.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from stages.core.sandbox import MIB, Limits, group_cpu_seconds, group_rss, kill_group

ROOT = Path(__file__).resolve().parents[2]
LIMIT_NAMES = {"cpu": "CPU-time", "timeout": "wall-clock", "memory": "memory"}
WARMUP_PROGRAM = ('m = pm.Normal("m", mu=0, sigma=1)', 'y_obs = pm.Normal("y_obs", mu=m, sigma=1, observed=y)')


class PplSandbox:
    """The parent side: one worker process at a time, restarted after a kill or a crash."""

    def __init__(self, limits: Limits, startup_wall_s: float, compiledir: Path) -> None:
        self.limits = limits
        self.startup_wall_s = startup_wall_s
        self.compiledir = Path(compiledir)
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.restarts = 0
        self._stderr: Any = None

    def _start(self) -> None:
        self.compiledir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTENSOR_FLAGS": f"compiledir={self.compiledir}", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
               "PYTHONUNBUFFERED": "1"}
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "stages.refinestat.ppl_sandbox"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                                     start_new_session=True, preexec_fn=self._limit_child)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        warm = self._ask({"program": list(WARMUP_PROGRAM), "data": {"y": [0.1, -0.2, 0.3]}, "heldout": None,
                          "chains": 1, "draws": 10, "tune": 10, "target_accept": 0.8, "seed": 0},
                         self.startup_wall_s)
        if warm["outcome"] != "ok":
            raise RuntimeError(f"the PyMC sandbox worker did not start: {warm}")

    def _limit_child(self) -> None:
        """In the worker, before exec: no core files, and no file (a flood of output) past the output limit."""
        out = self.limits.output_mb * MIB
        resource.setrlimit(resource.RLIMIT_FSIZE, (out, out))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    @staticmethod
    def _read(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _kill(self) -> None:
        if self.proc is not None:
            kill_group(self.proc.pid)
            self.proc.wait()
            self.proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _ask(self, request: dict[str, Any], wall_s: float, cpu_s: float | None = None) -> dict[str, Any]:
        """Send one request; wait for its answer under the CPU-time, wall and memory limits."""
        assert self.proc is not None and self.proc.stdin is not None
        watched = psutil.Process(self.proc.pid)
        cpu_start = group_cpu_seconds(watched)
        start = time.monotonic()
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._kill()
            return {"outcome": "crash", "error": "the worker had exited", "wall_s": 0.0}
        peak = 0
        while True:
            try:
                line = self.lines.get(timeout=self.limits.poll_s)
            except queue.Empty:
                rss = group_rss(watched)
                peak = max(peak, rss)
                used = group_cpu_seconds(watched) - cpu_start
                reason = ("memory" if rss > self.limits.memory_mb * MIB
                          else "cpu" if cpu_s is not None and used > cpu_s
                          else "timeout" if time.monotonic() - start > wall_s else None)
                if reason:
                    self._kill()
                    self.restarts += 1
                    return {"outcome": reason, "error": f"killed at the {LIMIT_NAMES[reason]} limit",
                            "wall_s": round(time.monotonic() - start, 3), "cpu_s": round(used, 3),
                            "peak_rss_mb": round(peak / MIB, 1)}
                continue
            if line is None:
                self._kill()
                self.restarts += 1
                return {"outcome": "crash", "error": "the worker exited", "wall_s": round(time.monotonic() - start, 3)}
            answer = json.loads(line)
            answer["wall_s"] = round(time.monotonic() - start, 3)
            answer["cpu_s"] = round(group_cpu_seconds(watched) - cpu_start, 3)
            answer["peak_rss_mb"] = round(peak / MIB, 1)
            return answer

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one program (a fresh worker is started if none is alive)."""
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()
        return self._ask(request, self.limits.wall_s, self.limits.cpu_s)

    def close(self) -> None:
        """Stop the worker."""
        self._kill()

    def __enter__(self) -> PplSandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- the worker side (runs in the sandboxed process only) ----

def _diagnostics(idata: Any, obs_name: str) -> dict[str, Any]:
    """R-hat, bulk and tail ESS, divergences, BFMI, PSIS-LOO (ELPD and the largest Pareto k)."""
    import warnings

    import arviz as az
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = az.rhat(idata.posterior)
        bulk = az.ess(idata.posterior, method="bulk")
        tail = az.ess(idata.posterior, method="tail")
        loo = az.loo(idata, var_name=obs_name, pointwise=True)

    def extreme(ds: Any, fn: Any) -> float:
        values = [np.asarray(ds[v]).ravel() for v in ds.data_vars]
        flat = np.concatenate(values) if values else np.array([np.nan])
        return float(fn(flat))

    n_chains = idata.posterior.sizes["chain"]
    return {"rhat_max": extreme(rhat, np.nanmax) if n_chains > 1 else None,
            "ess_bulk_min": extreme(bulk, np.nanmin), "ess_tail_min": extreme(tail, np.nanmin),
            "divergences": int(idata.sample_stats["diverging"].sum()),
            "bfmi_min": float(np.min(az.bfmi(idata))),
            "pareto_k_max": float(np.nanmax(np.asarray(loo.pareto_k))),
            "elpd_loo": float(loo.elpd_loo), "n_obs": int(np.asarray(loo.pareto_k).size)}


def _build(pm: Any, program: list[str], data: dict[str, Any]) -> tuple[Any, Any]:
    import numpy as np

    namespace: dict[str, Any] = {"pm": pm, "len": len, **{k: np.asarray(v, dtype=float) for k, v in data.items()}}
    with pm.Model() as model:
        exec("\n".join(program), namespace)
    if len(model.observed_RVs) != 1:
        raise ValueError(f"the program has {len(model.observed_RVs)} likelihood statements, not one")
    return model, model.observed_RVs[0]


def _heldout_lpd(pm: Any, program: list[str], heldout: dict[str, Any], idata: Any) -> float:
    """Mean over held-out points of log mean_s p(y_i | theta_s): the program rebuilt on the held-out rows."""
    import numpy as np
    from scipy.special import logsumexp

    model, obs = _build(pm, program, heldout)
    ll = pm.compute_log_likelihood(idata, model=model, extend_inferencedata=False, progressbar=False)
    arr = np.asarray(ll[obs.name])
    arr = arr.reshape(arr.shape[0] * arr.shape[1], -1)
    return float(np.mean(logsumexp(arr, axis=0) - np.log(arr.shape[0])))


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Build, sample, diagnose and score one program; every failure is an answer, never a crash."""
    import pymc as pm

    phase = "build"
    try:
        model, obs = _build(pm, request["program"], request["data"])
        phase = "sample"
        with model:
            idata = pm.sample(draws=request["draws"], tune=request["tune"], chains=request["chains"], cores=1,
                              random_seed=request["seed"], target_accept=request["target_accept"],
                              progressbar=False, compute_convergence_checks=False,
                              idata_kwargs={"log_likelihood": True})
        phase = "diagnose"
        answer: dict[str, Any] = {"outcome": "ok", **_diagnostics(idata, obs.name), "heldout_lpd": None,
                                  "heldout_error": None}
        if request.get("heldout") is not None:
            try:
                answer["heldout_lpd"] = _heldout_lpd(pm, request["program"], request["heldout"], idata)
            except Exception as err:  # the program cannot predict new rows (a per-row latent, a fixed shape)
                answer["heldout_error"] = f"{type(err).__name__}: {err}"[:300]
        return answer
    except Exception as err:
        return {"outcome": "error", "phase": phase, "error": f"{type(err).__name__}: {err}"[:500]}


def serve() -> None:
    """Answer requests from stdin, one JSON line each, until stdin closes (stdout carries answers only)."""
    import logging

    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever PyMC or a program prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for line in sys.stdin:
        answer = handle(json.loads(line))
        answers.write(json.dumps(answer, allow_nan=True) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
