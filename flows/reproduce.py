"""The dvc.yaml DAG as a Prefect flow: one task per DVC stage, run through DVC itself.

Tasks come from DVC's own stage graph (foreach/matrix stages expanded); each runs
``dvc --wait-for-lock repro --single-item <stage>`` in the repository root, after its
upstream tasks, as a task of the ``reproduce`` flow run itself (the run a deployment's URL
opens shows every stage). A failed stage stops only its downstream stages, which end
Cancelled ("Not run") with the failed stage named; the flow run then ends Failed with a
message naming the stage and its error (a refused params key is named by its dotted path).
After each paper's report stage the flow run publishes a markdown artifact from
``reports/<paper>/claim.json``: the verdict, and every check with holds / fails / unclear
and its per-seed values.

    python -m flows.reproduce --paper matrix_denoising --runner dask
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import stages as _offline_switches  # noqa: F401  (sets the offline switches before Prefect loads)
from flows.settings import api_url
from stages.repro import Dag, dvc_stage_command, load_dag, paper_of

# isort: split
from prefect import flow, get_client, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE
from prefect.exceptions import PrefectHTTPStatusError
from prefect.futures import PrefectFuture
from prefect.states import Cancelled, Completed, Failed, State
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUNNERS = ("threads", "dask")
NOT_RUN = "Not run"  # the state name of a stage skipped because an upstream stage failed


class SelectionError(ValueError):
    """An unknown paper id, stage name or runner."""


class StagesFailed(Exception):
    """The result of a flow run in which a stage failed: the message, and the run's summary.

    A deployment's engine raises a failed run's result once the run has ended; the log filter
    below keeps that expected exception out of the run's logs (the Failed state already says it).
    """

    def __init__(self, message: str, summary: dict[str, Any]):
        super().__init__(message, summary)
        self.message = message
        self.summary = summary

    def __str__(self) -> str:
        return self.message


class _CleanFailureLogs(logging.Filter):
    """Keep a failed run's log to what the user needs: drop the engine's traceback of a
    :class:`StagesFailed` result (the run already failed cleanly) and the empty traceback
    (``NoneType: None``) Prefect appends to a task's returned Failed state; a stage left
    ``NotReady`` by a failed upstream stage is not an error of its own (it ends "Not run")."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], StagesFailed):
            return False
        if record.exc_info and record.exc_info[0] is None:
            record.exc_info = None
        if isinstance(record.msg, str) and record.msg.startswith("Finished in state NotReady("):
            record.msg, record.args = f"{NOT_RUN}: an upstream stage failed", ()
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


for _name in ("prefect.flow_runs", "prefect.task_runs", "prefect.engine", "prefect.flow_engine"):
    logging.getLogger(_name).addFilter(_CleanFailureLogs())


@dataclass
class Summary:
    """What a flow run did to each stage: ran, up to date, failed, or not run (upstream failed)."""

    ran: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)

    def as_markdown(self) -> str:
        """A markdown table of the outcome per stage, the errors and the papers' verdicts."""
        rows = [("ran", self.ran), ("up to date", self.up_to_date), ("failed", self.failed),
                ("not run (upstream failed)", self.not_run)]
        lines = ["| outcome | count | stages |", "| --- | --- | --- |"]
        lines += [f"| {label} | {len(names)} | {', '.join(names) or '-'} |" for label, names in rows]
        if self.errors:
            lines += ["", "| failed stage | error |", "| --- | --- |",
                      *[f"| {stage} | {_cell(error)} |" for stage, error in self.errors.items()]]
        if self.verdicts:
            lines += ["", "| paper | verdict |", "| --- | --- |",
                      *[f"| {paper} | **{verdict}** |" for paper, verdict in self.verdicts.items()]]
        return "\n".join(lines)

    def message(self) -> str:
        """One line for the flow run's final state."""
        if not self.failed:
            return f"ran {len(self.ran)}, up to date {len(self.up_to_date)}"
        failures = "; ".join(f"stage {s} failed: {self.errors.get(s, 'see its log')}" for s in self.failed)
        return failures + (f"; {len(self.not_run)} downstream stage(s) not run" if self.not_run else "")


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def summary_of(state: State) -> dict[str, Any]:
    """The summary dict of a finished ``reproduce`` flow run's state, Completed or Failed."""
    result = state.result(raise_on_failure=False)
    return result.summary if isinstance(result, StagesFailed) else result


def is_report(stage: str) -> bool:
    """Whether the stage is a paper's report stage (writes claim.json and metrics.json)."""
    return paper_of(stage) is not None and stage.rsplit("-", 1)[1] == "report"


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


