"""The real steps at the smoke profile, on the session's shared smoke DAG run (tests/smoke.py)."""

from __future__ import annotations

import numpy as np
import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet, write_json
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.entropylong import config
from stages.entropylong.sequences import VARIANTS
from tests.smoke import report_outs

PAPER = "entropylong"


def test_entropy_selects_positions_over_the_threshold(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-entropy")
    cfg = smoke_repo.config(f"{PAPER}-entropy")
    docs = read_parquet(paths.documents)
    pos = read_parquet(paths.positions)
    tent = read_parquet(paths.token_entropy)
    assert (docs.n_tokens <= cfg.doc_tokens).all() and set(docs.split) == {"train", "heldout"}
    assert (tent.entropy > 0).all() and len(tent) == int((docs.n_tokens - 1).sum())
    assert (pos.z > min(cfg.alphas)).all() and (pos.early == (pos.pos < cfg.exclude_first)).all()
    assert (pos.main == ((pos.z > cfg.alpha) & ~pos.early)).all()  # the start band is never a main position
    assert pos.groupby("doc_id").size().max() <= cfg.max_positions
    assert (docs.split == "heldout").sum() == cfg.heldout_docs


def test_retrieval_never_returns_the_documents_own_article(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-retrieve")
    docs = read_parquet(paths.documents).set_index("doc_id")
    cands = read_parquet(paths.candidates)
    assert len(cands) > 0 and cands["rank"].max() < smoke_repo.config(f"{PAPER}-retrieve").top_k
    for row in cands.itertuples(index=False):
        assert row.article_id != docs.loc[row.doc_id, "article_id"]
        assert row.title.lower() != docs.loc[row.doc_id, "title"].lower()


def test_verification_rows_null_and_kept_rule(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-verify")
    cfg = smoke_repo.config(f"{PAPER}-verify")
    eps = cfg.epsilon
    ver = read_parquet(paths.verification)
    kept = read_parquet(paths.kept)
    docs = read_parquet(paths.documents).set_index("doc_id")
    assert (docs.split.loc[ver.doc_id.unique()] == "train").all()  # held-out documents are not verified
    assert (ver.h > 0).all() and np.isfinite(ver.delta_i).all() and (ver.delta_i <= 1).all()
    np.testing.assert_allclose(ver.delta_i, (ver.h - ver.h_ctx) / ver.h)
    null = ver[ver.null]
    assert not null.retrieved_for.any()
    assert (null.groupby("doc_id").chunk_id.nunique() == cfg.null_chunks).all()
    # the null level of a position is the configured quantile of its null chunks' ΔI
    for (doc_id, pos), g in null.groupby(["doc_id", "pos"]):
        level = ver[(ver.doc_id == doc_id) & (ver.pos == pos)].null_level.unique()
        assert len(level) == 1 and level[0] == pytest.approx(np.quantile(g.delta_i, cfg.null_quantile))
    assert (kept.delta_i > eps).all() and (kept.delta_i > kept.null_level).all() and kept.retrieved_for.all()
    assert kept.main.all() and not kept.null.any()
    main = ver[ver.retrieved_for & ver.main]
    assert len(kept) == int(((main.delta_i > eps) & (main.delta_i > main.null_level)).sum())


def test_construction_gives_equal_token_counts_and_document_last(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-construct")
    cfg = smoke_repo.config(f"{PAPER}-construct")
    seqs = read_parquet(paths.sequences)
    kept = read_parquet(smoke_repo.paths(f"{PAPER}-verify").kept)
    assert set(seqs.variant) == set(VARIANTS)
    assert (seqs.n_tokens == cfg.target_len).all()
    assert seqs.groupby("variant").n_tokens.sum().nunique() == 1
    sep = seqs.tokens.iloc[0][-1]
    for row in seqs.itertuples(index=False):
        assert row.tokens[-1] == sep and row.tokens[row.doc_start - 1] == sep
    docs_by_variant = seqs.groupby("variant").doc_id.apply(lambda s: tuple(sorted(s)))
    assert docs_by_variant.nunique() == 1  # the same documents in every variant
    assert set(seqs.doc_id) <= set(kept.doc_id)  # only documents with a verified context
    assert (seqs[seqs.variant == "entropylong"].n_contexts >= 1).all()
    assert (seqs[seqs.variant == "concatenation"].n_contexts == 0).all()
    held = read_parquet(paths.heldout)
    assert set(held.condition) == {"with_context", "without_context", "random_context"}
    by = held.set_index(["doc_id", "condition"])
    for doc_id in held.doc_id.unique():
        w, r = by.loc[(doc_id, "with_context")], by.loc[(doc_id, "random_context")]
        assert w.n_tokens == r.n_tokens and w.doc_start == r.doc_start
        assert list(w.tokens[w.doc_start:]) == list(r.tokens[r.doc_start:])  # the same document, same place


def test_train_and_evaluate_cover_every_variant_and_seed(smoke_repo):
    cfg = smoke_repo.config(f"{PAPER}-train")
    names = {p.name for p in smoke_repo.paths(f"{PAPER}-train").models.iterdir()}
    assert names == {"manifest.json"} | {f"{v}_s{s}_lr{i}.safetensors" for v in cfg.variants
                                         for s in range(cfg.n_seeds) for i in range(len(cfg.lrs))}
    paths = smoke_repo.paths(f"{PAPER}-evaluate")
    ev = read_json(paths.evaluation)
    assert set(ev["per_seed"]) == set(config.METRICS)
    assert all(len(v) == cfg.n_seeds for v in ev["per_seed"].values())
    g = {v: [r["content_gain"] for r in rows] for v, rows in ev["gains"].items()}
    np.testing.assert_allclose(ev["per_seed"]["content_gain_min"], np.min([g[v] for v in cfg.variants], axis=0))
    np.testing.assert_allclose(ev["per_seed"]["gain_entropylong_minus_base"],
                               np.array(g["entropylong"]) - ev["base"]["content_gain"])
    np.testing.assert_allclose(ev["per_seed"]["base_content_gain"], [ev["base"]["content_gain"]] * cfg.n_seeds)
    assert ev["lr"] in cfg.lrs and sum(r["chosen"] for r in ev["lr_selection"]) == 1
    assert min(r["mean_validation_loss"] for r in ev["lr_selection"]) == next(
        r["mean_validation_loss"] for r in ev["lr_selection"] if r["chosen"])
    losses = read_parquet(paths.doc_losses)
    assert set(losses.model) == {"base", *cfg.variants} and (losses["all"] > 0).all()
    # validation documents are training-split documents that no training sequence uses
    val = read_parquet(smoke_repo.paths(f"{PAPER}-construct").validation)
    seqs = read_parquet(smoke_repo.paths(f"{PAPER}-construct").sequences)
    docs = read_parquet(smoke_repo.paths(f"{PAPER}-entropy").documents).set_index("doc_id")
    assert len(val) > 0 and not set(val.doc_id) & set(seqs.doc_id)
    assert (docs.split.loc[val.doc_id.unique()] == "train").all()


def test_report_writes_claim_and_plots(smoke_repo):
    paths = smoke_repo.paths(f"{PAPER}-report")
    claim = ClaimRecord.model_validate(read_json(paths.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.wall_time_s > 0
    assert claim.verdict == read_json(paths.metrics)["verdict"]
    assert {p.name for p in paths.plots.iterdir()} == {"loss_gain.png", "training_loss.png", "delta_i.png"}
    text = paths.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "Power gate" in text
    # counts in the prose come from the run (params, the index asset), not from the default profile
    ent, train = smoke_repo.config(f"{PAPER}-entropy"), smoke_repo.config(f"{PAPER}-train")
    pool = read_json(paths.index / "manifest.json")["details"]
    assert f"each cut to {ent.doc_tokens} SmolLM2 tokens" in text and f"up to {ent.max_positions} per document" in text
    assert f"LoRA adapters (rank {train.lora.rank}," in text and "Rule history" in text
    assert f"once per variant and seed, {train.n_seeds} seeds, " in text
    assert f"({pool['articles']:,} articles, {pool['chunks']:,} chunks)" in text
    assert "| CPU / threads (s) |" in text  # every smoke timing records CPU seconds, so the table is there


def test_missing_metric_in_evaluation_is_an_error_not_a_pass(smoke_repo, tmp_path):
    ev = read_json(smoke_repo.paths(f"{PAPER}-evaluate").evaluation)
    del ev["per_seed"]["gain_entropylong_minus_no_verification"]
    write_json(ev, tmp_path / "ev.json")
    outs = report_outs(tmp_path)
    with pytest.raises(KeyError, match="gain_entropylong_minus_no_verification"):
        smoke_repo.run(f"{PAPER}-report", evaluation=tmp_path / "ev.json", **outs)
    assert not any(p.exists() for p in outs.values())


def test_expectation_suites_can_fail(smoke_repo):
    from stages.core.gx import validate_table
    from stages.entropylong.expectations import kept_suite, sequences_suite, verification_suite

    ver = read_parquet(smoke_repo.paths(f"{PAPER}-verify").verification)
    broken = ver.copy()
    broken.loc[broken.index[0], "h"] = 0.0
    with pytest.raises(DataValidationError, match=r"column 'h'"):
        validate_table(broken, "verification", verification_suite())
    kept = ver[ver.retrieved_for].head(1).copy()
    kept["delta_i"] = 0.1
    with pytest.raises(DataValidationError, match=r"column 'delta_i'"):
        validate_table(kept, "kept", kept_suite(0.4))
    seqs = read_parquet(smoke_repo.paths(f"{PAPER}-construct").sequences).head(3).copy()
    seqs.loc[seqs.index[0], "n_tokens"] = 5
    with pytest.raises(DataValidationError, match=r"column 'n_tokens'"):
        validate_table(seqs, "sequences", sequences_suite(smoke_repo.config(f"{PAPER}-construct").target_len, 10**6))


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from stages.core.config import ConfigError
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"entropylong.verify.epsilon": 1.5})
    with pytest.raises(ConfigError, match=r"entropylong\.verify\.epsilon"):
        config.load_verify(params)
    params = write_params(tmp_path, **{"entropylong.entropy.typo_key": 1})
    with pytest.raises(ConfigError, match=r"entropylong\.entropy\.typo_key: unknown key"):
        config.load_entropy(params)


def test_time_alone_rows_divide_cpu_by_threads_and_refuse_partial_records(tmp_path):
    from stages.entropylong.report import time_alone_rows

    write_json({"wall_time_s": 100.0, "cpu_time_s": 150.0, "threads": 2, "load_average_1min": 3.5},
               tmp_path / "a.json")
    write_json({"wall_time_s": 10.0, "cpu_time_s": 9.0, "threads": 1, "load_average_1min": 1.0}, tmp_path / "b.json")
    rows = time_alone_rows(tmp_path, ("a", "b"))
    assert [r["CPU / threads (s)"] for r in rows] == [75.0, 9.0]
    assert [r["wall (s)"] for r in rows] == [100.0, 10.0]
    assert rows[0]["load (1 min)"] == 3.5
    write_json({"wall_time_s": 5.0}, tmp_path / "c.json")  # a timing written before CPU accounting
    assert time_alone_rows(tmp_path, ("a", "c")) == []
