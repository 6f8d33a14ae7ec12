"""``dvc repro`` on several cores: DVC's own stages, run as soon as their upstream stages are done.

DVC runs one stage at a time. Each stage here is ``dvc --wait-for-lock repro --single-item
<stage>`` (through ``stages.dvc_cli``: DVC with a C reader for dvc.yaml and dvc.lock): DVC checks
the stage's deps, runs its command with the repository lock released, and records the result in
dvc.lock under the lock. So the results, dvc.lock and the cache are exactly
those of ``dvc repro``; only the order in time differs. A stage starts once every stage it depends
on has finished, longest downstream chain first; after a failure no new stage starts, the running
ones finish, and the command exits 1 naming the failed stage. Each stage's output is printed as
one block when it ends (never interleaved).

    python -m stages.repro --jobs 2                     # the whole DAG
    python -m stages.repro --jobs 2 espo-report         # a target and what it needs

Give each stage one thread per job on a small machine (``threads: 1`` in params.yaml with
``--jobs 2`` on 2 cores): OpenMP threads of two stages on the same cores slow both down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHARED_PREFIXES = ("assets-",)
SHARED_STAGES = ("claims",)


def paper_of(stage: str) -> str | None:
    """The paper id of a ``<paper>-<step>`` stage; None for shared stages (claims, assets-*)."""
    base = stage.split("@", 1)[0]
    if base in SHARED_STAGES or base.startswith(SHARED_PREFIXES) or "-" not in base:
        return None
    return base.rsplit("-", 1)[0]


@dataclass(frozen=True)
class Dag:
    """The expanded DVC stages in topological order, each with its direct upstream stages."""

    upstream: dict[str, tuple[str, ...]]

    @property
    def stages(self) -> list[str]:
        """Stage names, upstream first."""
        return list(self.upstream)

    @property
    def papers(self) -> list[str]:
        """Paper ids that own at least one stage, sorted."""
        return sorted({p for s in self.upstream if (p := paper_of(s)) is not None})

    def closure(self, names: list[str]) -> list[str]:
        """``names`` and everything upstream of them, in topological order."""
        keep: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name not in keep:
                keep.add(name)
                todo.extend(self.upstream[name])
        return [s for s in self.upstream if s in keep]

    def downstream_depth(self, names: list[str]) -> dict[str, int]:
        """Per stage, the number of stages on its longest downstream chain within ``names``."""
        below: dict[str, list[str]] = {s: [] for s in names}
        for s in names:
            for u in self.upstream[s]:
                if u in below:
                    below[u].append(s)
        depth: dict[str, int] = {}
        for s in reversed(names):  # topological order reversed: every child is done first
            depth[s] = 1 + max((depth[c] for c in below[s]), default=0)
        return depth


def load_dag(root: Path = ROOT) -> Dag:
    """The stage graph of ``root/dvc.yaml`` from DVC's index, foreach/matrix expanded."""
    import networkx as nx
    from dvc.repo import Repo
    from dvc.stage import PipelineStage

    from stages.dvc_cli import install

    install()

    dvcfile = Path(root).resolve() / "dvc.yaml"
    with Repo(str(root)) as repo:
        graph = repo.index.graph.subgraph(s for s in repo.index.graph
                                          if isinstance(s, PipelineStage) and Path(s.path) == dvcfile)
        # DVC's edges point from a stage to the stages it depends on.
        order = nx.lexicographical_topological_sort(graph.reverse(), key=lambda s: s.name)
        upstream = {s.name: tuple(sorted(u.name for u in graph.successors(s))) for s in order}
    return Dag(upstream)


def dvc_stage_command(stage: str, no_run_cache: bool = False) -> list[str]:
    """The command that reproduces one stage alone (its upstream stages must be up to date)."""
    return [sys.executable, "-m", "stages.dvc_cli", "--wait-for-lock", "repro", "--single-item",
            *(["--no-run-cache"] if no_run_cache else []), stage]


