"""Serve the deployments: the whole DAG nightly, and one on-demand deployment per paper.

    prefect server start --host 127.0.0.1 &
    PREFECT_API_URL=http://127.0.0.1:4200/api python -m flows.serve
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefect import serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from flows.reproduce import ROOT, load_dag, reproduce

NIGHTLY = Cron("0 2 * * *", timezone="UTC")


def deployments(root: Path = ROOT, runner: str = "threads") -> list[RunnerDeployment]:
    """A nightly deployment of the whole DAG and one deployment per paper (with its upstream stages)."""
    nightly = reproduce.to_deployment(name="nightly", schedules=[NIGHTLY], parameters={"runner": runner},
                                      description="The whole dvc.yaml DAG, every night", tags=["nightly"])
    per_paper = [reproduce.to_deployment(name=paper, parameters={"papers": [paper], "runner": runner},
                                         description=f"{paper}: its stages and their upstream", tags=["paper"])
                 for paper in load_dag(root).papers]
    return [nightly, *per_paper]


def main(argv: list[str] | None = None) -> None:
    """Serve every deployment until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", default="threads", choices=["threads", "dask"])
    args = parser.parse_args(argv)
    serve(*deployments(ROOT, args.runner))


if __name__ == "__main__":
    main()
