"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json, read_parquet
from stages.core.report import PaperCard, ReportPaths, band, decide_claim, figure, mean_std, read_timings, write_report
from stages.core.stage import StageContext, Step, inp
from stages.core.verdict import CheckOutcome, VerdictRule
from stages.entropylong.config import PAPER, ReportInputs, load_report
from stages.entropylong.mini_ruler import TASKS
from stages.entropylong.uncertainty import keep_context

TIMED_STEPS = ("entropy", "retrieve", "verify", "construct", "train", "evaluate")
REJECTED_EXAMPLES = 2  # the best-scored rejected candidates shown after the kept ones
VARIANT_LABELS = {"entropylong": "EntropyLong (verified)", "no_verification": "retrieval, no verification",
                  "concatenation": "random concatenation"}
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
              "it is unclear (too little power). Positive control: if no variant's mean content gain (held-out "
              "loss after random pool text minus loss after the verified contexts, same positions) reaches "
              "{floor:g} nats/token, no model reads its context and every check is unclear")


@dataclass(frozen=True)
class Paths(ReportPaths):
    documents: Path = inp("documents")
    token_entropy: Path = inp("per-token entropies")
    positions: Path = inp("selected positions")
    candidates: Path = inp("retrieved candidates")
    verification: Path = inp("ΔI table")
    sequences: Path = inp("training sequences")
    evaluation: Path = inp("metrics from evaluate")
    train_log: Path = inp("training losses")
    index: Path = inp("Wikipedia retrieval index asset (its manifest gives the pool's size)")


def power_gated(rule: VerdictRule, outcomes: list[CheckOutcome], control_passed: bool = True
                ) -> tuple[str, list[CheckOutcome]]:
    """Turn a 'fails' whose 95% t-interval still reaches the threshold into 'unclear'; recompute the verdict.

    When the positive control failed (no trained model reads its context), no check can be decided: all unclear.
    """
    from scipy import stats

    gated = []
    for check, o in zip(rule.checks, outcomes, strict=True):
        vals = np.array([v for v in o.values if v is not None], dtype=float)
        status = o.status if control_passed else "unclear"
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


def ablation_table(token_entropy: pd.DataFrame, verification: pd.DataFrame, alphas: list[float],
                   epsilons: list[float], min_position: int) -> pd.DataFrame:
    """Data statistics for every (α, ε): positions over τ, candidates, acceptance, mean ΔI of kept contexts."""
    cand = verification[verification.retrieved_for]
    rows = []
    n_docs = token_entropy.doc_id.nunique()
    for a in alphas:
        over = token_entropy[(token_entropy.z > a) & (token_entropy.pos >= min_position)]
        sel = cand[cand.z > a]
        for e in epsilons:
            kept = sel[keep_context(sel.delta_i.to_numpy(), e)]
            rows.append({"alpha": a, "epsilon": e, "positions over τ per doc": len(over) / n_docs,
                         "verified positions": int(sel.groupby(["doc_id", "pos"]).ngroups),
                         "candidates": len(sel), "acceptance": len(kept) / len(sel) if len(sel) else float("nan"),
                         "mean ΔI kept": float(kept.delta_i.mean()) if len(kept) else float("nan"),
                         "docs with ≥1 kept": int(kept.doc_id.nunique())})
    return pd.DataFrame(rows)


def quality_rows(main: pd.DataFrame, epsilon: float) -> list[dict[str, Any]]:
    """Kept vs rejected vs all unverified top-K: title/entity sharing and copy dependencies."""
    kept_mask = keep_context(main.delta_i.to_numpy(), epsilon)
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
        kept = part[keep_context(part.delta_i.to_numpy(), epsilon)]
        rows.append({"relative position": label[i], "selected positions": len(sel), "candidates": len(part),
                     "kept": len(kept), "acceptance": len(kept) / len(part) if len(part) else float("nan"),
                     "mean ΔI (all)": float(part.delta_i.mean()) if len(part) else float("nan")})
    return pd.DataFrame(rows)


