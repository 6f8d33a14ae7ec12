"""Stage ``assets-hypergraphs``: real face-to-face contact hypergraphs shipped inside ``hypergraphx``.

Two SocioPatterns data sets are bundled in the package's test data: the High-School 2013
contacts (327 students, 9 classes, 20-s resolution, 5 days) and the workplace (InVS15)
contacts (92 employees, 5 departments, 2 weeks). Both are stored as time-stamped pairwise
contacts with each person's class, plus the package's own hyperedge lists (the maximal
cliques of the contacts at each time step), which a paper can use to check its own
construction.
"""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.assets.hypergraph_tables import (
    HYPERGRAPH_FILES,
    HypergraphsConfig,
    contacts_suite,
    hyperedges_suite,
    load_hypergraphs_config,
    node_classes_suite,
)
from stages.assets.manifest import AssetError, package_source, sha256_file, write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.stage import StageContext, Step, out

ASSET = "hypergraphs"
DISTRIBUTION = "hypergraphx"
LICENCE = ("SocioPatterns contact data (CC BY-NC-SA 3.0 / CC BY 4.0 per data set, cite Mastrandrea et al. 2015 "
           "and Génois & Barrat 2018), shipped inside hypergraphx (BSD-3-Clause)")
SOURCES = {
    "high_school": {"contacts": "tests/test_data/hs/High-School_data_2013.csv",
                    "hyperedges": "tests/test_data/hs/hs.json"},
    "workplace": {"contacts": "tests/test_data/workplace/workplace.dat",
                  "hyperedges": "tests/test_data/workplace/workplace.json",
                  "meta": "tests/test_data/workplace/workplace_meta.csv"},
}


@dataclass(frozen=True)
class Paths:
    hypergraphs: Path = out("asset folder: contacts / node_classes / hyperedges Parquet + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def package_file(relative: str) -> Path:
    """A data file of the installed hypergraphx distribution, found through its RECORD (no import)."""
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise AssetError(f"asset '{ASSET}': {DISTRIBUTION} is not installed; pip install {DISTRIBUTION}") from None
    for f in files:
        if str(f) == relative:
            path = Path(str(f.locate()))
            if path.is_file():
                return path
    raise AssetError(f"asset '{ASSET}': {relative} is not in this {DISTRIBUTION} installation")


def read_high_school(sources: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Contacts (t, i, j) and each student's class from the 5-column High-School file."""
    raw = pd.read_csv(sources["contacts"], sep=r"\s+", header=None, names=["t", "i", "j", "ci", "cj"])
    classes = pd.concat([raw[["i", "ci"]].set_axis(["node", "cls"], axis=1),
                         raw[["j", "cj"]].set_axis(["node", "cls"], axis=1)]).drop_duplicates()
    if classes.node.duplicated().any():
        raise AssetError(f"asset '{ASSET}': a High-School node has two classes")
    return raw[["t", "i", "j"]], classes


def read_workplace(sources: dict[str, Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Contacts (t, i, j) and each employee's department from the workplace files."""
    raw = pd.read_csv(sources["contacts"], sep=r"\s+", header=None, names=["t", "i", "j"])
    meta = pd.read_csv(sources["meta"])
    return raw, meta[["nodeName", "class"]].set_axis(["node", "cls"], axis=1)


def package_hyperedges(path: Path) -> pd.DataFrame:
    """The hyperedge list of a hypergraphx JSON file: sorted members as a space-separated string, weight."""
    records = json.loads(path.read_text())
    rows = [{"members": " ".join(str(v) for v in sorted(r["interaction"])), "weight": int(r.get("weight", 1))}
            for r in records if r.get("type") == "edge"]
    return pd.DataFrame(rows)


def run(cfg: HypergraphsConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Read both data sets from the package, validate, write three tables and the manifest."""
    readers = {"high_school": read_high_school, "workplace": read_workplace}
    contacts, classes, edges, details = [], [], [], {}
    for name in cfg.datasets:
        sources = {k: package_file(v) for k, v in SOURCES[name].items()}
        c, n = readers[name](sources)
        e = package_hyperedges(sources["hyperedges"])
        contacts.append(c.assign(dataset=name))
        classes.append(n.assign(dataset=name))
        edges.append(e.assign(dataset=name))
        details[name] = {"contacts": len(c), "nodes": int(n.node.nunique()), "classes": int(n.cls.nunique()),
                         "package_hyperedges": len(e),
                         "files": {k: {"path": v, "sha256": sha256_file(sources[k])} for k, v in SOURCES[name].items()}}
    tables = {"contacts": pd.concat(contacts, ignore_index=True)[["dataset", "t", "i", "j"]],
              "node_classes": pd.concat(classes, ignore_index=True)[["dataset", "node", "cls"]],
              "hyperedges": pd.concat(edges, ignore_index=True)[["dataset", "members", "weight"]]}
    tables["node_classes"]["cls"] = tables["node_classes"]["cls"].astype(str)
    for key in ("contacts", "node_classes"):
        tables[key][[c for c in tables[key].columns if c in ("t", "i", "j", "node")]] = \
            tables[key][[c for c in tables[key].columns if c in ("t", "i", "j", "node")]].astype("int64")
    validate_table(tables["contacts"], "assets.hypergraphs.contacts", contacts_suite)
    validate_table(tables["node_classes"], "assets.hypergraphs.node_classes", node_classes_suite)
    validate_table(tables["hyperedges"], "assets.hypergraphs.hyperedges", hyperedges_suite)
    with atomic_dir(paths.hypergraphs) as tmp:
        for key, df in tables.items():
            write_parquet(df, tmp / HYPERGRAPH_FILES[key])
        write_manifest(tmp, ASSET, package_source(DISTRIBUTION), LICENCE, report=paths.manifest, details=details)
    return {name: d["package_hyperedges"] for name, d in details.items()}


main = Step("assets", ASSET, run, load_hypergraphs_config, Paths)


if __name__ == "__main__":
    main()
