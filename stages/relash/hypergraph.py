"""Hyperlinks from time-stamped contacts: maximal cliques per time step, deduplicated, with attributes.

A hyperlink is a group of people all in mutual contact during one 20-s window (a maximal
clique of that window's contact graph), as in the hypergraphs hypergraphx ships. Each
distinct node set is kept once, at its first appearance; its attributes are the time of
day of that appearance and the log of how many windows the group was observed on that day.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

SECONDS_PER_DAY = 86400
ATTRIBUTES = ("time_of_day", "log_duration")
SPLITS = ("train", "val", "test")


def members_key(nodes: Sequence[int]) -> str:
    """The canonical text of a node set: sorted ids joined by spaces."""
    return " ".join(str(int(v)) for v in sorted(nodes))


def parse_members(key: str) -> list[int]:
    """The node ids of a canonical node-set text."""
    return [int(v) for v in key.split()]


def maximal_clique_hyperlinks(contacts: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct maximal clique (size ≥ 2) over all time steps: first time, counts, attributes."""
    import networkx as nx

    first: dict[str, int] = {}
    total: dict[str, int] = {}
    on_first_day: dict[str, int] = {}
    for t, g in contacts.groupby("t", sort=True):
        graph = nx.Graph()
        graph.add_edges_from(zip(g.i.to_numpy(), g.j.to_numpy(), strict=True))
        for clique in nx.find_cliques(graph):
            if len(clique) < 2:
                continue
            key = members_key(clique)
            t = int(t)
            first.setdefault(key, t)
            total[key] = total.get(key, 0) + 1
            if t // SECONDS_PER_DAY == first[key] // SECONDS_PER_DAY:
                on_first_day[key] = on_first_day.get(key, 0) + 1
    keys = sorted(first, key=lambda k: (first[k], k))
    df = pd.DataFrame({"members": keys, "size": [len(k.split()) for k in keys],
                       "first_t": [first[k] for k in keys], "count": [total[k] for k in keys],
                       "first_day_count": [on_first_day[k] for k in keys]})
    df["time_of_day"] = (df.first_t % SECONDS_PER_DAY) / 3600.0
    df["log_duration"] = np.log(df.first_day_count.astype(float))
    return df


def split_by_time(n: int, fractions: Sequence[float]) -> np.ndarray:
    """Split labels for n hyperlinks sorted by first appearance: the earliest go to train, then val, then test."""
    cuts = np.round(np.cumsum(fractions)[:-1] * n).astype(int)
    labels = np.empty(n, dtype=object)
    bounds = [0, *cuts.tolist(), n]
    for name, lo, hi in zip(SPLITS, bounds[:-1], bounds[1:], strict=True):
        labels[lo:hi] = name
    return labels


def incidence(members: Sequence[str], n_nodes: int) -> np.ndarray:
    """The hyperlink-by-node incidence matrix A (A_ji = 1 iff node i ∈ hyperlink j), float32."""
    a = np.zeros((len(members), n_nodes), dtype=np.float32)
    for j, key in enumerate(members):
        a[j, parse_members(key)] = 1.0
    return a


def spectral_node_embedding(a_train: np.ndarray, dim: int) -> np.ndarray:
    """Fixed node features: top non-trivial eigenvectors of Θ = D_v^{-1/2} Aᵀ D_e^{-1} A D_v^{-1/2} (Zhou et al. 2006).

    Each eigenvector is scaled by its eigenvalue and its largest entry made positive.
    """
    d_v = np.maximum(a_train.sum(axis=0), 1.0)
    d_e = np.maximum(a_train.sum(axis=1), 1.0)
    h = a_train / np.sqrt(d_v)[None, :]
    theta = (h.T / d_e[None, :]) @ h
    vals, vecs = np.linalg.eigh(theta.astype(np.float64))
    order = np.argsort(vals)[::-1][1:dim + 1]
    vecs = vecs[:, order] * vals[order][None, :]
    signs = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(vecs.shape[1])])
    return vecs * np.where(signs == 0, 1.0, signs)[None, :]
