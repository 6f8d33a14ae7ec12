"""Smoke runs of the real steps at the smoke profile (called as plain functions), chained once per module."""

import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, write_parquet
from stages.core.stage import run_stage
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.sci2pol import agree, bench, config, corpus, report
from stages.sci2pol.tasks import TASKS
from tests.conftest import write_params

PAPER = "sci2pol"


@pytest.fixture(scope="module")
def chain(tmp_path_factory, smollm2_asset, minilm_asset):
    """corpus → agree → bench → report at the smoke profile, in one temporary folder."""
    tmp = tmp_path_factory.mktemp("sci2pol")
    params = write_params(tmp)
    timings = tmp / "timings"
    cp = corpus.Paths(pairs=tmp / "pairs.parquet", funnel=tmp / "funnel.json")
    run_stage(PAPER, "corpus", corpus.run, config.load_corpus(params), cp, params, timings / "corpus.json")
    ap = agree.Paths(model=smollm2_asset, encoder=minilm_asset, scores=tmp / "judge_scores.parquet",
                     correlations=tmp / "corr.json")
    run_stage(PAPER, "agree", agree.run, config.load_judge(params), ap, params, timings / "agree.json")
    bp = bench.Paths(model=smollm2_asset, pairs=cp.pairs, scores=tmp / "scores.parquet",
                     answers=tmp / "answers.parquet", losses=tmp / "losses.parquet")
    run_stage(PAPER, "bench", bench.run, config.load_bench_inputs(params), bp, params, timings / "bench.json")
    rp = report.Paths(funnel=cp.funnel, correlations=ap.correlations, judge_scores=ap.scores,
                      bench_scores=bp.scores, answers=bp.answers, losses=bp.losses, timings=timings,
                      report=tmp / "report.md", metrics=tmp / "metrics.json", claim=tmp / "claim.json",
                      plots=tmp / "plots")
    run_stage(PAPER, "report", report.run, config.load_report(params), rp, params, timings / "report.json")
    return SimpleNamespace(tmp=tmp, params=params, corpus=cp, agree=ap, bench=bp, report=rp)


def test_corpus_step_writes_pairs_and_a_monotone_funnel(chain):
    df = corpus.read_pairs(chain.corpus.pairs)
    summary = read_json(chain.corpus.funnel)
    assert [r["step"] for r in summary["funnel"]] == ["citations", "link", "screen", "split", "filter", "polish"]
    counts = [r["count"] for r in summary["funnel"]]
    assert all(a >= b for a, b in itertools.pairwise(counts))
    assert (df.set == "curated").sum() == counts[-1] == (df.set == "unfiltered").sum()
    assert summary["purity"]["curated"] >= summary["purity"]["unfiltered"]
    assert 0 < summary["link_precision"] <= 1
    write_parquet(df.assign(kind="nonsense"), chain.tmp / "bad_pairs.parquet")
    with pytest.raises(DataValidationError, match="kind"):
        corpus.read_pairs(chain.tmp / "bad_pairs.parquet")


def test_agree_step_scores_every_brief_with_every_scorer(chain):
    cfg = config.load_judge(chain.params)
    df = agree.read_scores(chain.agree.scores)
    assert len(df) == cfg.n_seeds * cfg.n_papers * 6
    corr = read_json(chain.agree.correlations)
    assert len(corr["per_seed"]) == cfg.n_seeds
    assert all(r["rubric"] > 0.5 for r in corr["per_seed"])


def test_bench_step_scores_every_variant_task_and_item(chain):
    cfg = config.load_bench_inputs(chain.params)
    scores, answers = bench.read_task_scores(chain.bench.scores), bench.read_answers(chain.bench.answers)
    losses = bench.read_losses(chain.bench.losses)
    n_seeds = cfg.finetune.n_seeds
    assert len(scores) == len(bench.VARIANTS) * n_seeds * len(TASKS)
    assert set(scores.variant) == set(bench.VARIANTS)
    assert len(answers) == len(scores) * cfg.bench.items_per_task
    assert len(losses) == 2 * n_seeds * cfg.finetune.steps  # the two fine-tuned variants
    write_parquet(scores.assign(score=scores.score + 200), chain.tmp / "bad_scores.parquet")
    with pytest.raises(DataValidationError, match="score"):
        bench.read_task_scores(chain.tmp / "bad_scores.parquet")


def test_report_step_writes_a_claim_the_ledger_accepts(chain):
    claim = ClaimRecord.model_validate(read_json(chain.report.claim))
    assert claim.paper == PAPER and claim.verdict in VERDICTS
    assert [c.name for c in claim.checks] == [c.name for c in config.load_verdict(chain.params).checks]
    text = chain.report.report.read_text()
    assert "## Corpus funnel" in text and "## Verdict" in text
    assert all(t.name in text for t in TASKS)  # the 18-task table
    assert {p.name for p in Path(chain.report.plots).glob("*.png")} == {
        "funnel.png", "scores_by_kind.png", "bench_stages.png", "lora_loss.png"}
    metrics = read_json(chain.report.metrics)
    assert set(metrics["per_seed"]) == {c.metric for c in config.load_verdict(chain.params).checks}
