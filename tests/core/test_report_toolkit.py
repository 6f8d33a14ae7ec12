"""The report toolkit: claim from the rule, report.md from the paper's template, the ledger's check column."""

from __future__ import annotations

import dataclasses

import pytest

from stages.claims import index_html, index_markdown
from stages.core.io import read_json
from stages.core.report import PaperCard, ReportPaths, decide_claim, render_report, write_report
from stages.core.verdict import VerdictRule

CARD = PaperCard(paper="toy", title="A title (ICLR 2026)", claim="X beats Y.", paper_result="+3 points")
RULE = VerdictRule.model_validate({"min_seeds": 2, "checks": [
    {"name": "x beats y", "metric": "gain", "op": ">=", "threshold": 0.1},
    {"name": "x is stable", "metric": "spread", "op": "<=", "threshold": 0.5}]})


def _claim(gain: list[float], spread: list[float]):
    return decide_claim(CARD, RULE, {"gain": gain, "spread": spread}, seeds=[0, 1], profile="smoke",
                        timings={"train": 2.0, "evaluate": 1.5})


def test_decide_claim_applies_the_rule_and_sums_the_step_times():
    claim = _claim([0.2, 0.3], [0.9, 0.8])
    assert claim.verdict == "partly" and claim.wall_time_s == pytest.approx(3.5)
    assert [o.status for o in claim.checks] == ["holds", "fails"]
    assert claim.measured["gain"].startswith("0.250 ± 0.071")


def test_ledger_shows_each_check_status_beside_the_verdict():
    claim = _claim([0.2, 0.05], [0.9, 0.8])  # one unclear, one failing: verdict inconclusive
    md = index_markdown([claim])
    assert "**inconclusive**" in md
    assert "? x beats y (unclear)" in md and "✗ x is stable (fails)" in md
    assert "✗ x is stable (fails)" in index_html([claim])


TOY_TEMPLATE = """{% extends "report_frame.md.j2" %}
{% block body %}
## What the miniature does
p = {{ p }}, n = {{ n | thousands }}; {{ rows | table }}
{% endblock %}
"""


@pytest.fixture
def toy_paper(tmp_path, monkeypatch):
    (tmp_path / "papers" / "toy").mkdir(parents=True)
    (tmp_path / "papers" / "toy" / "report.md.j2").write_text(TOY_TEMPLATE)
    monkeypatch.setattr("stages.core.report.PAPERS_DIR", tmp_path / "papers")


def test_write_report_renders_the_papers_template_with_the_frame(tmp_path, toy_paper):
    fields = {f.name: tmp_path / f.name for f in dataclasses.fields(ReportPaths)}
    paths = ReportPaths(**fields)
    claim = _claim([0.2, 0.3], [0.1, 0.2])
    rows = [{"lam": 0.5, "gap": 0.01}]
    write_report(paths, claim, {"verdict": claim.verdict}, {"train": 2.0, "evaluate": 1.5}, p=90, n=1200,
                 rows=rows)
    text = paths.report.read_text()
    assert text.startswith("# A title (ICLR 2026)\n")
    assert ("**Verdict: reproduced** (profile `smoke`, seeds [0, 1], wall time 3.5 s: train 2.0 s, "
            "evaluate 1.5 s)") in text
    assert "p = 90, n = 1,200; | lam | gap |" in text and "| x beats y: gain >= 0.1 | holds |" in text
    assert read_json(paths.claim)["verdict"] == "reproduced" and read_json(paths.metrics) == {"verdict": "reproduced"}


def test_a_template_variable_that_is_not_given_is_an_error_not_a_blank(toy_paper):
    import jinja2

    with pytest.raises(jinja2.UndefinedError, match="'p' is undefined"):
        render_report("toy", claim=_claim([0.2, 0.3], [0.1, 0.2]), timings={}, rows=[], n=3)


def test_a_claim_with_null_values_reaches_report_and_ledger(tmp_path, toy_paper):
    from stages.claims import index_html, load_claims
    from stages.core.io import InputError

    fields = {f.name: tmp_path / "reports" / "toy" / f.name for f in dataclasses.fields(ReportPaths)}
    fields["claim"] = tmp_path / "reports" / "toy" / "claim.json"
    paths = ReportPaths(**fields)
    claim = _claim([float("nan"), None], [0.1, float("inf")])  # a diverged seed on each check
    write_report(paths, claim, {"gain": [float("nan"), None]}, {"train": 2.0}, p=1, n=2,
                 rows=[{"lam": None, "gap": float("nan")}])
    assert read_json(paths.metrics) == {"gain": [None, None]}
    assert "| n/a | n/a |" in paths.report.read_text()
    (loaded,) = load_claims(["toy"], tmp_path / "reports")
    assert [o.status for o in loaded.checks] == ["fails", "unclear"] and loaded.verdict == "inconclusive"
    assert [o.values for o in loaded.checks] == [[None, None], [0.1, None]]
    assert "? x is stable (unclear)" in index_markdown([loaded]) and "inconclusive" in index_html([loaded])
    paths.claim.write_text('{"paper": "toy", "verdict": ')  # truncated: one clear error naming the file
    with pytest.raises(InputError, match=r"claim\.json: not JSON"):
        load_claims(["toy"], tmp_path / "reports")
