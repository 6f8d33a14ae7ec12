"""Every fidelity distance is 0 for identical samples and grows with a shift; hyperlink construction."""

import numpy as np
import pandas as pd
import pytest

from stages.relash.hypergraph import maximal_clique_hyperlinks, split_by_time
from stages.relash.metrics import ATTRIBUTE, STRUCTURE, fidelity, frechet_distance, total_variation

N_CLASSES = 3
NODE_CLASS = np.repeat(np.arange(N_CLASSES), 4)  # 12 nodes, 4 per class
FEATURES = np.random.default_rng(0).normal(size=(12, 3))


def sample(rng: np.random.Generator, n: int, p_mixed: float, big: float, x_shift: float):
    """Hyperlinks within one class (or mixed with probability p_mixed), size 3 with probability big."""
    out = []
    for _ in range(n):
        size = 3 if rng.random() < big else 2
        if rng.random() < p_mixed:
            nodes = rng.choice(12, size, replace=False)
        else:
            c = rng.integers(N_CLASSES)
            nodes = rng.choice(np.arange(4 * c, 4 * c + 4), size, replace=False)
        out.append(" ".join(map(str, sorted(nodes))))
    sizes = np.array([len(k.split()) for k in out])
    x = np.stack([rng.normal(8 + x_shift, 2, n) + sizes, rng.normal(1 + x_shift, 1, n)], axis=1)
    return out, x


def run_fidelity(gen, xg, ref, xr):
    return fidelity(gen, xg, ref, xr, NODE_CLASS, N_CLASSES, FEATURES, np.zeros(6), np.ones(6))


def test_every_metric_is_zero_for_identical_samples():
    ref, x = sample(np.random.default_rng(1), 300, 0.1, 0.3, 0.0)
    out = run_fidelity(ref, x, ref, x)
    for k in (*STRUCTURE, *ATTRIBUTE, "frechet", "structure_score", "attribute_score"):
        assert out[k] == pytest.approx(0.0, abs=1e-6), k


def test_metrics_grow_with_a_shift():
    rng = np.random.default_rng(2)
    ref, xr = sample(rng, 400, 0.1, 0.3, 0.0)
    near, xn = sample(rng, 400, 0.1, 0.3, 0.0)
    far, xf = sample(rng, 400, 0.9, 0.8, 2.0)
    a, b = run_fidelity(near, xn, ref, xr), run_fidelity(far, xf, ref, xr)
    for k in ("size_tv", "comembership_tv", "homophily_error", "attr_mean_error", "frechet", "structure_score",
              "attribute_score"):
        assert b[k] > a[k], k


def test_total_variation_and_frechet_by_hand():
    assert total_variation(np.array([1.0, 1.0]), np.array([0.0, 2.0])) == pytest.approx(0.5)
    rng = np.random.default_rng(3)
    f = rng.normal(size=(20000, 2))
    assert frechet_distance(f, f + np.array([1.0, 0.0])) == pytest.approx(1.0, abs=1e-6)
    assert frechet_distance(f, 2 * f) == pytest.approx(2.0, rel=0.05)  # Tr(I + 4I − 2·2I) = 2


def test_maximal_cliques_per_window_deduplicated_at_first_appearance():
    contacts = pd.DataFrame({"t": [20, 20, 20, 20, 40, 40, 86420], "i": [1, 1, 2, 5, 1, 1, 1],
                             "j": [2, 3, 3, 6, 2, 3, 2]})
    links = maximal_clique_hyperlinks(contacts).set_index("members")
    assert set(links.index) == {"1 2 3", "5 6", "1 2", "1 3"}
    assert links.loc["1 2 3", "first_t"] == 20 and links.loc["1 2", "first_t"] == 40
    assert links.loc["1 2", "count"] == 2 and links.loc["1 2", "first_day_count"] == 1
    assert links.loc["5 6", "time_of_day"] == pytest.approx(20 / 3600)


def test_split_by_time():
    assert list(split_by_time(10, [0.6, 0.2, 0.2])) == ["train"] * 6 + ["val"] * 2 + ["test"] * 2
