"""The stage runner: parse paths, refuse bad params, seed, time, clean up on failure.

Every step module ends with::

    main = Step("<paper>", "<step>", run, load_config, Paths)

    if __name__ == "__main__":
        main()

where ``Paths`` is a dataclass whose fields are declared with :func:`inp` / :func:`out`
and become ``--field-name`` options (dvc.yaml passes every path on the command line).
The ``Step`` is also what ``python -m stages.dag`` reads to generate the stage's entry
in dvc.yaml: its paths, the params sections its loader reads, and its code deps.

A step that fails or is interrupted (SIGTERM, SIGINT) leaves none of its declared outputs;
the stray temporaries a SIGKILLed earlier run left beside them are swept when the step starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from stages.core.config import DEFAULT_PARAMS, ConfigError, file_of_error, load_global
from stages.core.gx import DataValidationError
from stages.core.io import InputError, NonFiniteError, remove_outputs_reporting, sweep_temp, write_json
from stages.core.seeding import apply_threads, seed_everything
from stages.core.verdict import check_verdict_metrics

C = TypeVar("C")
P = TypeVar("P")


@dataclasses.dataclass(frozen=True)
class StageContext:
    """What a step gets besides its config and paths."""

    paper: str
    step: str
    seed: int
    profile: str
    threads: int


def inp(help: str = "") -> Any:
    """A Paths field for a declared dependency."""
    return dataclasses.field(metadata={"role": "in", "help": help})


def out(help: str = "") -> Any:
    """A Paths field for a declared output (deleted if the stage fails)."""
    return dataclasses.field(metadata={"role": "out", "help": help})


def output_paths(paths: Any) -> list[Path]:
    """The output fields of a Paths instance."""
    return [Path(getattr(paths, f.name)) for f in dataclasses.fields(paths) if f.metadata.get("role") == "out"]


def _parser(paper: str, step: str, paths_type: type) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m stages.{paper}.{step}")
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="params file")
    parser.add_argument("--timing", type=Path, required=True, help="where to write this stage's wall time")
    for f in dataclasses.fields(paths_type):
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=Path, required=True,
                            help=f"{f.metadata.get('role', '?')}: {f.metadata.get('help', '')}")
    return parser


class StageInterrupted(BaseException):
    """SIGTERM or SIGINT arrived while the step ran (a BaseException, like KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def outputs_left(err: BaseException, outs: Sequence[Path] = ()) -> list[str]:
    """The outputs not deleted after ``err`` ('path (reason)'); empty if all went.

    ``run_stage`` records them on the exception it re-raises; an exception that did not pass
    through its cleanup (a signal just before or after the step) has ``outs`` deleted now.
    """
    left = getattr(err, "stage_outputs_left", None)
    return list(left) if left is not None else remove_outputs_reporting(outs)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have been waited for.

    Beside the wall time in a step's timing: on a machine shared with other work the wall time
    overstates the step's time alone, while its CPU seconds over its threads estimate it.
    """
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def machine_busy_seconds() -> float | None:
    """CPU seconds every process on the machine has spent busy since boot (Linux ``/proc/stat``), else None.

    Its change over a step, less the step's own CPU seconds, is the other work that shared the machine with
    the step over its whole run (the load average at its end sees only its last minute)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def peak_processes() -> int:
    """The most processes a step's runs went over (``map_runs`` workers), 1 for a step that used none."""
    workers = sys.modules.get("stages.core.workers")
    return max(1, getattr(workers, "PEAK_PROCESSES", 1)) if workers is not None else 1


def reset_peak_processes() -> None:
    """Start a step's count of worker processes afresh (a process that runs several steps, as the tests do)."""
    workers = sys.modules.get("stages.core.workers")
    if workers is not None:
        workers.PEAK_PROCESSES = 1


def threads_in_effect(configured: int) -> int:
    """Torch's intra-op thread count when the step ends (lowered by ``cap_threads``), else the configured count.

    The timing's ``threads``: CPU seconds over it estimate the step's time alone, which the configured count
    halves for a step capped to one thread on two."""
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else configured


def step_timing(paper: str, step: str, profile: str, threads: int, start: float, cpu_start: float,
                busy_start: float | None) -> dict[str, Any]:
    """A step's timing: wall and CPU seconds, threads and processes, and the other work beside it.

    ``other_cpu_s`` is the machine's busy CPU seconds over the step less the step's own: other work that ran
    beside it at any point of its run. ``processes`` is the peak number of ``map_runs`` workers."""
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    busy_end = machine_busy_seconds()
    timing: dict[str, Any] = {"paper": paper, "step": step, "profile": profile, "wall_time_s": round(wall, 3),
                              "cpu_time_s": round(cpu, 3), "threads": threads_in_effect(threads),
                              "processes": peak_processes(), "load_average_1min": round(os.getloadavg()[0], 2)}
    if busy_start is not None and busy_end is not None:
        timing["other_cpu_s"] = round(max(0.0, busy_end - busy_start - cpu), 3)
    return timing


def run_stage(paper: str, step: str, run: Callable[[C, P, StageContext], dict[str, Any]],
              cfg: C, paths: P, params_path: Path | str, timing: Path | None = None) -> dict[str, Any]:
    """Run one step with threads and seeds applied; on any failure delete its outputs.

    Stray temporaries of its outputs (``.<name>.*.tmp`` left by a killed run) are deleted first.
    When an output cannot be deleted, the exception re-raised carries it (see :func:`outputs_left`).
    """
    glob = load_global(params_path)
    apply_threads(glob.threads)
    seed_everything(glob.seed)
    ctx = StageContext(paper=paper, step=step, seed=glob.seed, profile=glob.profile, threads=glob.threads)
    outs = output_paths(paths) + ([timing] if timing else [])
    reset_peak_processes()
    start, cpu_start, busy_start = time.perf_counter(), cpu_seconds(), machine_busy_seconds()
    try:
        sweep_temp(outs)
        result = run(cfg, paths, ctx)
        if timing is not None:
            write_json(step_timing(paper, step, glob.profile, glob.threads, start, cpu_start, busy_start), timing)
    except BaseException as err:
        left = remove_outputs_reporting(outs)
        err.stage_outputs_left = left  # type: ignore[attr-defined]
        if left:
            err.add_note(f"could not remove outputs: {', '.join(left)}")
        raise
    return result


@contextmanager
def _interruptible() -> Iterator[list[int]]:
    """Turn the first SIGTERM or SIGINT into :class:`StageInterrupted` (main thread only).

    Later signals are ignored until the block ends, so the cleanup of outputs is not cut short;
    the list yielded holds the signal received. Lightning composes its SIGTERM handler with this one.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        if received:
            return
        received.append(signum)
        raise StageInterrupted(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@dataclasses.dataclass(frozen=True)
class Step:
    """A step's declaration: the CLI entry point, and what the DAG generator reads."""

    paper: str
    step: str
    run: Callable[[Any, Any, StageContext], dict[str, Any]]
    load_config: Callable[[Path], Any]
    paths: type

    @property
    def stage(self) -> str:
        """The stage's name in dvc.yaml."""
        return f"{self.paper}-{self.step}"

    def __call__(self, argv: Sequence[str] | None = None) -> None:
        stage_main(self.paper, self.step, self.run, self.load_config, self.paths, argv)


def stage_main(paper: str, step: str, run: Callable[[C, P, StageContext], dict[str, Any]],
               load_config: Callable[[Path], C], paths_type: type[P],
               argv: Sequence[str] | None = None) -> None:
    """CLI entry point of a step; exit 2 on bad params, 1 on failed validation or error."""
    args = _parser(paper, step, paths_type).parse_args(argv)
    paths = paths_type(**{f.name: getattr(args, f.name) for f in dataclasses.fields(paths_type)})
    try:
        load_global(args.params)
        cfg = load_config(args.params)
        measured = declared_metrics(paper)
        if measured is not None:
            check_verdict_metrics(paper, measured, args.params)
    except ConfigError as err:
        print(f"[{paper}-{step}] refused params ({file_of_error(str(err), args.params)}): {err}", file=sys.stderr)
        sys.exit(2)
    outs = [*output_paths(paths), args.timing]
    received: list[int] = []
    try:
        with _interruptible() as received:
            run_stage(paper, step, run, cfg, paths, args.params, args.timing)
    except (DataValidationError, InputError, NonFiniteError) as err:
        if received:  # native code swallowed the signal's exception and raised its own: still an interruption
            _interrupted(paper, step, received[0], err, outs)
        left = outputs_left(err, outs)
        print(f"[{paper}-{step}] {err}" + (f"; {_cleanup(left)}" if left else ""), file=sys.stderr)
        sys.exit(1)
    except (StageInterrupted, KeyboardInterrupt, SystemExit) as err:
        # Lightning turns SIGTERM into a SystemExit with no code and SIGINT into exit(1), after our handler
        signum = (err.signum if isinstance(err, StageInterrupted) else received[0] if received
                  else signal.SIGINT if isinstance(err, KeyboardInterrupt) else None)
        if signum is not None:
            print(f"[{paper}-{step}] interrupted by {signal.Signals(signum).name}; {_cleanup(outputs_left(err, outs))}",
                  file=sys.stderr)
            sys.exit(128 + signum)
        code = err.code if isinstance(err, SystemExit) else None
        print(f"[{paper}-{step}] stopped before finishing (SystemExit({code!r})); {_cleanup(outputs_left(err, outs))}",
              file=sys.stderr)
        sys.exit(code if isinstance(code, int) and code != 0 else 1)
    except Exception as err:
        if received:  # e.g. torch turning StageInterrupted into "could not determine the shape ..."
            _interrupted(paper, step, received[0], err, outs)
        traceback.print_exc()
        print(f"[{paper}-{step}] failed; {_cleanup(outputs_left(err, outs))}", file=sys.stderr)
        sys.exit(1)


def _interrupted(paper: str, step: str, signum: int, err: BaseException, outs: Sequence[Path]) -> NoReturn:
    """Report an interruption by ``signum``, remove the outputs and exit with 128 + signum."""
    print(f"[{paper}-{step}] interrupted by {signal.Signals(signum).name}; {_cleanup(outputs_left(err, outs))}",
          file=sys.stderr)
    sys.exit(128 + signum)


def declared_metrics(paper: str) -> tuple[str, ...] | None:
    """The per-seed metrics ``paper``'s report measures: ``METRICS`` of ``stages/<paper>/config.py``."""
    try:
        module = importlib.import_module(f"stages.{paper}.config")
    except ModuleNotFoundError:
        return None
    metrics = getattr(module, "METRICS", None)
    return tuple(metrics) if metrics is not None else None


def _cleanup(left: Sequence[str]) -> str:
    if left:
        return f"could not remove its outputs: {', '.join(left)}; delete them before rerunning"
    return "its outputs were removed"
