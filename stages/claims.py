"""The claims ledger: ``reports/index.md`` and ``index.html``, one row per paper.

The list of papers is ``papers:`` in params.yaml; each row comes from that paper's
``reports/<paper>/claim.json`` (schema: ``stages.core.verdict.ClaimRecord``).
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from stages.core.config import DEFAULT_PARAMS, ConfigError, load_global
from stages.core.io import read_json, write_text
from stages.core.verdict import VERDICTS, ClaimRecord

COLUMNS = ("paper", "claim", "paper's result", "measured", "verdict", "checks", "profile", "wall time (s)")
STATUS_MARK = {"holds": "✓", "fails": "✗", "unclear": "?"}


def load_claims(papers: Sequence[str], reports: Path) -> list[ClaimRecord]:
    """Read and validate every paper's claim.json; a missing or malformed one is an error."""
    claims = []
    for paper in papers:
        path = reports / paper / "claim.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: run `dvc repro {paper}-report`")
        try:
            claim = ClaimRecord.model_validate(read_json(path))
        except ValidationError as err:
            raise ValueError(f"{path} does not match the claim schema: {err}") from None
        if claim.paper != paper:
            raise ValueError(f"{path} says paper '{claim.paper}', expected '{paper}'")
        claims.append(claim)
    return claims


def _measured(claim: ClaimRecord) -> str:
    return "; ".join(f"{k} = {v}" for k, v in claim.measured.items())


def checks_summary(claim: ClaimRecord) -> str:
    """Every check's status beside the verdict, so a decisive failure is never hidden behind it."""
    return "; ".join(f"{STATUS_MARK[o.status]} {o.name} ({o.status})" for o in claim.checks)


def index_markdown(claims: Sequence[ClaimRecord]) -> str:
    """The ledger as a Markdown table with links to each report."""
    lines = ["# Claims ledger", "",
             "One row per paper: the claim in our words, the paper's own result, what the miniature measured "
             "(mean ± std over seeds), the verdict computed by the rule in that paper's params section, and the "
             "status of each of the rule's checks (✓ holds on every seed, ✗ fails on every seed, ? unclear).", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for c in claims:
        cells = [f"[{c.paper}]({c.paper}/report.md)", c.claim, c.paper_result, _measured(c),
                 f"**{c.verdict}**", checks_summary(c), c.profile, f"{c.wall_time_s:.1f}"]
        lines.append("| " + " | ".join(x.replace("|", "\\|").replace("\n", " ") for x in cells) + " |")
    counts = {v: sum(c.verdict == v for c in claims) for v in VERDICTS}
    lines += ["", "Totals: " + ", ".join(f"{k} {v}" for k, v in counts.items()), ""]
    return "\n".join(lines)


def index_html(claims: Sequence[ClaimRecord]) -> str:
    """The same ledger as a standalone HTML page (no external assets)."""
    colors = {"reproduced": "#d4edda", "partly": "#fff3cd", "not_reproduced": "#f8d7da", "inconclusive": "#e2e3e5"}
    rows = []
    for c in claims:
        cells = [f'<a href="{html.escape(c.paper)}/report.md">{html.escape(c.paper)}</a>', html.escape(c.claim),
                 html.escape(c.paper_result), html.escape(_measured(c)),
                 f'<b style="background:{colors[c.verdict]}">{c.verdict}</b>',
                 "<br>".join(html.escape(f"{STATUS_MARK[o.status]} {o.name} ({o.status})") for o in c.checks),
                 html.escape(c.profile),
                 f"{c.wall_time_s:.1f}"]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in COLUMNS)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>Claims ledger</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:6px;vertical-align:top;font-size:14px}</style></head>"
            f"<body><h1>Claims ledger</h1><table><tr>{head}</tr>{''.join(rows)}</table></body></html>\n")


def run(params: Path, reports: Path, index_md: Path, index_html_path: Path) -> list[ClaimRecord]:
    """Build both ledger files from the papers listed in params.yaml."""
    claims = load_claims(load_global(params).papers, reports)
    write_text(index_markdown(claims), index_md)
    write_text(index_html(claims), index_html_path)
    return claims


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m stages.claims")
    parser.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    parser.add_argument("--reports", type=Path, required=True)
    parser.add_argument("--index-md", type=Path, required=True)
    parser.add_argument("--index-html", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        run(args.params, args.reports, args.index_md, args.index_html)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        print(f"[claims] {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
