"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.core.verdict import CheckOutcome, ClaimRecord, VerdictRule
from stages.entropylong.config import PAPER, ReportInputs, load_report
from stages.entropylong.uncertainty import keep_context, keep_verified

TIMED_STEPS = ("entropy", "retrieve", "verify", "construct", "train", "evaluate")
REJECTED_EXAMPLES = 2  # the best-scored rejected candidates shown after the kept ones
VARIANT_LABELS = {"base": "base SmolLM2 (no training)", "entropylong": "EntropyLong (verified)",
                  "no_verification": "retrieval, no verification", "concatenation": "random concatenation"}
CARD = PaperCard(
    paper=PAPER,
    title=("EntropyLong: Effective Long-Context Training via Predictive Uncertainty (ICLR 2026; "
           "arXiv 2510.02330)"),
    claim=("Long-context training sequences built from contexts that are retrieved for a document's high-entropy "
           "positions AND verified to reduce the model's predictive entropy there (ΔI > ε) teach a model to use "
           "long-range context better than generic concatenation or retrieval without verification."),
    paper_result=("Llama-3-8B trained on 128K-token EntropyLong data: RULER average 87.37 vs 85.22 for NExtLong "
                  "(retrieval-based, unverified construction) and 85.82 for EntropyLong without verification; "
                  "mean ΔI of kept contexts 0.68 (α = 2.0, ε = 0.4, 16-token query windows); better LongBench-v2 "
                  "after SFT."),
)
POWER_GATE = ("Power gate: a check whose every seed misses the threshold counts as failed only when the 95% "
              "t-interval of its per-seed values lies entirely on the wrong side of the threshold; otherwise "
              "it is unclear (too little power)")


@dataclass(frozen=True)
class Paths(ReportPaths):
    documents: Path = inp("documents")
    token_entropy: Path = inp("per-token entropies")
    positions: Path = inp("selected positions")
    candidates: Path = inp("retrieved candidates")
    verification: Path = inp("ΔI table")
    sequences: Path = inp("training sequences")
    kept: Path = inp("verified contexts")
    evaluation: Path = inp("metrics from evaluate")
    train_log: Path = inp("training losses")
    index: Path = inp("Wikipedia retrieval index asset (its manifest gives the pool's size)")