def examples(main: pd.DataFrame, positions: pd.DataFrame, candidates: pd.DataFrame, docs: pd.DataFrame,
             epsilon: float, n: int) -> list[dict[str, Any]]:
    """The n kept contexts with the largest ΔI, and the best-scored rejected ones, as rows the template shows."""
    kept = main[keep_context(main.delta_i.to_numpy(), epsilon)].sort_values("delta_i", ascending=False)
    pos = positions.set_index(["doc_id", "pos"])
    text = candidates.drop_duplicates(["doc_id", "chunk_id"]).set_index(["doc_id", "chunk_id"]).text
    titles = docs.set_index("doc_id").title
    out = []
    picks = [("kept", r) for r in kept.head(n).itertuples(index=False)]
    rejected = main[~keep_context(main.delta_i.to_numpy(), epsilon)].sort_values("score", ascending=False)
    picks += [("rejected", r) for r in rejected.head(REJECTED_EXAMPLES).itertuples(index=False)]
    for kind, r in picks:
        p = pos.loc[(r.doc_id, r.pos)]
        out.append({"kind": kind, "document": titles[r.doc_id], "pos": int(r.pos),
                    "target": p.target.strip() or repr(p.target), "h": float(r.h), "h_ctx": float(r.h_ctx),
                    "delta_i": float(r.delta_i), "source": r.title, "copies_target": bool(r.target_in_context),
                    "shared_entities": int(r.shared_entities), "query": " ".join(str(p.query).split()),
                    "context": " ".join(str(text.loc[(r.doc_id, r.chunk_id)]).split())})
    return out


def seeds_needed(values: list[float], margin: float, most: int = 10_000) -> int:
    """Fewest seeds whose 95% t-interval has half-width ≤ ``margin`` at the observed seed-to-seed spread."""
    from scipy import stats

    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    if not math.isfinite(sd):
        return -1
    return next((n for n in range(2, most) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) <= margin), most)


def seeds_for_margin(rule: VerdictRule, ev: dict[str, Any]) -> dict[str, int]:
    """Per check metric: the seeds whose 95% interval would be as narrow as its margin (observed spread)."""
    return {c.metric: seeds_needed(ev["per_seed"][c.metric], c.threshold)
            for c in rule.checks if c.metric in ev["per_seed"]}


def plot_gains(ev: dict[str, Any], path: Path) -> None:
    """Long-context loss gain per variant: seeds as points, mean as a bar."""
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        for i, v in enumerate(ev["variants"]):
            vals = [g["gain"] for g in ev["gains"][v]]
            ax.bar(i, np.mean(vals), color=f"C{i}", alpha=0.5)
            ax.scatter(np.full(len(vals), i), vals, color=f"C{i}", zorder=3)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_xticks(range(len(ev["variants"])), [VARIANT_LABELS[v] for v in ev["variants"]], fontsize=8)
        ax.set_ylabel("loss without − with verified contexts (nats/token)")
        ax.set_title("primary metric: long-context loss gain on the shared held-out set")


def plot_training(log: pd.DataFrame, path: Path, window: int = 20) -> None:
    """Training loss per step (moving average), seeds as bands."""
    with figure(path, figsize=(6.5, 4)) as (_, ax):
        # EntropyLong last, so its curve is drawn on top (its data are mostly the concatenation's)
        for name, g in sorted(log.groupby("variant", sort=False), key=lambda kv: kv[0] == "entropylong"):
            runs = np.stack([r.sort_values("step").loss.to_numpy() for _, r in g.groupby("seed_index")])
            w = min(window, runs.shape[1])
            smooth = np.stack([np.convolve(r, np.ones(w) / w, mode="valid") for r in runs])
            band(ax, np.arange(w, runs.shape[1] + 1), smooth, VARIANT_LABELS[str(name)])
        ax.set_xlabel("step")
        ax.set_ylabel(f"training cross-entropy (nats, {window}-step mean)")
        ax.legend(fontsize=8)


def plot_delta_i(main: pd.DataFrame, ablation: pd.DataFrame, epsilon: float, path: Path) -> None:
    """ΔI of every candidate (histogram, ε marked) and acceptance vs ε for each α."""
    with figure(path, 1, 2, figsize=(11, 4)) as (_, (ax1, ax2)):
        ax1.hist(main.delta_i.clip(-1, 1), bins=40, color="C0")
        ax1.axvline(epsilon, color="C3", ls="--", label=f"ε = {epsilon}")
        ax1.axvline(0.68, color="C2", ls=":", label="paper: mean ΔI of kept = 0.68")
        ax1.set_xlabel("ΔI = (H − H′)/H (clipped at −1)")
        ax1.set_ylabel("candidates at main-α positions")
        ax1.legend(fontsize=8)
        for a, g in ablation.groupby("alpha"):
            ax2.plot(g.epsilon, g.acceptance, marker="o", label=f"α = {a:g}")
        ax2.set_xlabel("ε")
        ax2.set_ylabel("acceptance rate")
        ax2.set_title("ablation: acceptance vs ε")
        ax2.legend(fontsize=8)