def _value(value: Any) -> str:
    """A per-seed value as the report prints it."""
    if value is None:
        return "n/a"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def report_markdown(root: Path, paper: str) -> str:
    """A markdown summary of a paper's claim.json: verdict, every check with its status and per-seed values, metrics."""
    claim = json.loads((root / "reports" / paper / "claim.json").read_text())
    metrics = json.loads((root / "reports" / paper / "metrics.json").read_text())
    seeds = claim.get("seeds") or []
    lines = [f"# {claim.get('title', paper)}", "", f"**Verdict: {claim.get('verdict')}** "
             f"(profile {claim.get('profile')}, seeds {', '.join(map(str, seeds)) or '-'})", ""]
    checks = claim.get("checks") or []
    if checks:
        counts = {status: sum(c.get("status") == status for c in checks) for status in ("holds", "fails", "unclear")}
        lines += [f"Checks: {counts['holds']} hold, {counts['fails']} fail, {counts['unclear']} unclear.", "",
                  "| check | status | " + " | ".join(f"seed {s}" for s in seeds) + " |",
                  "| --- | --- | " + " | ".join("---" for _ in seeds) + " |"]
        for check in checks:
            values = list(check.get("values") or [])
            values += [None] * (len(seeds) - len(values))
            lines.append(f"| {_cell(check.get('description') or check.get('name', '?'))} | "
                         f"**{check.get('status')}** | " + " | ".join(_value(v) for v in values[:len(seeds)]) + " |")
        lines.append("")
    for key in ("claim", "paper_result", "verdict_rule"):
        if key in claim:
            lines += [f"**{key.replace('_', ' ').capitalize()}:** {claim[key]}", ""]
    measured = claim.get("measured") or {}
    if measured:
        lines += ["| measured (mean ± std over seeds) | value |", "| --- | --- |",
                  *[f"| {k} | {v} |" for k, v in measured.items()], ""]
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


def clock(epoch: float) -> str:
    """An epoch time as ``YYYY-mm-dd HH:MM:SS UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def duration(seconds: float) -> str:
    """``12.3 s``, ``4 min 05 s`` or ``1 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def stage_error(stage: str, lines: list[str], code: int) -> str:
    """The line of a failed stage's output that says why: the stage runner's own ``[<stage>] ...``
    line (a refused params key by its dotted path), else the last line of the command's output
    (an exception's last line), else DVC's own error."""
    lines = [line.strip() for line in lines if line.strip()]
    tagged = [line for line in lines if line.startswith(f"[{stage}]")]
    if tagged:
        return tagged[-1]
    dvc = [line for line in lines if line.startswith(("ERROR:", "WARNING:"))]
    own = [line for line in lines if line not in dvc and not line.startswith(("Running stage", "> "))
           and not re.match(r"^(Verifying|Updating lock file|Use `dvc push`|To track the changes)", line)]
    if own:
        return own[-1]
    return dvc[-1] if dvc else f"exit status {code}"


