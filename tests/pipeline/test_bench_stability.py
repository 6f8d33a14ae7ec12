"""benchmarks/stability.py: metric changes and status flips between two runs, on hand-made reports."""

from __future__ import annotations

import json

import pytest
import yaml

from benchmarks.stability import compare, compare_claims, compare_metrics, numbers, table


def _claim(verdict: str, *statuses: str) -> dict:
    return {"verdict": verdict, "checks": [{"name": f"c{i}", "status": s} for i, s in enumerate(statuses)]}


def test_numbers_flattens_json_and_skips_booleans_and_non_finite():
    tree = {"mean": {"a": 1, "b": [0.5, None, True]}, "verdict": "partly", "n": float("nan")}
    assert numbers(tree) == {"mean.a": 1.0, "mean.b[0]": 0.5}


def test_metric_changes_by_hand():
    base = {"per_seed": {"gap": [0.10, 0.20]}, "mean": 2.0, "old": 1}
    moved = {"per_seed": {"gap": [0.10, 0.25]}, "mean": 2.0, "new": 1}
    r = compare_metrics(base, moved)
    assert r["numbers"] == 3 and r["changed"] == 1
    assert r["max_abs_key"] == r["max_rel_key"] == "per_seed.gap[1]"
    assert r["max_abs_change"] == pytest.approx(0.05)
    assert r["max_rel_change"] == pytest.approx(0.05 / 0.25)
    assert r["only_in_one"] == ["new", "old"]
    assert compare_metrics(base, base)["max_rel_change"] == 0.0


def test_a_flipped_check_and_verdict_are_named():
    same = compare_claims(_claim("partly", "holds", "fails"), _claim("partly", "holds", "fails"))
    assert not same["verdict_changed"] and same["checks_changed"] == []
    flip = compare_claims(_claim("partly", "holds", "fails"), _claim("reproduced", "holds", "holds"))
    assert flip["verdict_changed"]
    assert flip["checks_changed"] == [{"check": "c1", "base": "fails", "perturbed": "holds"}]


def test_compare_two_workspaces_per_paper(tmp_path):
    for ws, value, verdict in (("a", 1.0, "partly"), ("b", 1.001, "partly")):
        (tmp_path / ws).mkdir()
        (tmp_path / ws / "params.yaml").write_text(yaml.safe_dump({"papers": ["p", "q"]}))
        (tmp_path / ws / "reports" / "p").mkdir(parents=True)
        (tmp_path / ws / "reports" / "p" / "metrics.json").write_text(json.dumps({"m": value}))
        (tmp_path / ws / "reports" / "p" / "claim.json").write_text(json.dumps(_claim(verdict, "holds")))
    result = compare(tmp_path / "a", tmp_path / "b")
    assert result["p"]["max_rel_change"] == pytest.approx(0.001 / 1.001)
    assert not result["p"]["verdict_changed"]
    assert "missing" in result["q"]  # a paper without outputs is reported, not skipped silently
    text = table(result)
    assert "| p | 1 | 1 |" in text and "| q | missing outputs" in text
