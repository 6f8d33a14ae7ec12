"""Smoke runs of every real step on tiny assets (smoke profile), called as plain functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from stages.core.gx import DataValidationError
from stages.core.io import read_json, read_parquet
from stages.core.stage import run_stage
from stages.core.tokenizer import SmallTokenizer
from stages.core.verdict import VERDICTS, ClaimRecord
from stages.entropylong import config, construct, entropy, evaluate, report, retrieve, train, verify
from stages.entropylong.sequences import VARIANTS

PAPER = "entropylong"


def _paths(tmp: Path, assets: dict[str, Path]) -> dict[str, object]:
    d = tmp / "data"
    ep = entropy.Paths(wikipedia=assets["wikipedia"], enwiki=assets["enwiki"], entropy_model=assets["entropy_model"],
                       documents=d / "documents.parquet", token_entropy=d / "token_entropy.parquet",
                       positions=d / "positions.parquet")
    rp = retrieve.Paths(documents=ep.documents, positions=ep.positions, index=assets["index"],
                        encoder=assets["encoder"], candidates=d / "candidates.parquet")
    vp = verify.Paths(documents=ep.documents, positions=ep.positions, candidates=rp.candidates,
                      entropy_model=assets["entropy_model"], verification=d / "verification.parquet",
                      kept=d / "kept.parquet")
    cp = construct.Paths(documents=ep.documents, positions=ep.positions, candidates=rp.candidates, kept=vp.kept,
                         index=assets["index"], tokenizer=tmp / "models" / "tokenizer.json",
                         sequences=d / "sequences.parquet", heldout=d / "heldout.parquet")
    tp = train.Paths(tokenizer=cp.tokenizer, sequences=cp.sequences, models=tmp / "models" / "lm",
                     train_log=d / "train_log.parquet")
    evp = evaluate.Paths(documents=ep.documents, tokenizer=cp.tokenizer, heldout=cp.heldout, models=tp.models,
                         evaluation=d / "evaluation.json", ruler_items=d / "ruler_items.parquet")
    r = tmp / "reports"
    rep = report.Paths(documents=ep.documents, token_entropy=ep.token_entropy, positions=ep.positions,
                       candidates=rp.candidates, verification=vp.verification, sequences=cp.sequences,
                       evaluation=evp.evaluation, train_log=tp.train_log, timings=r / "timings",
                       report=r / "report.md", metrics=r / "metrics.json", claim=r / "claim.json", plots=r / "plots")
    return {"entropy": ep, "retrieve": rp, "verify": vp, "construct": cp, "train": tp, "evaluate": evp,
            "report": rep}


STEPS = {"entropy": (entropy, config.load_entropy), "retrieve": (retrieve, config.load_retrieve),
         "verify": (verify, config.load_verify), "construct": (construct, config.load_construct),
         "train": (train, config.load_train), "evaluate": (evaluate, config.load_evaluate),
         "report": (report, config.load_report)}


def run_step(name: str, paths: dict[str, object], params: Path, tmp: Path) -> dict:
    module, load = STEPS[name]
    return run_stage(PAPER, name, module.run, load(params), paths[name], params,
                     tmp / "reports" / "timings" / f"{name}.json")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, tiny_assets):
    from tests.conftest import write_params

    tmp = tmp_path_factory.mktemp("entropylong_smoke")
    params = write_params(tmp)
    paths = _paths(tmp, tiny_assets)
    results = {name: run_step(name, paths, params, tmp) for name in STEPS}
    return params, paths, results


def test_entropy_selects_positions_over_the_threshold(smoke_run):
    params, paths, _ = smoke_run
    cfg = config.load_entropy(params)
    docs = read_parquet(paths["entropy"].documents)
    pos = read_parquet(paths["entropy"].positions)
    tent = read_parquet(paths["entropy"].token_entropy)
    assert (docs.n_tokens <= cfg.doc_tokens).all() and set(docs.split) == {"train", "heldout"}
    assert (tent.entropy > 0).all() and len(tent) == int((docs.n_tokens - 1).sum())
    assert (pos.z > min(cfg.alphas)).all() and (pos.main == (pos.z > cfg.alpha)).all()
    assert pos.groupby("doc_id").size().max() <= cfg.max_positions


def test_retrieval_never_returns_the_documents_own_article(smoke_run):
    params, paths, _ = smoke_run
    docs = read_parquet(paths["entropy"].documents).set_index("doc_id")
    cands = read_parquet(paths["retrieve"].candidates)
    assert len(cands) > 0 and cands["rank"].max() < config.load_retrieve(params).top_k
    for row in cands.itertuples(index=False):
        assert row.article_id != docs.loc[row.doc_id, "article_id"]
        assert row.title.lower() != docs.loc[row.doc_id, "title"].lower()


def test_verification_rows_and_kept_rule(smoke_run):
    params, paths, _ = smoke_run
    eps = config.load_verify(params).epsilon
    ver = read_parquet(paths["verify"].verification)
    kept = read_parquet(paths["verify"].kept)
    assert (ver.h > 0).all() and np.isfinite(ver.delta_i).all() and (ver.delta_i <= 1).all()
    np.testing.assert_allclose(ver.delta_i, (ver.h - ver.h_ctx) / ver.h)
    assert (kept.delta_i > eps).all() and kept.retrieved_for.all()
    main = ver[ver.retrieved_for & ver.main]
    assert len(kept) == int((main.delta_i > eps).sum())


def test_construction_gives_equal_token_counts_and_document_last(smoke_run):
    params, paths, _ = smoke_run
    cfg = config.load_construct(params)
    seqs = read_parquet(paths["construct"].sequences)
    tok = SmallTokenizer.load(paths["construct"].tokenizer)
    assert set(seqs.variant) == set(VARIANTS)
    assert (seqs.n_tokens == cfg.target_len).all()
    assert seqs.groupby("variant").n_tokens.sum().nunique() == 1
    for row in seqs.itertuples(index=False):
        assert row.tokens[-1] == tok.eos_id and row.tokens[row.doc_start - 1] == tok.eos_id
    docs_by_variant = seqs.groupby("variant").doc_id.apply(lambda s: tuple(sorted(s)))
    assert docs_by_variant.nunique() == 1  # the same documents in every variant
    held = read_parquet(paths["construct"].heldout)
    assert set(held.condition) == {"with_context", "without_context", "random_context"}
    by = held.set_index(["doc_id", "condition"])
    for doc_id in held.doc_id.unique():
        w, r = by.loc[(doc_id, "with_context")], by.loc[(doc_id, "random_context")]
        assert w.n_tokens == r.n_tokens and w.doc_start == r.doc_start
        assert list(w.tokens[w.doc_start:]) == list(r.tokens[r.doc_start:])  # the same document, same place


def test_train_and_evaluate_cover_every_variant_and_seed(smoke_run):
    params, paths, _ = smoke_run
    cfg = config.load_train(params)
    names = {p.name for p in paths["train"].models.iterdir()}
    assert names == {"manifest.json"} | {f"{v}_s{s}.safetensors" for v in cfg.variants for s in range(cfg.n_seeds)}
    ev = read_json(paths["evaluate"].evaluation)
    assert set(ev["per_seed"]) == {"gain_entropylong_minus_no_verification",
                                   "gain_no_verification_minus_concatenation", "gain_entropylong_minus_concatenation"}
    assert all(len(v) == cfg.n_seeds for v in ev["per_seed"].values())
    items = read_parquet(paths["evaluate"].ruler_items)
    score_cols = [c for c in items.columns if c.endswith(tuple(f"_s{s}" for s in range(cfg.n_seeds)))]
    assert len(score_cols) == len(cfg.variants) * cfg.n_seeds
    assert items[score_cols].isin([0.0, 0.5, 1.0]).all().all()


def test_report_writes_claim_and_plots(smoke_run):
    _, paths, results = smoke_run
    rp = paths["report"]
    claim = ClaimRecord.model_validate(read_json(rp.claim))
    assert claim.verdict in VERDICTS and claim.profile == "smoke" and claim.verdict == results["report"]["verdict"]
    assert {p.name for p in rp.plots.iterdir()} == {"loss_gain.png", "training_loss.png", "delta_i.png",
                                                    "mini_ruler.png"}
    text = rp.report.read_text()
    assert f"**Verdict: {claim.verdict}**" in text and "Power gate" in text


def test_steps_are_deterministic(smoke_run, tmp_path, tiny_assets):
    params, paths, _ = smoke_run
    again = _paths(tmp_path, tiny_assets)
    for name in ("entropy", "retrieve", "verify"):
        run_step(name, again, params, tmp_path)
    for table in ("documents", "positions"):
        a = read_parquet(getattr(paths["entropy"], table))
        b = read_parquet(getattr(again["entropy"], table))
        assert a.equals(b)
    assert read_parquet(paths["verify"].verification).equals(read_parquet(again["verify"].verification))


def test_expectation_suites_can_fail(smoke_run):
    from stages.core.gx import validate_table
    from stages.entropylong.expectations import kept_suite, sequences_suite, verification_suite

    params, paths, _ = smoke_run
    ver = read_parquet(paths["verify"].verification)
    broken = ver.copy()
    broken.loc[broken.index[0], "h"] = 0.0
    with pytest.raises(DataValidationError, match=r"column 'h'"):
        validate_table(broken, "verification", verification_suite())
    kept = ver[ver.retrieved_for].head(1).copy()
    kept["delta_i"] = 0.1
    with pytest.raises(DataValidationError, match=r"column 'delta_i'"):
        validate_table(kept, "kept", kept_suite(0.4))
    seqs = read_parquet(paths["construct"].sequences).head(3).copy()
    seqs.loc[seqs.index[0], "n_tokens"] = 5
    with pytest.raises(DataValidationError, match=r"column 'n_tokens'"):
        validate_table(seqs, "sequences", sequences_suite(config.load_construct(params).target_len, 10**6))


def test_bad_params_are_refused_with_the_dotted_key(tmp_path):
    from stages.core.config import ConfigError
    from tests.conftest import write_params

    params = write_params(tmp_path, **{"entropylong.verify.epsilon": 1.5})
    with pytest.raises(ConfigError, match=r"entropylong\.verify\.epsilon"):
        config.load_verify(params)
    params = write_params(tmp_path, **{"entropylong.entropy.typo_key": 1})
    with pytest.raises(ConfigError, match=r"entropylong\.entropy\.typo_key: unknown key"):
        config.load_entropy(params)
