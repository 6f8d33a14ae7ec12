"""The report toolkit: report paths, the claim and its verdict, Markdown from templates, PNG plots.

A paper's report step subclasses :class:`ReportPaths` with its own inputs, builds the claim
with :func:`decide_claim` and writes report.md, metrics.json and claim.json with one call to
:func:`write_report`. The prose lives in ``stages/<paper>/report.md.j2``, which extends
``stages/core/templates/report_frame.md.j2`` (title, verdict line, claim, the paper's result,
the verdict section with every check's status); every count in it is filled in from params
and results, so the text is right at every profile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from stages.core.io import atomic_path, read_json, write_json, write_text
from stages.core.stage import inp, out
from stages.core.verdict import ClaimRecord, VerdictRule, decide

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
PAPERS_DIR = Path(__file__).resolve().parents[1]
# ReportPaths field -> path under reports/<paper>/ (the DAG generator's defaults)
REPORT_FIELDS = {"timings": "timings", "report": "report.md", "metrics": "metrics.json", "claim": "claim.json",
                 "plots": "plots"}


@dataclasses.dataclass(frozen=True)
class ReportPaths:
    """What every report step reads and writes; a paper's report ``Paths`` subclasses it."""

    timings: Path = inp("folder of the paper's step timings (written by the stage runner)")
    report: Path = out("report.md")
    metrics: Path = out("metrics.json (deterministic: no timings)")
    claim: Path = out("claim.json (read by the claims ledger)")
    plots: Path = out("folder of PNG plots")


@dataclasses.dataclass(frozen=True)
class PaperCard:
    """The fixed text of a paper's claim: cited title, the claim in our words, the paper's own result."""

    paper: str
    title: str
    claim: str
    paper_result: str


def read_timings(folder: Path | str, steps: Sequence[str]) -> dict[str, float]:
    """Wall time of each step from ``<folder>/<step>.json`` (written by the stage runner)."""
    return {step: float(read_json(Path(folder) / f"{step}.json")["wall_time_s"]) for step in steps}


def mean_std(values: Sequence[float | None] | None, digits: int = 3) -> str:
    """'mean ± std (n=k)' over the seeds with a finite value; std is the sample std (ddof=1)."""
    if values is None:
        return "n/a"
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return "n/a"
    std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    return f"{arr.mean():.{digits}f} ± {std:.{digits}f} (n={arr.size})"


def _cell(value: Any, digits: int) -> str:
    if value is None:  # a non-finite number read back from JSON
        return "n/a"
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


def decide_claim(card: PaperCard, rule: VerdictRule, per_seed: Mapping[str, Sequence[float]], *,
                 seeds: Sequence[int], profile: str, timings: Mapping[str, float],
                 measured: Mapping[str, str] | None = None) -> ClaimRecord:
    """The verdict from per-seed metrics by the paper's rule, as the claim record the ledger reads."""
    verdict, outcomes = decide(rule, per_seed)
    measured = dict(measured) if measured is not None else {k: mean_std(v) for k, v in per_seed.items()}
    return ClaimRecord(paper=card.paper, title=card.title, claim=card.claim, paper_result=card.paper_result,
                       measured=measured, verdict=verdict, verdict_rule=rule.describe(), checks=outcomes,
                       profile=profile, seeds=list(seeds), wall_time_s=float(sum(timings.values())))


def checks_table(claim: ClaimRecord) -> str:
    """Each check's status with its per-seed values."""
    rows = [{"check": o.description, "status": o.status,
             "per-seed values": ", ".join("n/a" if v is None else f"{v:.4f}" for v in o.values)} for o in claim.checks]
    return markdown_table(rows)


def _fmt(value: Any, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return format(value, spec)


def render_report(paper: str, template: str = "report.md.j2", **context: Any) -> str:
    """Render ``stages/<paper>/<template>`` (which extends the core report template)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader([PAPERS_DIR / paper, TEMPLATE_DIR]),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters.update(table=markdown_table, mean_std=mean_std, fmt=_fmt, thousands=lambda n: f"{int(n):,}",
                       kv_table=lambda m, k="metric", v="value": markdown_table([{k: a, v: b} for a, b in m.items()]))
    env.globals.update(checks_table=checks_table)
    return env.get_template(template).render(**context)


def write_report(paths: ReportPaths, claim: ClaimRecord, metrics: Mapping[str, Any],
                 timings: Mapping[str, float], **context: Any) -> None:
    """Write report.md (from the paper's template), metrics.json and claim.json."""
    text = render_report(claim.paper, claim=claim, timings=timings, **context)
    write_markdown(text, paths.report)
    write_json(dict(metrics), paths.metrics)
    write_json(claim.model_dump(), paths.claim)
