"""The report writer: Markdown tables and PNG plots (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from stages.core.io import atomic_path, read_json, write_text

if TYPE_CHECKING:
    from stages.core.verdict import ClaimRecord


def read_timings(folder: Path | str, steps: Sequence[str]) -> dict[str, float]:
    """Wall time of each step from ``<folder>/<step>.json`` (written by the stage runner)."""
    return {step: float(read_json(Path(folder) / f"{step}.json")["wall_time_s"]) for step in steps}


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """'mean ± std (n=k)' over seeds; std is the sample std (ddof=1)."""
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return "n/a"
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return f"{arr.mean():.{digits}f} ± {std:.{digits}f} (n={arr.size})"


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, float):
        return "n/a" if not math.isfinite(value) else f"{value:.{digits}f}"
    return str(value)


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None,
                   digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table from a list of dicts."""
    if not rows:
        return "_(no rows)_\n"
    columns = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c, ""), digits) for c in columns) + " |")
    return "\n".join(lines) + "\n"


@contextmanager
def figure(path: Path | str, nrows: int = 1, ncols: int = 1,
           figsize: tuple[float, float] = (6.4, 4.2), **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """Yield ``(fig, axes)``; on exit save a PNG atomically and close the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **kwargs)
    try:
        yield fig, axes
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110)
    finally:
        plt.close(fig)


def band(ax: Any, x: np.ndarray, runs: np.ndarray, label: str, color: str | None = None) -> None:
    """Plot the mean over runs (axis 0) with a min-max band: seeds as bands."""
    runs = np.atleast_2d(runs)
    (line,) = ax.plot(x, runs.mean(axis=0), label=label, color=color)
    if runs.shape[0] > 1:
        ax.fill_between(x, runs.min(axis=0), runs.max(axis=0), color=line.get_color(), alpha=0.25, lw=0)


def write_markdown(text: str, path: Path | str) -> None:
    """Write a Markdown document atomically."""
    write_text(text.rstrip() + "\n", path)


def report_opening(claim: ClaimRecord, timings: Mapping[str, float]) -> list[str]:
    """Title, verdict line (profile, seeds, wall time per step), the claim and the paper's own result."""
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    return [f"# {claim.title}", "", f"**Verdict: {claim.verdict}** (profile `{claim.profile}`, seeds {claim.seeds}, "
            f"wall time {claim.wall_time_s:.1f} s: {steps})", "",
            "## Claim", claim.claim, "", "## The paper's result", claim.paper_result, ""]


def verdict_section(claim: ClaimRecord) -> list[str]:
    """The rule in words and each check's status with its per-seed values."""
    rows = [{"check": o.description, "status": o.status,
             "per-seed values": ", ".join("n/a" if v is None else f"{v:.4f}" for v in o.values)} for o in claim.checks]
    return ["## Verdict", f"Rule (fixed in params.yaml before the first default run): {claim.verdict_rule}.", "",
            markdown_table(rows)]

