"""Stage ``assets-enwiki``: the shortened English Wikipedia dump in gensim's test data, as plain text.

Pages are read with gensim's ``extract_pages`` and stripped of wiki markup with
``filter_wiki``; redirects and pages shorter than ``min_chars`` are dropped. These are
whole articles (tens of thousands of characters), unlike the lead extracts of
``assets-wikipedia``.
"""

from __future__ import annotations

import bz2
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.assets.config import EnwikiConfig, load_enwiki
from stages.assets.expectations import corpus_suite
from stages.assets.loaders import CORPUS_FILE
from stages.assets.manifest import AssetError, package_dir, package_source, sha256_file, write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.stage import StageContext, Step, out

ASSET = "enwiki"
DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LICENCE = "Wikipedia text: CC BY-SA (attribution: Wikipedia contributors), shipped inside gensim (LGPL-2.1-only)"


@dataclass(frozen=True)
class Paths:
    corpus: Path = out("asset folder: corpus.parquet + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def plain_text(wikitext: str) -> str:
    """Wiki markup removed (gensim's filter_wiki, then bold/italic quotes) and blank-line runs collapsed."""
    from gensim.corpora.wikicorpus import filter_wiki

    text = re.sub(r"'{2,}", "", filter_wiki(wikitext))
    return re.sub(r"\n\s*\n+", "\n\n", re.sub(r"[ \t]+", " ", text)).strip()


def run(cfg: EnwikiConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Extract articles from the dump, validate, write Parquet and the manifest."""
    from gensim.corpora.wikicorpus import extract_pages

    dump = package_dir("gensim", ASSET, "pip install gensim") / "test" / "test_data" / DUMP
    if not dump.is_file():
        raise AssetError(f"asset '{ASSET}': {dump} is not in this gensim installation")
    rows = []
    with bz2.open(dump, "rb") as fh:
        for title, wikitext, page_id in extract_pages(fh):
            if wikitext.lstrip().upper().startswith("#REDIRECT"):
                continue
            text = plain_text(wikitext)
            if len(text) >= cfg.min_chars:
                rows.append({"id": f"enwiki-{page_id}", "title": title, "text": text})
            if cfg.max_docs is not None and len(rows) >= cfg.max_docs:
                break
    df = pd.DataFrame(rows)
    validate_table(df, "assets.enwiki.corpus", corpus_suite)
    with atomic_dir(paths.corpus) as tmp:
        write_parquet(df, tmp / CORPUS_FILE)
        source = package_source("gensim") | {"file": f"test/test_data/{DUMP}", "file_sha256": sha256_file(dump)}
        write_manifest(tmp, ASSET, source, LICENCE, report=paths.manifest, details={
            "rows": len(df), "min_chars": cfg.min_chars, "mean_chars": round(float(df["text"].str.len().mean()), 1),
            "markup_removal": "gensim.corpora.wikicorpus.filter_wiki"})
    return {"rows": len(df)}


main = Step("assets", ASSET, run, load_enwiki, Paths)


if __name__ == "__main__":
    main()