@task(cache_policy=NONE, task_run_name="{stage}")
def run_stage(root: str, stage: str) -> dict[str, Any] | State:
    """Run one DVC stage with ``dvc repro --single-item``; log its output and timing.

    A failing stage returns a Failed state whose message names the stage and its error (no traceback).
    """
    logger = get_run_logger()
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    start = time.time()
    lines: list[str] = []
    with subprocess.Popen(dvc_stage_command(stage), cwd=root,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        for line in proc.stdout:
            lines.append(line.rstrip())
            if lines[-1]:
                logger.info("%s | %s", stage, lines[-1])
    end = time.time()
    took = f"started {clock(start)}, ended {clock(end)}, took {duration(end - start)}"
    if proc.returncode != 0:
        error = stage_error(stage, lines, proc.returncode)
        logger.error("%s failed (exit %d; %s): %s", stage, proc.returncode, took, error)
        return Failed(message=f"{stage}: {error}")
    status = "ran" if any(f"Running stage '{stage}'" in line for line in lines) else "up_to_date"
    logger.info("%s %s (%s)", stage, "ran" if status == "ran" else "was up to date", took)
    result = {"stage": stage, "status": status, "start": start, "end": end, "pid": os.getpid()}
    if is_report(stage):
        result["verdict"] = json.loads((Path(root) / "reports" / paper_of(stage) / "claim.json").read_text()).get(
            "verdict")
    return result


def publish_results(root: str, paper: str) -> None:
    """The paper's results artifact, on the flow run (the UI's Artifacts tab lists the flow run's own)."""
    create_markdown_artifact(markdown=report_markdown(Path(root), paper), key=artifact_key(paper),
                             description=f"{paper}: verdict, checks per seed, metrics")


def _failed_upstream(stage: str, upstream: dict[str, list[str]], summary: Summary) -> list[str]:
    """The failed stages upstream of ``stage`` (through stages that were not run)."""
    found: list[str] = []
    for up in upstream[stage]:
        if up in summary.failed:
            found.append(up)
        elif up in summary.not_run:
            found += [f for f in _failed_upstream(up, upstream, summary) if f not in found]
    return found


def _mark_not_run(futures: dict[str, PrefectFuture], summary: Summary, upstream: dict[str, list[str]]) -> None:
    """End the task runs of stages that never ran (Prefect leaves them Pending) as Cancelled "Not run"."""
    if not summary.not_run:
        return
    with get_client(sync_client=True) as client:
        for stage in summary.not_run:
            reason = f"not run: upstream stage {', '.join(_failed_upstream(stage, upstream, summary))} failed"
            task_run_id = futures[stage].task_run_id
            # The server records task runs from events, possibly after this point: retry until it knows the run.
            for attempt in range(60):
                try:
                    client.set_task_run_state(task_run_id, Cancelled(name=NOT_RUN, message=reason), force=True)
                    client.set_task_run_name(task_run_id, stage)  # one that never started may keep a default name
                    break
                except PrefectHTTPStatusError as err:  # 404: not recorded yet
                    if attempt == 59:
                        get_run_logger().warning("%s: %s (its task run stays NotReady: %s)", stage, reason, err)
                    time.sleep(0.5)


def run_plan(task_runner: TaskRunner, root: str, plan: list[str], upstream: dict[str, list[str]]) -> Summary:
    """Submit ``plan`` (topological order) so each stage waits for its upstream stages; collect the outcome."""
    futures: dict[str, PrefectFuture] = {}
    with task_runner:
        for stage in plan:
            waits = [futures[u] for u in upstream[stage] if u in futures]
            futures[stage] = task_runner.submit(run_stage, parameters={"root": root, "stage": stage}, wait_for=waits)
        summary = Summary()
        for stage, future in futures.items():
            future.wait()
            state = future.state
            if state.is_completed():
                result = future.result()
                (summary.ran if result["status"] == "ran" else summary.up_to_date).append(stage)
                summary.timings[stage] = {"start": result["start"], "end": result["end"], "pid": result["pid"]}
                if result.get("verdict"):
                    summary.verdicts[paper_of(stage)] = result["verdict"]
                    publish_results(root, paper_of(stage))
            elif state.is_failed() and not _blocked(stage, upstream, summary):
                summary.failed.append(stage)
                summary.errors[stage] = (state.message or "").removeprefix(f"{stage}: ")
            else:
                summary.not_run.append(stage)
    _mark_not_run(futures, summary, upstream)
    return summary


def _blocked(stage: str, upstream: dict[str, list[str]], summary: Summary) -> bool:
    """Whether an upstream stage of ``stage`` failed or was not run."""
    return any(u in summary.failed or u in summary.not_run for u in upstream[stage])


@flow(name="reproduce")
def reproduce(papers: list[str] | None = None, stages: list[str] | None = None, profile: str | None = None,
              runner: str = "threads", address: str | None = None, root: str | None = None) -> State:
    """Run the dvc.yaml DAG (or the given papers/stages and their upstream) under Prefect."""
    logger = get_run_logger()
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
    logger.info("running %d stages with %s: %s", len(plan), runner, ", ".join(plan))
    upstream = {s: list(dag.upstream[s]) for s in plan}
    summary = run_plan(task_runner, str(repo_root), plan, upstream)
    logger.info("summary:\n%s", summary.as_markdown())
    create_markdown_artifact(markdown=summary.as_markdown(), key="reproduce-summary",
                             description="stages ran, up to date, failed, not run; the papers' verdicts")
    message = summary.message()
    if summary.failed:
        logger.error(message)
        return Failed(message=message, data=StagesFailed(message, asdict(summary)))
    return Completed(message=message, data=asdict(summary))


def project_server() -> str | None:
    """The API URL of the project's server (``make ui``) when it answers, else None."""
    url = api_url()
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return url if response.status == 200 else None
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Command line: run the flow once; exit 1 if a stage failed, 2 on a bad selection.

    With the project's server up (``make ui``) the run is recorded there and shows live in the UI;
    otherwise a temporary server records it in the project's Prefect home, where ``make ui`` shows it later.
    """
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
    from prefect.settings import PREFECT_API_URL, temporary_settings

    server = None if os.environ.get("PREFECT_API_URL") else project_server()
    updates = {PREFECT_API_URL: server} if server else {}
    print(f"Prefect: recording this run on {server} (open the UI there)" if server else
          "Prefect: no project server running (make ui); a temporary server records this run in "
          f"{os.environ['PREFECT_HOME']}", file=sys.stderr)
    with temporary_settings(updates=updates):
        state = reproduce(args.papers, args.stages, args.profile, args.runner, args.address, return_state=True)
    print(f"{state.name}: {state.message}", file=sys.stderr)
    return 0 if state.is_completed() else 1


if __name__ == "__main__":
    raise SystemExit(main())
