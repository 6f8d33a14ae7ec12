"""The dvc.yaml DAG as a Prefect flow: one task per DVC stage, run through DVC itself.

Tasks come from DVC's own stage graph (foreach/matrix stages expanded); each runs
``dvc --wait-for-lock repro --single-item <stage>`` in the repository root, after its
upstream tasks. A failed stage stops only its downstream stages. After each paper's
report stage the task publishes a markdown artifact from ``reports/<paper>/claim.json``
and ``metrics.json``.

    python -m flows.reproduce --paper matrix_denoising --runner dask
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import stages as _offline_switches  # noqa: F401  (sets the offline switches before Prefect loads)

# isort: split
import networkx as nx
from dvc.repo import Repo
from dvc.stage import PipelineStage
from prefect import flow, get_client, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUNNERS = ("threads", "dask")
SHARED_PREFIXES = ("assets-",)
SHARED_STAGES = ("claims",)


class SelectionError(ValueError):
    """An unknown paper id, stage name or runner."""


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


@dataclass
class Summary:
    """What a flow run did to each stage: ran, up to date, failed, or not run (upstream failed)."""

    ran: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_markdown(self) -> str:
        """A short markdown table of the outcome per stage."""
        rows = [("ran", self.ran), ("up to date", self.up_to_date), ("failed", self.failed),
                ("not run (upstream failed)", self.not_run)]
        lines = ["| outcome | count | stages |", "| --- | --- | --- |"]
        lines += [f"| {label} | {len(names)} | {', '.join(names) or '-'} |" for label, names in rows]
        return "\n".join(lines)


def paper_of(stage: str) -> str | None:
    """The paper id of a ``<paper>-<step>`` stage; None for shared stages (claims, assets-*)."""
    base = stage.split("@", 1)[0]
    if base in SHARED_STAGES or base.startswith(SHARED_PREFIXES) or "-" not in base:
        return None
    return base.rsplit("-", 1)[0]


def is_report(stage: str) -> bool:
    """Whether the stage is a paper's report stage (writes claim.json and metrics.json)."""
    return paper_of(stage) is not None and stage.rsplit("-", 1)[1] == "report"


def load_dag(root: Path = ROOT) -> Dag:
    """The stage graph of ``root/dvc.yaml`` from DVC's index, foreach/matrix expanded."""
    dvcfile = Path(root).resolve() / "dvc.yaml"
    with Repo(str(root)) as repo:
        graph = repo.index.graph.subgraph(s for s in repo.index.graph
                                          if isinstance(s, PipelineStage) and Path(s.path) == dvcfile)
        # DVC's edges point from a stage to the stages it depends on.
        order = nx.lexicographical_topological_sort(graph.reverse(), key=lambda s: s.name)
        upstream = {s.name: tuple(sorted(u.name for u in graph.successors(s))) for s in order}
    return Dag(upstream)


def select(dag: Dag, papers: list[str] | None = None, stage_names: list[str] | None = None) -> list[str]:
    """The stages to run: the given papers' and stages (all if neither) and their upstream."""
    unknown_papers = sorted(set(papers or ()) - set(dag.papers))
    if unknown_papers:
        raise SelectionError(f"unknown paper id(s) {unknown_papers}; valid: {dag.papers}")
    unknown_stages = sorted(set(stage_names or ()) - set(dag.stages))
    if unknown_stages:
        raise SelectionError(f"unknown stage name(s) {unknown_stages}; valid: {dag.stages}")
    if not papers and not stage_names:
        return dag.stages
    wanted = [s for s in dag.stages if paper_of(s) in set(papers or ())] + list(stage_names or ())
    return dag.closure(wanted)


def make_runner(runner: str, tasks: int, address: str | None = None, workers: int = 2) -> TaskRunner:
    """The Prefect task runner called ``runner``: threads, or Dask (a local cluster of ``workers``, or ``address``)."""
    if runner == "threads":
        # A thread per task: a task waiting for its upstream futures holds its thread.
        return ThreadPoolTaskRunner(max_workers=max(tasks, 1))
    if runner == "dask":
        from prefect_dask import DaskTaskRunner

        if address:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                              "dashboard_address": None})
    raise SelectionError(f"unknown runner {runner!r}; valid: {list(RUNNERS)}")


def set_profile(root: Path, profile: str) -> None:
    """Set the top-level ``profile:`` of ``root/params.yaml``, keeping its comments."""
    path = root / "params.yaml"
    text, count = re.subn(r"^profile:[ \t]*[^\s#]+", f"profile: {profile}", path.read_text(), count=1,
                          flags=re.MULTILINE)
    if count != 1:
        raise SelectionError(f"{path} has no top-level 'profile:' key")
    path.write_text(text)