@dataclass
class Outcome:
    """What happened to each stage: its exit code, output, start and end (epoch seconds), CPU seconds
    (DVC's process and the stage's command, user + system); stages never started."""

    codes: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)

    @property
    def ran(self) -> list[str]:
        """Stages whose command DVC ran (not skipped as unchanged)."""
        return [s for s, out in self.outputs.items() if f"Running stage '{s}'" in out]

    @property
    def failed(self) -> list[str]:
        return [s for s, code in self.codes.items() if code != 0]


def _run_one(root: Path, stage: str, no_run_cache: bool) -> tuple[int, str, tuple[float, float], float]:
    """Run one stage through DVC; its exit code, output, span and CPU seconds (from ``wait4``: the DVC
    process and every process it waited for, i.e. the stage's command)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.time()
    with subprocess.Popen(dvc_stage_command(stage, no_run_cache), cwd=root, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        output = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, output, (start, time.time()), usage.ru_utime + usage.ru_stime


def reproduce(root: Path, targets: list[str] | None = None, jobs: int = 2, no_run_cache: bool = False,
              echo: bool = True) -> Outcome:
    """Run ``targets`` (every stage if none) and their upstream stages, ``jobs`` at a time."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    dag = load_dag(root)
    unknown = sorted(set(targets or ()) - set(dag.stages))
    if unknown:
        raise ValueError(f"unknown stage name(s) {unknown}; valid: {dag.stages}")
    plan = dag.closure(list(targets)) if targets else dag.stages
    depth = dag.downstream_depth(plan)
    waiting = {s: set(dag.upstream[s]) & set(plan) for s in plan}
    outcome = Outcome()
    running: dict[Future, str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while waiting or running:
            if not outcome.failed:
                ready = sorted((s for s, ups in waiting.items() if not ups), key=lambda s: (-depth[s], s))
                for stage in ready[:jobs - len(running)]:
                    del waiting[stage]
                    running[pool.submit(_run_one, root, stage, no_run_cache)] = stage
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                stage = running.pop(future)
                code, output, span, cpu = future.result()
                outcome.codes[stage], outcome.outputs[stage], outcome.spans[stage] = code, output, span
                outcome.cpu[stage] = cpu
                if echo:
                    print(output, end="" if output.endswith("\n") else "\n", flush=True)
                if code == 0:
                    for ups in waiting.values():
                        ups.discard(stage)
    outcome.not_run = list(waiting)
    return outcome


def stage_times(outcome: Outcome) -> dict[str, dict[str, float]]:
    """Wall and CPU seconds of every stage DVC ran (skipped ones cost only DVC's check)."""
    return {s: {"wall_s": round(outcome.spans[s][1] - outcome.spans[s][0], 2), "cpu_s": round(outcome.cpu[s], 2)}
            for s in outcome.ran}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="stage names (default: every stage)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="stages run at once (default: the number of CPUs)")
    parser.add_argument("--no-run-cache", action="store_true", help="run stages even if DVC's run cache has them")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the repository (default: here)")
    parser.add_argument("--times", type=Path, help="write each stage's wall and CPU seconds here (JSON)")
    args = parser.parse_args(argv)
    try:
        started = time.time()
        outcome = reproduce(args.root, args.targets, args.jobs, args.no_run_cache)
    except ValueError as error:
        parser.error(str(error))
    times = stage_times(outcome)
    if args.times:
        args.times.write_text(json.dumps({"jobs": args.jobs, "wall_s": round(time.time() - started, 2),
                                          "stages": times}, indent=1) + "\n")
    if outcome.ran:
        top = sorted(times.items(), key=lambda kv: -kv[1]["cpu_s"])[:5]
        print(f"{len(outcome.ran)} stages ran in {time.time() - started:.0f} s wall, "
              f"{sum(t['cpu_s'] for t in times.values()):.0f} s CPU; most CPU: "
              + ", ".join(f"{s} {t['cpu_s']:.0f} s" for s, t in top), file=sys.stderr)
    if outcome.failed:
        print(f"failed: {', '.join(outcome.failed)}; not run: {', '.join(outcome.not_run) or 'none'}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
