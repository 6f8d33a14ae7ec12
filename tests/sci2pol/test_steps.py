"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

import itertools

import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, write_parquet
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.sci2pol.io import VARIANTS, read_answers, read_losses, read_pairs, read_runs, read_scores, read_task_scores
from stages.sci2pol.tasks import TASKS
from tests.smoke import report_outs

PAPER = "sci2pol"


def test_corpus_step_writes_pairs_and_a_monotone_funnel(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-corpus")
    df = read_pairs(paths.pairs)
    summary = read_json(paths.funnel)
    assert [r["step"] for r in summary["funnel"]] == ["citations", "link", "screen", "split", "filter", "polish"]
    counts = [r["count"] for r in summary["funnel"]]
    assert all(a >= b for a, b in itertools.pairwise(counts))
    assert (df.set == "curated").sum() == counts[-1] == (df.set == "unfiltered").sum()
    assert (df.set == "val").sum() == smoke_repo.config(f"{PAPER}-corpus").data.n_val_briefs
    assert not set(df[df.set == "val"].pid) & set(df[df.set != "val"].pid)
    assert summary["purity"]["curated"] >= summary["purity"]["unfiltered"]
    assert 0 < summary["link_precision"] <= 1


def test_corrupt_pairs_fail_validation_naming_the_column(smoke_repo, tmp_path):
    df = read_pairs(smoke_repo.paths(f"{PAPER}-corpus").pairs)
    write_parquet(df.assign(kind="nonsense"), tmp_path / "bad_pairs.parquet")
    outs = {"scores": tmp_path / "scores.parquet", "answers": tmp_path / "answers.parquet",
            "losses": tmp_path / "losses.parquet", "runs": tmp_path / "runs.parquet"}
    with pytest.raises(DataValidationError, match=r"sci2pol\.pairs.*column 'kind'"):
        smoke_repo.run(f"{PAPER}-bench", pairs=tmp_path / "bad_pairs.parquet", **outs)
    assert not any(p.exists() for p in outs.values())


def test_agree_step_scores_every_brief_with_every_scorer(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-agree")
    paths = smoke_repo.paths(f"{PAPER}-agree")
    df = read_scores(paths.scores)
    assert len(df) == cfg.n_seeds * cfg.n_papers * 6
    corr = read_json(paths.correlations)
    assert len(corr["per_seed"]) == cfg.n_seeds
    assert all(r["rubric"] > 0.5 for r in corr["per_seed"])
    assert corr["backend"] in cfg.backends and len(corr["validation"]) == len(cfg.backends)
    assert all(0 <= r["auc_lm"] <= 1 for r in corr["per_seed"])


def test_bench_step_scores_every_variant_task_and_item(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-bench")
    paths = smoke_repo.paths(f"{PAPER}-bench")
    scores, answers = read_task_scores(paths.scores), read_answers(paths.answers)
    losses, runs = read_losses(paths.losses), read_runs(paths.runs)
    n_seeds = cfg.finetune.n_seeds
    n_tasks = len(cfg.bench.task_specs())
    assert len(scores) == (1 + 2 * n_seeds) * n_tasks  # the base model once, two fine-tuned sets per seed
    assert set(scores.variant) == set(VARIANTS)
    assert len(answers) == len(scores) * cfg.bench.items_per_task
    assert runs.groupby(["variant", "seed"]).used.sum().eq(1).all()
    assert len(runs) == 2 * (len(cfg.finetune.lr_grid) + n_seeds - 1)
    assert (losses[losses.split == "val"].step == 0).sum() == len(runs)  # every run measured before training


def test_corrupt_task_scores_fail_validation_naming_the_column(smoke_repo, tmp_path):
    scores = read_task_scores(smoke_repo.paths(f"{PAPER}-bench").scores)
    write_parquet(scores.assign(score=scores.score + 200), tmp_path / "bad_scores.parquet")
    outs = report_outs(tmp_path)
    with pytest.raises(DataValidationError, match=r"sci2pol\.bench_scores.*column 'score'"):
        smoke_repo.run(f"{PAPER}-report", bench_scores=tmp_path / "bad_scores.parquet", **outs)
    assert not any(p.exists() for p in outs.values())


def test_report_step_writes_a_claim_the_ledger_accepts(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    cfg = smoke_repo.config(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.paper == PAPER and claim.verdict in VERDICTS
    assert [c.name for c in claim.checks] == [c.name for c in cfg.verdict.checks]
    text = paths.report.read_text()
    assert "## Corpus funnel" in text and "## Verdict" in text
    assert all(t.name in text for t in cfg.bench.task_specs())  # the task table
    assert all(t.name in text for t in TASKS)  # run, or named as not run at this profile
    assert {p.name for p in paths.plots.glob("*.png")} == {
        "funnel.png", "scores_by_kind.png", "bench_stages.png", "lora_loss.png"}
    metrics = read_json(paths.metrics)
    assert set(metrics["per_seed"]) == {c.metric for c in cfg.verdict.checks}
    # counts in the prose come from the run, not from the default profile
    d, b, f = cfg.data, cfg.bench, cfg.finetune
    assert f"Corpus: {d.n_corpus_papers} papers, {d.n_documents} documents" in text
    assert f"{b.items_per_task} items per task; each task draws its own papers over all {d.n_bench_papers}" in text
    assert f"or at {f.max_steps} steps" in text and "## Rule history" in text and "## Sizing history" in text