def report_markdown(root: Path, paper: str) -> str:
    """A markdown summary of a paper's claim.json and metrics.json."""
    claim = json.loads((root / "reports" / paper / "claim.json").read_text())
    metrics = json.loads((root / "reports" / paper / "metrics.json").read_text())
    lines = [f"# {claim.get('title', paper)}", "", f"**Verdict:** {claim.get('verdict')} "
             f"(profile {claim.get('profile')}, seeds {claim.get('seeds')})", ""]
    for key in ("claim", "paper_result", "verdict_rule"):
        if key in claim:
            lines += [f"**{key.replace('_', ' ').capitalize()}:** {claim[key]}", ""]
    measured = claim.get("measured") or {}
    if measured:
        lines += ["| measured | value |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in measured.items()], ""]
    flat = _flatten(metrics)
    lines += ["| metric | value |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in flat.items()]]
    return "\n".join(lines)


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a nested dict."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    out: dict[str, Any] = {}
    for key, value in tree.items():
        out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def artifact_key(paper: str) -> str:
    """The Prefect artifact key of a paper's results (lowercase letters, digits and dashes)."""
    return re.sub(r"[^a-z0-9-]", "-", paper.lower()) + "-results"


@task(cache_policy=NONE, task_run_name="{stage}")
def run_stage(root: str, stage: str) -> dict[str, Any]:
    """Run one DVC stage with ``dvc repro --single-item``; log its output and timing."""
    logger = get_run_logger()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.time()
    lines: list[str] = []
    with subprocess.Popen([str(BIN / "dvc"), "--wait-for-lock", "repro", "--single-item", stage], cwd=root,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        for line in proc.stdout:
            lines.append(line.rstrip())
            if lines[-1]:
                logger.info("%s | %s", stage, lines[-1])
    end = time.time()
    logger.info("%s: start=%.3f end=%.3f seconds=%.2f exit=%d", stage, start, end, end - start, proc.returncode)
    if proc.returncode != 0:
        raise RuntimeError(f"stage {stage} failed (exit {proc.returncode}):\n" + "\n".join(lines[-40:]))
    status = "ran" if any(f"Running stage '{stage}'" in line for line in lines) else "up_to_date"
    if is_report(stage):
        paper = paper_of(stage)
        create_markdown_artifact(markdown=report_markdown(Path(root), paper), key=artifact_key(paper),
                                 description=f"{paper}: claim and metrics")
    return {"stage": stage, "status": status, "start": start, "end": end, "pid": os.getpid()}


@flow(name="run-stages")
def run_stages(root: str, plan: list[str], upstream: dict[str, list[str]]) -> State:
    """Submit ``plan`` (topological order) so each stage waits for its upstream stages."""
    logger = get_run_logger()
    futures: dict[str, PrefectFuture] = {}
    for stage in plan:
        waits = [futures[u] for u in upstream[stage] if u in futures]
        futures[stage] = run_stage.submit(root, stage, wait_for=waits)
    summary = Summary()
    for stage, future in futures.items():
        future.wait()
        state = future.state
        if state.is_completed():
            result = future.result()
            (summary.ran if result["status"] == "ran" else summary.up_to_date).append(stage)
            summary.timings[stage] = {"start": result["start"], "end": result["end"], "pid": result["pid"]}
        elif state.is_failed() and not _blocked(stage, upstream, summary):
            summary.failed.append(stage)
        else:
            summary.not_run.append(stage)
    logger.info("summary:\n%s", summary.as_markdown())
    create_markdown_artifact(markdown=summary.as_markdown(), key="reproduce-summary",
                             description="stages ran, up to date, failed")
    data = asdict(summary)
    if summary.failed:
        return Failed(message=f"failed: {summary.failed}; not run: {summary.not_run}", data=data)
    return Completed(message=f"ran {len(summary.ran)}, up to date {len(summary.up_to_date)}", data=data)


def _blocked(stage: str, upstream: dict[str, list[str]], summary: Summary) -> bool:
    """Whether an upstream stage of ``stage`` failed or was not run."""
    return any(u in summary.failed or u in summary.not_run for u in upstream[stage])


@flow(name="reproduce")
def reproduce(papers: list[str] | None = None, stages: list[str] | None = None, profile: str | None = None,
              runner: str = "threads", address: str | None = None, root: str | None = None) -> State:
    """Run the dvc.yaml DAG (or the given papers/stages and their upstream) under Prefect."""
    repo_root = Path(root or ROOT).resolve()
    dag = load_dag(repo_root)
    plan = select(dag, papers, stages)
    task_runner = make_runner(runner, len(plan), address)
    if profile is not None:
        set_profile(repo_root, profile)
    if runner == "dask":
        # Worker processes inherit the environment: point them at this run's API server.
        with get_client(sync_client=True) as client:
            os.environ.setdefault("PREFECT_API_URL", str(client.api_url))
    get_run_logger().info("running %d stages with %s: %s", len(plan), runner, plan)
    upstream = {s: list(dag.upstream[s]) for s in plan}
    state = run_stages.with_options(task_runner=task_runner)(str(repo_root), plan, upstream, return_state=True)
    final = Completed if state.is_completed() else Failed
    return final(message=state.message, data=state.result(raise_on_failure=False))


def main(argv: list[str] | None = None) -> int:
    """Command line: run the flow once; exit 1 if a stage failed, 2 on a bad selection."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", action="append", dest="papers", help="paper id (repeatable)")
    parser.add_argument("--stage", action="append", dest="stages", help="stage name (repeatable)")
    parser.add_argument("--profile", help="set params.yaml profile first (smoke | default | paper)")
    parser.add_argument("--runner", default="threads", choices=RUNNERS)
    parser.add_argument("--address", help="address of a running Dask scheduler")
    args = parser.parse_args(argv)
    try:
        select(load_dag(ROOT), args.papers, args.stages)
    except SelectionError as err:
        print(err, file=sys.stderr)
        return 2
    state = reproduce(args.papers, args.stages, args.profile, args.runner, args.address, return_state=True)
    return 0 if state.is_completed() else 1


if __name__ == "__main__":
    raise SystemExit(main())
