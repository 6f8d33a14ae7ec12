"""The stage runner: parse paths, refuse bad params, seed, time, clean up on failure.

Every step module ends with::

    def main() -> None:
        stage_main("<paper>", "<step>", run, load_config, Paths)

where ``Paths`` is a dataclass whose fields are declared with :func:`inp` / :func:`out`
and become ``--field-name`` options (dvc.yaml passes every path on the command line).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from stages.core.config import DEFAULT_PARAMS, ConfigError, load_global
from stages.core.gx import DataValidationError
from stages.core.io import remove_outputs, write_json
from stages.core.seeding import apply_threads, seed_everything

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


def run_stage(paper: str, step: str, run: Callable[[C, P, StageContext], dict[str, Any]],
              cfg: C, paths: P, params_path: Path | str, timing: Path | None = None) -> dict[str, Any]:
    """Run one step with threads and seeds applied; on any failure delete its outputs."""
    glob = load_global(params_path)
    apply_threads(glob.threads)
    seed_everything(glob.seed)
    ctx = StageContext(paper=paper, step=step, seed=glob.seed, profile=glob.profile, threads=glob.threads)
    outs = output_paths(paths) + ([timing] if timing else [])
    start = time.perf_counter()
    try:
        result = run(cfg, paths, ctx)
        if timing is not None:
            write_json({"paper": paper, "step": step, "profile": glob.profile,
                        "wall_time_s": round(time.perf_counter() - start, 3)}, timing)
    except BaseException:
        remove_outputs(outs)
        raise
    return result


def stage_main(paper: str, step: str, run: Callable[[C, P, StageContext], dict[str, Any]],
               load_config: Callable[[Path], C], paths_type: type[P],
               argv: Sequence[str] | None = None) -> None:
    """CLI entry point of a step; exit 2 on bad params, 1 on failed validation or error."""
    args = _parser(paper, step, paths_type).parse_args(argv)
    paths = paths_type(**{f.name: getattr(args, f.name) for f in dataclasses.fields(paths_type)})
    try:
        load_global(args.params)
        cfg = load_config(args.params)
    except ConfigError as err:
        print(f"[{paper}-{step}] refused params ({args.params}): {err}", file=sys.stderr)
        sys.exit(2)
    try:
        run_stage(paper, step, run, cfg, paths, args.params, args.timing)
    except DataValidationError as err:
        print(f"[{paper}-{step}] {err}", file=sys.stderr)
        sys.exit(1)
    except Exception:
        traceback.print_exc()
        print(f"[{paper}-{step}] failed; its outputs were removed", file=sys.stderr)
        sys.exit(1)
