"""Step ``data``: hyperlinks of each contact data set (checked against the package's lists), time split, features."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.hypergraph_tables import load_hypergraphs
from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.relash.config import PAPER, DataConfig, load_data
from stages.relash.expectations import hyperlinks_suite, nodes_suite
from stages.relash.hypergraph import (
    incidence,
    maximal_clique_hyperlinks,
    members_key,
    parse_members,
    spectral_node_embedding,
    split_by_time,
)


@dataclass(frozen=True)
class Paths:
    asset: Path = inp("contact hypergraph asset (hypergraphx)")
    hyperlinks: Path = out("hyperlinks with attributes and split (Parquet)")
    nodes: Path = out("nodes: index, class, fixed spectral features (Parquet)")


def check_against_package(links: pd.DataFrame, package: pd.DataFrame, name: str) -> None:
    """The clique construction must give exactly the package's hyperedges (and its weights = window counts)."""
    ours = dict(zip(links.members, links["count"], strict=True))
    theirs = dict(zip(package.members, package.weight, strict=True))
    if set(ours) != set(theirs):
        raise ValueError(f"{name}: {len(set(ours) ^ set(theirs))} hyperlinks differ from hypergraphx's list")
    if package.weight.max() > 1 and any(ours[k] != w for k, w in theirs.items()):
        raise ValueError(f"{name}: window counts differ from hypergraphx's weights")


def build_dataset(name: str, cfg: DataConfig, asset: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hyperlinks (node ids → indices, split by time) and the node table of one data set."""
    links = maximal_clique_hyperlinks(asset.contacts[asset.contacts.dataset == name])
    check_against_package(links, asset.hyperedges[asset.hyperedges.dataset == name], name)
    if cfg.max_hyperlinks is not None:
        links = links.head(cfg.max_hyperlinks).copy()
    nodes = asset.node_classes[asset.node_classes.dataset == name].sort_values("node").reset_index(drop=True)
    index = {int(v): i for i, v in enumerate(nodes.node)}
    links["members"] = [members_key([index[v] for v in parse_members(k)]) for k in links.members]
    links["split"] = split_by_time(len(links), cfg.split_fractions)
    links.insert(0, "dataset", name)
    classes = sorted(nodes.cls.unique())
    nodes = nodes.assign(index=np.arange(len(nodes)), class_index=[classes.index(c) for c in nodes.cls])
    feats = spectral_node_embedding(incidence(links[links.split == "train"].members.tolist(), len(nodes)),
                                    cfg.spectral_dim)
    for k in range(feats.shape[1]):
        nodes[f"f{k}"] = feats[:, k]
    return links, nodes[["dataset", "node", "index", "cls", "class_index", *[f"f{k}" for k in range(feats.shape[1])]]]


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write both tables."""
    asset = load_hypergraphs(paths.asset)
    built = [build_dataset(name, cfg, asset) for name in cfg.datasets]
    links = pd.concat([b[0] for b in built], ignore_index=True)
    nodes = pd.concat([b[1] for b in built], ignore_index=True)
    validate_table(links, "relash.hyperlinks", hyperlinks_suite)
    validate_table(nodes, "relash.nodes", nodes_suite)
    write_parquet(links, paths.hyperlinks)
    write_parquet(nodes, paths.nodes)
    return {f"{d}_{s}": int(((links.dataset == d) & (links.split == s)).sum())
            for d in cfg.datasets for s in ("train", "val", "test")}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