def plot_ruler(ev: dict[str, Any], path: Path) -> None:
    """Mini-RULER score vs prompt length for each task; variants as seed bands; chance dashed."""
    lengths = ev["ruler_lengths"]
    with figure(path, 1, len(TASKS), figsize=(4 * len(TASKS), 3.6)) as (_, axes):
        for ax, task in zip(axes, TASKS, strict=True):
            for v in ev["variants"]:
                runs = np.array([[r[task][str(n)] for n in lengths] for r in ev["ruler"][v]])
                band(ax, np.asarray(lengths), runs, VARIANT_LABELS[v])
            ax.axhline(ev["ruler_chance"][task], color="k", ls="--", lw=0.8, label="chance")
            ax.axvline(ev["train_len"], color="grey", ls=":", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_ylim(-0.05, 1.05)
            ax.set_title(task)
            ax.set_xlabel("prompt tokens (dotted: training length)")
        axes[0].set_ylabel("score")
        axes[0].legend(fontsize=7)


def run(cfg: ReportInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Compute the verdict (with the power gate) and write the report."""
    ev = read_json(paths.evaluation)
    docs = read_parquet(paths.documents, columns=["doc_id", "source", "title", "split", "n_tokens"])
    tent = read_parquet(paths.token_entropy, columns=["doc_id", "pos", "z"])
    positions = read_parquet(paths.positions, columns=["doc_id", "pos", "main", "rel_pos", "target", "query"])
    cands = read_parquet(paths.candidates, columns=["doc_id", "pos", "rank", "chunk_id", "text", "n_excluded"])
    ver = read_parquet(paths.verification, columns=["doc_id", "chunk_id", "pos", "retrieved_for", "score", "z",
                                                    "main", "rel_pos", "h", "h_ctx", "delta_i", "title",
                                                    "title_in_doc", "shared_entities", "target_in_context"])
    seq_columns = ["variant", "n_tokens", "n_contexts", "doc_start"]
    seqs = read_parquet(paths.sequences, columns=seq_columns)[seq_columns]
    log = read_parquet(paths.train_log, columns=["variant", "seed_index", "step", "loss"])
    pool = read_json(Path(paths.index) / "manifest.json")["details"]
    timings = read_timings(paths.timings, TIMED_STEPS)
    ent_cfg, ver_cfg = cfg.entropy, cfg.verify
    eps = ver_cfg.epsilon
    content = {v: float(np.mean([g["content_gain"] for g in ev["gains"][v]])) for v in ev["variants"]}
    control_passed = max(content.values()) >= cfg.report.min_content_gain

    main = ver[ver.retrieved_for & ver.main]
    kept = main[keep_context(main.delta_i.to_numpy(), eps)]
    gains = {v: [g["gain"] for g in ev["gains"][v]] for v in ev["variants"]}
    headline = {f"gain_{v}": mean_std(g, 4) for v, g in gains.items()}
    headline |= {f"content_gain_{v}": mean_std([g["content_gain"] for g in ev["gains"][v]], 4)
                 for v in ev["variants"]}
    headline |= {k: mean_std(v, 4) for k, v in ev["per_seed"].items()}
    headline |= {"acceptance": f"{len(kept) / max(len(main), 1):.3f}",
                 "mean_delta_i_kept": f"{kept.delta_i.mean():.3f}" if len(kept) else "n/a"}
    claim = decide_claim(CARD, cfg.verdict, ev["per_seed"], seeds=ev["seeds"], profile=ctx.profile,
                         timings=timings, measured=headline)
    if cfg.report.power_gate:
        verdict, outcomes = power_gated(cfg.verdict, claim.checks, control_passed)
        claim = claim.model_copy(update={
            "verdict": verdict, "checks": outcomes,
            "verdict_rule": f"{claim.verdict_rule}. {POWER_GATE.format(floor=cfg.report.min_content_gain)}"})

    ablation = ablation_table(tent, ver, ent_cfg.alphas, ver_cfg.epsilons, ent_cfg.query_window)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_gains(ev, paths.plots / "loss_gain.png")
    plot_training(log, paths.plots / "training_loss.png")
    plot_delta_i(main, ablation, eps, paths.plots / "delta_i.png")
    plot_ruler(ev, paths.plots / "mini_ruler.png")

    per_variant = [{"variant": VARIANT_LABELS[v], "loss without contexts": mean_std([g["nll_without"] for g in
                                                                                    ev["gains"][v]], 4),
                    "loss with verified contexts": mean_std([g["nll_with"] for g in ev["gains"][v]], 4),
                    "loss after random text (control)": mean_std([g["nll_random"] for g in ev["gains"][v]], 4),
                    "gain": mean_std(gains[v], 4),
                    "content gain": mean_std([g["content_gain"] for g in ev["gains"][v]], 4)}
                   for v in ev["variants"]]
    ruler_rows = []
    for task in TASKS:
        for n in ev["ruler_lengths"]:
            row = {"task": task, "length": n, "chance": ev["ruler_chance"][task]}
            for v in ev["variants"]:
                row[VARIANT_LABELS[v]] = mean_std([r[task][str(n)] for r in ev["ruler"][v]], 2)
            ruler_rows.append(row)
    seq_rows = [{"variant": VARIANT_LABELS[str(v)], "sequences": len(g), "tokens": int(g.n_tokens.sum()),
                 "mean retrieved contexts": float(g.n_contexts.mean()),
                 "mean document start": float(g.doc_start.mean())}
                for v, g in seqs.groupby("variant", sort=False)]
    scored_tokens = int(docs.n_tokens.sum())
    metrics = {"per_seed": ev["per_seed"], "gains": gains, "content_gains": content,
               "positive_control_passed": control_passed, "ruler": ev["ruler"], "acceptance": len(kept) /
               max(len(main), 1), "mean_delta_i_kept": float(kept.delta_i.mean()) if len(kept) else None,
               "ablation": ablation.to_dict("records"), "verdict": claim.verdict}
    write_report(
        paths, claim, metrics, timings, ev=ev, entropy=ent_cfg, verify=ver_cfg, report_cfg=cfg.report,
        n_docs=len(docs), n_heldout=int((docs.split == "heldout").sum()),
        n_wikipedia=int((docs.source == "wikipedia").sum()), n_enwiki=int((docs.source == "enwiki").sum()),
        scored_tokens=scored_tokens, entropy_tokens_per_s=scored_tokens / max(timings["entropy"], 1e-9),
        n_positions=len(positions), n_main_positions=int(positions.main.sum()),
        pool_articles=int(pool["articles"]), pool_chunks=int(pool["chunks"]),
        n_excluded=int(cands.groupby(["doc_id", "pos"]).n_excluded.first().sum()),
        top_k=int(cands["rank"].max()) + 1, n_candidates=len(cands),
        n_forward_passes=int(cands.groupby("doc_id").chunk_id.nunique().sum()),
        n_main=len(main), n_kept=len(kept), acceptance=len(kept) / max(len(main), 1),
        mean_delta_i_kept=float(kept.delta_i.mean()) if len(kept) else float("nan"),
        n_docs_with_kept=int(kept.doc_id.nunique()),
        copy_share=float(kept.target_in_context.mean()) if len(kept) else float("nan"),
        seq_rows=seq_rows, per_variant=per_variant, control_passed=control_passed,
        best_content_gain=max(content.values()),
        per_seed_rows=[{"metric": k, "value": mean_std(v, 4)} for k, v in ev["per_seed"].items()],
        ruler_rows=ruler_rows, quality_rows=quality_rows(main, eps),
        position_rows=by_position(main, positions, eps).to_dict("records"),
        ablation_rows=ablation.to_dict("records"),
        examples=examples(main, positions, cands, docs, eps, cfg.report.n_examples),
        margin=cfg.verdict.checks[0].threshold, seeds_for_margin=seeds_for_margin(cfg.verdict, ev))
    return {"verdict": claim.verdict}


main = Step(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
