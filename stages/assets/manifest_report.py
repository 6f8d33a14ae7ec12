"""Stage ``assets-manifest``: ``reports/assets/manifest.md``, each asset's source, licence, size, preparation time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.core.io import read_json
from stages.core.report import markdown_table, write_markdown
from stages.core.stage import StageContext, Step, inp, out

HEADER = """# Offline assets

Every model and data set the papers use, prepared by an `assets-<name>` stage from a
PyPI or Debian package (no network at run time). Each asset folder holds a
`manifest.json` with the sha256 of every file; the loaders in `stages/assets/` check
it and name the stage to rerun when a file is missing or corrupt. Preparation time is
the stage's wall time on the machine that produced this file (profile `{profile}`).
"""

SUMMARY_KEYS = ("rows", "train_count", "test_count", "train_cases", "test_cases", "articles", "chunks",
                "original_quantisation", "english_fraction", "check_greedy", "check_perplexity",
                "check_paraphrase_margin", "check_self_retrieval")


@dataclass(frozen=True)
class Paths:
    manifests: Path = inp("folder of the assets' committed manifest copies")
    timings: Path = inp("folder of the assets' stage timings")
    report: Path = out("reports/assets/manifest.md")


def _source(src: dict[str, Any]) -> str:
    if src.get("kind") in ("pypi", "debian"):
        return f"{src['kind']}: `{src['package']}` {src['version']}"
    return "derived from " + ", ".join(f"`{s}`" for s in src.get("from", []))


def _summary(details: dict[str, Any]) -> str:
    parts = []
    for key in SUMMARY_KEYS:
        if key in details:
            value = details[key]
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in value.items())
            parts.append(f"{key.removeprefix('check_')}: {value}")
    return "; ".join(parts) or "-"


def run(cfg: None, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """One table row per manifest in ``paths.manifests``, with its stage's wall time."""
    rows, profiles = [], set()
    for path in sorted(paths.manifests.glob("*.json")):
        m = read_json(path)
        timing_path = paths.timings / path.name
        timing = read_json(timing_path) if timing_path.is_file() else {}
        profiles.add(timing.get("profile", "?"))
        rows.append({"asset": m["asset"], "stage": f"`{m['stage']}`", "source": _source(m["source"]),
                     "licence": m["licence"], "files": len(m["files"]),
                     "size (MiB)": round(m["size_bytes"] / 2**20, 2),
                     "preparation (s)": timing.get("wall_time_s", float("nan")),
                     "contents and checks": _summary(m.get("details", {}))})
    if not rows:
        raise FileNotFoundError(f"no asset manifests in {paths.manifests}")
    total = sum(r["size (MiB)"] for r in rows)
    text = (HEADER.format(profile=", ".join(sorted(profiles))) + "\n" + markdown_table(rows, digits=2)
            + f"\nTotal: {len(rows)} assets, {total:.1f} MiB.\n")
    write_markdown(text, paths.report)
    return {"assets": len(rows)}


main = Step("assets", "manifest", run, lambda params: None, Paths)


if __name__ == "__main__":
    main()
