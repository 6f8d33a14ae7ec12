"""Serve the deployments: the whole DAG nightly, and one on-demand deployment per paper.

``make ui`` starts the project's server and runs this against it; by hand:

    prefect server start &          # in the repository root: reads prefect.toml (127.0.0.1:4200)
    PREFECT_API_URL=http://127.0.0.1:4200/api python -m flows.serve

Runs in the foreground; stopping it pauses every deployment it served until it serves them again.
"""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from flows.reproduce import ROOT, load_dag, reproduce

NIGHTLY = Cron("0 2 * * *", timezone="UTC")


def deployments(root: Path = ROOT, runner: str = "threads") -> list[RunnerDeployment]:
    """A nightly deployment of the whole DAG and one deployment per paper (with its upstream stages).

    Deployments of another repository than this one (a test's) carry its path as the ``root`` parameter.
    """
    root = Path(root).resolve()
    extra = {} if root == ROOT else {"root": str(root)}
    nightly = reproduce.to_deployment(name="nightly", schedules=[NIGHTLY], parameters={"runner": runner, **extra},
                                      description="The whole dvc.yaml DAG, every night", tags=["nightly"])
    per_paper = [reproduce.to_deployment(name=paper, parameters={"papers": [paper], "runner": runner, **extra},
                                         description=f"{paper}: its stages and their upstream", tags=["paper"])
                 for paper in load_dag(root).papers]
    return [nightly, *per_paper]


def main(argv: list[str] | None = None) -> None:
    """Serve every deployment until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", default="threads", choices=["threads", "dask"])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository whose DAG the deployments run")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C (or make ui) stops it, however it was started
    serve(*deployments(args.root, args.runner))


if __name__ == "__main__":
    main()