def time_alone_rows(folder: Path, steps: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per step: wall time, CPU seconds, CPU seconds over the step's threads and the machine's load.

    On a shared machine the wall time overstates a step's time alone; CPU / threads is what it would take if both
    threads were busy throughout. Empty when a step's timing predates CPU accounting."""
    rows = []
    for step in steps:
        t = read_json(Path(folder) / f"{step}.json")
        if "cpu_time_s" not in t:
            return []
        rows.append({"step": step, "wall (s)": round(float(t["wall_time_s"]), 1),
                     "CPU (s)": round(float(t["cpu_time_s"]), 1), "threads": int(t["threads"]),
                     "CPU / threads (s)": round(float(t["cpu_time_s"]) / int(t["threads"]), 1),
                     "load (1 min)": round(float(t["load_average_1min"]), 2)})
    return rows


def power_gated(rule: VerdictRule, outcomes: list[CheckOutcome]) -> tuple[str, list[CheckOutcome]]:
    """Turn a 'fails' whose 95% t-interval still reaches the threshold into 'unclear'; recompute the verdict."""
    from scipy import stats

    gated = []
    for check, o in zip(rule.checks, outcomes, strict=True):
        vals = np.array([v for v in o.values if v is not None], dtype=float)
        status = o.status
        if status == "fails" and len(vals) >= 2:
            half = stats.t.ppf(0.975, len(vals) - 1) * vals.std(ddof=1) / math.sqrt(len(vals))
            reaches = vals.mean() + half >= check.threshold if check.op == ">=" else \
                vals.mean() - half <= check.threshold
            status = "unclear" if reaches else "fails"
        gated.append(o.model_copy(update={"status": status}))
    statuses = {o.status for o in gated}
    if statuses == {"holds"}:
        return "reproduced", gated
    if statuses == {"fails"}:
        return "not_reproduced", gated
    return ("partly" if "holds" in statuses else "inconclusive"), gated


def gated_claim(rule: VerdictRule, gates: list[str], power_gate: bool, per_seed: dict[str, list[float]],
                **record: Any) -> ClaimRecord:
    """The verdict: each check per seed, the power gate on failures, then the positive-control gates."""
    claim = decide_claim(CARD, rule, per_seed, **record)
    if power_gate:
        _, outcomes = power_gated(rule, claim.checks)
        claim = claim.model_copy(update={"checks": outcomes, "verdict_rule": f"{claim.verdict_rule}. {POWER_GATE}"})
    return gated_verdict(claim, gates)


def ablation_table(token_entropy: pd.DataFrame, verification: pd.DataFrame, alphas: list[float],
                   epsilons: list[float], min_position: int) -> pd.DataFrame:
    """Data statistics for every (α, ε) at body positions: positions over τ, candidates, acceptance with ε alone and
    with ε and the null, mean ΔI of kept contexts (ε and the null)."""
    cand = verification[verification.retrieved_for & ~verification.early]
    rows = []
    n_docs = token_entropy.doc_id.nunique()
    for a in alphas:
        over = token_entropy[(token_entropy.z > a) & (token_entropy.pos >= min_position)]
        sel = cand[cand.z > a]
        for e in epsilons:
            eps_only = keep_context(sel.delta_i.to_numpy(), e)
            both = keep_verified(sel.delta_i.to_numpy(), e, sel.null_level.to_numpy())
            kept = sel[both]
            rows.append({"alpha": a, "epsilon": e, "positions over τ per doc": len(over) / n_docs,
                         "verified positions": int(sel.groupby(["doc_id", "pos"]).ngroups),
                         "candidates": len(sel),
                         "acceptance (ε only)": float(eps_only.mean()) if len(sel) else float("nan"),
                         "acceptance (ε and null)": float(both.mean()) if len(sel) else float("nan"),
                         "mean ΔI kept": float(kept.delta_i.mean()) if len(kept) else float("nan"),
                         "docs with ≥1 kept": int(kept.doc_id.nunique())})
    return pd.DataFrame(rows)


def band_table(verification: pd.DataFrame, alpha: float, epsilon: float, exclude_first: int) -> pd.DataFrame:
    """The start-band confound and the ΔI null: per band (first ``exclude_first`` tokens, later, all), positions over
    the main α, candidate and null ΔI, the null level, and acceptance with ε alone and with ε and the null."""
    over = verification[verification.z > alpha]
    rows = []
    for name, part in ((f"start (positions < {exclude_first})", over[over.early]),
                       (f"body (positions ≥ {exclude_first}; main)", over[~over.early]), ("all positions", over)):
        cand, null = part[part.retrieved_for], part[part.null]
        eps_only = keep_context(cand.delta_i.to_numpy(), epsilon)
        both = keep_verified(cand.delta_i.to_numpy(), epsilon, cand.null_level.to_numpy())
        nan = float("nan")
        rows.append({"band": name, "positions": int(part.groupby(["doc_id", "pos"]).ngroups),
                     "candidates": len(cand), "mean ΔI candidates": float(cand.delta_i.mean()) if len(cand) else nan,
                     "mean ΔI null": float(null.delta_i.mean()) if len(null) else nan,
                     "null ΔI > ε": float((null.delta_i > epsilon).mean()) if len(null) else nan,
                     "mean null level": float(cand.null_level.mean()) if len(cand) else nan,
                     "acceptance (ε only)": float(eps_only.mean()) if len(cand) else nan,
                     "acceptance (ε and null)": float(both.mean()) if len(cand) else nan,
                     "mean ΔI kept": float(cand.delta_i[both].mean()) if both.any() else nan})
    return pd.DataFrame(rows)


def kept_rows(table: pd.DataFrame, epsilon: float) -> np.ndarray:
    """The verification rule of the main construction on a ΔI table: ΔI > ε and above the position's null level."""
    return keep_verified(table.delta_i.to_numpy(), epsilon, table.null_level.to_numpy())


def quality_rows(main: pd.DataFrame, epsilon: float) -> list[dict[str, Any]]:
    """Kept vs rejected vs all unverified top-K: title/entity sharing and copy dependencies."""
    kept_mask = kept_rows(main, epsilon)
    rows = []
    for name, part in (("kept (verified)", main[kept_mask]), ("rejected", main[~kept_mask]),
                       ("all top-K (no verification)", main)):
        rows.append({"contexts": name, "n": len(part),
                     "title occurs in document": float(part.title_in_doc.mean()) if len(part) else float("nan"),
                     "shares ≥1 entity": float((part.shared_entities > 0).mean()) if len(part) else float("nan"),
                     "mean shared entities": float(part.shared_entities.mean()) if len(part) else float("nan"),
                     "target token in context": float(part.target_in_context.mean()) if len(part) else float("nan"),
                     "mean retrieval cosine": float(part.score.mean()) if len(part) else float("nan"),
                     "mean ΔI": float(part.delta_i.mean()) if len(part) else float("nan")})
    return rows


def by_position(main: pd.DataFrame, positions: pd.DataFrame, epsilon: float, bins: int = 4) -> pd.DataFrame:
    """Selected positions, acceptance and ΔI by relative position in the document (quarters)."""
    edges = np.linspace(0, 1, bins + 1)
    label = [f"{edges[i]:.2f}-{edges[i + 1]:.2f}" for i in range(bins)]
    rows = []
    for i in range(bins):
        lo, hi = edges[i], edges[i + 1] + (1e-9 if i == bins - 1 else 0)
        sel = positions[positions.main & (positions.rel_pos >= lo) & (positions.rel_pos < hi)]
        part = main[(main.rel_pos >= lo) & (main.rel_pos < hi)]
        kept = part[kept_rows(part, epsilon)]
        rows.append({"relative position": label[i], "selected positions": len(sel), "candidates": len(part),
                     "kept": len(kept), "acceptance": len(kept) / len(part) if len(part) else float("nan"),
                     "mean ΔI (all)": float(part.delta_i.mean()) if len(part) else float("nan")})
    return pd.DataFrame(rows)


def examples(main: pd.DataFrame, positions: pd.DataFrame, candidates: pd.DataFrame, docs: pd.DataFrame,
             epsilon: float, n: int) -> list[dict[str, Any]]:
    """The n kept contexts with the largest ΔI, and the best-scored rejected ones, as rows the template shows."""
    kept = main[kept_rows(main, epsilon)].sort_values("delta_i", ascending=False)
    pos = positions.set_index(["doc_id", "pos"])
    text = candidates.drop_duplicates(["doc_id", "chunk_id"]).set_index(["doc_id", "chunk_id"]).text
    titles = docs.set_index("doc_id").title
    out = []
    picks = [("kept", r) for r in kept.head(n).itertuples(index=False)]
    rejected = main[~kept_rows(main, epsilon)].sort_values("score", ascending=False)
    picks += [("rejected", r) for r in rejected.head(REJECTED_EXAMPLES).itertuples(index=False)]
    for kind, r in picks:
        p = pos.loc[(r.doc_id, r.pos)]
        out.append({"kind": kind, "document": titles[r.doc_id], "pos": int(r.pos),
                    "target": p.target.strip() or repr(p.target), "h": float(r.h), "h_ctx": float(r.h_ctx),
                    "delta_i": float(r.delta_i), "source": r.title, "copies_target": bool(r.target_in_context),
                    "shared_entities": int(r.shared_entities), "query": " ".join(str(p.query).split()),
                    "context": " ".join(str(text.loc[(r.doc_id, r.chunk_id)]).split())})
    return out


def plot_gains(ev: dict[str, Any], path: Path) -> None:
    """Content gain per model on the held-out body tokens: seeds as points, mean as a bar, the base model dashed."""
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        for i, v in enumerate(ev["variants"]):
            vals = [g["content_gain"] for g in ev["gains"][v]]
            ax.bar(i, np.mean(vals), color=f"C{i}", alpha=0.5)
            ax.scatter(np.full(len(vals), i), vals, color=f"C{i}", zorder=3)
        ax.axhline(ev["base"]["content_gain"], color="k", ls="--", lw=0.8, label=VARIANT_LABELS["base"])
        ax.set_xticks(range(len(ev["variants"])), [VARIANT_LABELS[v] for v in ev["variants"]], fontsize=8)
        ax.set_ylabel("loss after random text − after retrieved contexts")
        ax.set_title("primary metric: content gain on held-out body tokens (nats/token)", fontsize=9)
        ax.legend(fontsize=8)


def plot_training(log: pd.DataFrame, path: Path, window: int = 5) -> None:
    """Training loss per step (moving average), seeds as bands."""
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        for name, g in log.groupby("variant", sort=False):
            runs = np.stack([r.sort_values("step").loss.to_numpy() for _, r in g.groupby("seed_index")])
            w = min(window, runs.shape[1])
            smooth = np.stack([np.convolve(r, np.ones(w) / w, mode="valid") for r in runs])
            band(ax, np.arange(w, runs.shape[1] + 1), smooth, VARIANT_LABELS[str(name)])
        ax.set_xlabel("step")
        ax.set_ylabel(f"training cross-entropy (nats, {window}-step mean)")
        ax.legend(fontsize=8)


def plot_delta_i(ver: pd.DataFrame, alpha: float, epsilon: float, path: Path) -> None:
    """ΔI of retrieved candidates vs random null chunks at the same positions (z > α), by band."""
    over = ver[ver.z > alpha]
    with figure(path, 1, 2, figsize=(11, 4)) as (_, axes):
        bins = np.linspace(-0.5, 1, 31)
        for ax, (name, part) in zip(axes, (("start band", over[over.early]), ("body (main)", over[~over.early])),
                                    strict=True):
            ax.hist(part[part.retrieved_for].delta_i.clip(-0.5, 1), bins=bins, alpha=0.6, density=True,
                    label="retrieved candidates", color="C0")
            ax.hist(part[part.null].delta_i.clip(-0.5, 1), bins=bins, alpha=0.6, density=True,
                    label="random pool chunks (null)", color="C1")
            ax.axvline(epsilon, color="C3", ls="--", label=f"ε = {epsilon:g}")
            ax.set_title(name)
            ax.set_xlabel("ΔI = (H − H′)/H (clipped to [−0.5, 1])")
            ax.legend(fontsize=8)
        axes[0].set_ylabel("density")


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict (power gate, then the positive-control gate) and write the report."""
    ev = read_json(paths.evaluation)
    docs = read_parquet(paths.documents, columns=["doc_id", "source", "title", "split", "n_tokens"])
    tent = read_parquet(paths.token_entropy, columns=["doc_id", "pos", "z"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "early", "main", "rel_pos", "target",
                                                       "query"])
    cands = read_parquet(paths.candidates, columns=["doc_id", "pos", "rank", "chunk_id", "text", "n_excluded"])
    ver = read_parquet(paths.verification, columns=["doc_id", "chunk_id", "pos", "null", "retrieved_for", "score",
                                                    "z", "early", "main", "rel_pos", "h", "h_ctx", "delta_i",
                                                    "null_level", "title", "title_in_doc", "shared_entities",
                                                    "target_in_context"])
    kept_table = read_parquet(paths.kept, columns=["doc_id", "pos", "chunk_id", "delta_i"])
    seq_columns = ["variant", "doc_id", "n_tokens", "n_contexts", "doc_start"]
    seqs = read_parquet(paths.sequences, columns=seq_columns)[seq_columns]
    log = read_parquet(paths.train_log, columns=["variant", "seed_index", "lr", "step", "loss"])
    log = log[log.lr == ev["lr"]]  # the chosen learning rate's runs (the others are in the lr table)
    pool = read_json(Path(paths.index) / "manifest.json")["details"]
    timings = read_timings(paths.timings, TIMED_STEPS)
    cpu_rows = time_alone_rows(paths.timings, TIMED_STEPS)
    ent_cfg, ver_cfg = cfg.entropy, cfg.verify
    eps = ver_cfg.epsilon

    main = ver[ver.retrieved_for & ver.main]
    kept = main[kept_rows(main, eps)]
    if len(kept) != len(kept_table):
        raise ValueError(f"the kept table has {len(kept_table)} rows but the verification rule keeps {len(kept)}")
    models = ["base", *ev["variants"]]
    results = {"base": [ev["base"]], **ev["gains"]}
    headline = {f"content_gain_{v}": mean_std([g["content_gain"] for g in results[v]], 4) for v in models}
    headline |= {k: mean_std(v, 4) for k, v in ev["per_seed"].items()}
    headline |= {"acceptance": f"{len(kept) / max(len(main), 1):.3f}",
                 "mean_delta_i_kept": f"{kept.delta_i.mean():.3f}" if len(kept) else "n/a"}
    claim = gated_claim(cfg.verdict, cfg.report.gates, cfg.report.power_gate, ev["per_seed"], seeds=ev["seeds"],
                        profile=ctx.profile, timings=timings, measured=headline)
    gate_open = all(o.status == "holds" for o in claim.checks if o.name in cfg.report.gates)

    ablation = ablation_table(tent, ver, ent_cfg.alphas, ver_cfg.epsilons, ent_cfg.exclude_first)
    bands = band_table(ver, ent_cfg.alpha, eps, ent_cfg.exclude_first)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_gains(ev, paths.plots / "loss_gain.png")
    plot_training(log, paths.plots / "training_loss.png")
    plot_delta_i(ver, ent_cfg.alpha, eps, paths.plots / "delta_i.png")

    per_model = [{"model": VARIANT_LABELS[v],
                  "validation loss alone": mean_std([g["validation_loss"] for g in results[v]], 4),
                  "loss alone": mean_std([g["nll_without"] for g in results[v]], 4),
                  "loss after retrieved contexts": mean_std([g["nll_with"] for g in results[v]], 4),
                  "loss after random text": mean_std([g["nll_random"] for g in results[v]], 4),
                  "gain (alone − contexts)": mean_std([g["gain"] for g in results[v]], 4),
                  "content gain (body, primary)": mean_std([g["content_gain"] for g in results[v]], 4),
                  "content gain (all tokens)": mean_std([g["content_gain_all"] for g in results[v]], 4)}
                 for v in models]
    seq_rows = [{"variant": VARIANT_LABELS[str(v)], "sequences": len(g), "documents": g.doc_id.nunique(),
                 "tokens": int(g.n_tokens.sum()), "mean retrieved contexts": float(g.n_contexts.mean()),
                 "sequences with ≥1 context": float((g.n_contexts > 0).mean()),
                 "mean document start": float(g.doc_start.mean())}
                for v, g in seqs.groupby("variant", sort=False)]
    thresholds = {c.name: c.threshold for c in cfg.verdict.checks}
    scored_tokens = int(docs.n_tokens.sum())
    train_docs = docs[docs.split == "train"]
    metrics = {"per_seed": ev["per_seed"], "content_gains": {v: [g["content_gain"] for g in results[v]]
                                                             for v in models},
               "positive_control_passed": gate_open, "lr": ev["lr"], "lr_selection": ev["lr_selection"],
               "base_validation_loss": ev["base_validation_loss"], "acceptance": len(kept) / max(len(main), 1),
               "mean_delta_i_kept": float(kept.delta_i.mean()) if len(kept) else None,
               "bands": bands.to_dict("records"), "ablation": ablation.to_dict("records"), "verdict": claim.verdict}
    write_report(
        paths, claim, metrics, timings, ev=ev, entropy=ent_cfg, verify=ver_cfg, report_cfg=cfg.report,
        n_docs=len(docs), n_heldout=int((docs.split == "heldout").sum()), n_train=len(train_docs),
        n_wikipedia=int((docs.source == "wikipedia").sum()), n_enwiki=int((docs.source == "enwiki").sum()),
        scored_tokens=scored_tokens, entropy_tokens_per_s=scored_tokens / max(timings["entropy"], 1e-9),
        n_positions=len(positions), n_main_positions=int(positions.main.sum()),
        n_early_positions=int(positions.early.sum()),
        pool_articles=int(pool["articles"]), pool_chunks=int(pool["chunks"]),
        n_excluded=int(cands.groupby(["doc_id", "pos"]).n_excluded.first().sum()),
        top_k=int(cands["rank"].max()) + 1, n_candidates=len(cands),
        n_forward_passes=int(ver.groupby(["doc_id", "chunk_id"]).ngroups),
        n_null_passes=int(ver[ver.null].groupby(["doc_id", "chunk_id"]).ngroups),
        n_main=len(main), n_kept=len(kept), acceptance=len(kept) / max(len(main), 1),
        acceptance_eps_only=float(keep_context(main.delta_i.to_numpy(), eps).mean()) if len(main) else float("nan"),
        mean_delta_i_kept=float(kept.delta_i.mean()) if len(kept) else float("nan"),
        n_docs_with_kept=int(kept.doc_id.nunique()),
        copy_share=float(kept.target_in_context.mean()) if len(kept) else float("nan"),
        seq_rows=seq_rows, per_model=per_model, gate_open=gate_open,
        lr_rows=[{"lr": f"{r['lr']:g}", "chosen": "yes" if r["chosen"] else "",
                  "mean validation loss": f"{r['mean_validation_loss']:.4f}",
                  **{VARIANT_LABELS[v]: f"{r[v]:.4f}" for v in ev["variants"]}} for r in ev["lr_selection"]],
        per_seed_rows=[{"metric": k, "value": mean_std(v, 4)} for k, v in ev["per_seed"].items()],
        quality_rows=quality_rows(main, eps), band_rows=bands.to_dict("records"),
        position_rows=by_position(main, positions, eps).to_dict("records"),
        ablation_rows=ablation.to_dict("records"),
        examples=examples(main, positions, cands, docs, eps, cfg.report.n_examples),
        power_rows=seeds_to_decide(claim, thresholds), cpu_rows=cpu_rows,
        cpu_per_thread_s=sum(r["CPU / threads (s)"] for r in cpu_rows) if cpu_rows else None)
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
