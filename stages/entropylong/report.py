"""Step ``report``: report.md, PNG plots, metrics.json and claim.json."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import read_json, read_parquet, write_json
from stages.core.report import (
    band,
    figure,
    markdown_table,
    mean_std,
    read_timings,
    report_opening,
    verdict_section,
    write_markdown,
)
from stages.core.stage import StageContext, inp, out, stage_main
from stages.core.verdict import CheckOutcome, ClaimRecord, VerdictRule, decide
from stages.entropylong.config import PAPER, ReportInputs, load_report
from stages.entropylong.mini_ruler import TASKS
from stages.entropylong.uncertainty import keep_context

TIMED_STEPS = ("entropy", "retrieve", "verify", "construct", "train", "evaluate")
VARIANT_LABELS = {"entropylong": "EntropyLong (verified)", "no_verification": "retrieval, no verification",
                  "concatenation": "random concatenation"}
TITLE = ("EntropyLong: Effective Long-Context Training via Predictive Uncertainty (ICLR 2026; "
         "arXiv 2510.02330)")
CLAIM = ("Long-context training sequences built from contexts that are retrieved for a document's high-entropy "
         "positions AND verified to reduce the model's predictive entropy there (ΔI > ε) teach a model to use "
         "long-range context better than generic concatenation or retrieval without verification.")
PAPER_RESULT = ("Llama-3-8B trained on 128K-token EntropyLong data: RULER average 87.37 vs 85.22 for NExtLong "
                "(retrieval-based, unverified construction) and 85.82 for EntropyLong without verification; "
                "mean ΔI of kept contexts 0.68 (α = 2.0, ε = 0.4, 16-token query windows); better LongBench-v2 "
                "after SFT.")
POWER_GATE = ("Power gate: a check whose every seed misses the threshold counts as failed only when the 95% "
              "t-interval of its per-seed values lies entirely on the wrong side of the threshold; otherwise "
              "it is unclear (too little power). Positive control: if no variant's mean content gain (held-out "
              "loss after random pool text minus loss after the verified contexts, same positions) reaches "
              "{floor:g} nats/token, no model reads its context and every check is unclear")


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents")
    token_entropy: Path = inp("per-token entropies")
    positions: Path = inp("selected positions")
    candidates: Path = inp("retrieved candidates")
    verification: Path = inp("ΔI table")
    sequences: Path = inp("training sequences")
    evaluation: Path = inp("metrics from evaluate")
    train_log: Path = inp("training losses")
    timings: Path = inp("folder of step timings")
    report: Path = out("report.md")
    metrics: Path = out("metrics.json")
    claim: Path = out("claim.json")
    plots: Path = out("folder of PNG plots")


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
             epsilon: float, n: int) -> list[str]:
    """The n kept contexts with the largest ΔI, and the best-scored rejected one, as readable snippets."""
    kept = main[keep_context(main.delta_i.to_numpy(), epsilon)].sort_values("delta_i", ascending=False)
    pos = positions.set_index(["doc_id", "pos"])
    text = candidates.drop_duplicates(["doc_id", "chunk_id"]).set_index(["doc_id", "chunk_id"]).text
    titles = docs.set_index("doc_id").title
    out = []
    picks = [("kept", r) for r in kept.head(n).itertuples(index=False)]
    rejected = main[~keep_context(main.delta_i.to_numpy(), epsilon)].sort_values("score", ascending=False)
    picks += [("rejected", r) for r in rejected.head(2).itertuples(index=False)]
    for kind, r in picks:
        p = pos.loc[(r.doc_id, r.pos)]
        ctx = " ".join(str(text.loc[(r.doc_id, r.chunk_id)]).split())
        kindword = "copy: the predicted token occurs in the context" if r.target_in_context else \
            "no copy: the context changes the topic prior"
        target = p.target.strip() or repr(p.target)
        out.append(f"- **{kind}**, document *{titles[r.doc_id]}*, position {r.pos} (target `{target}`), "
                   f"H = {r.h:.2f} → H′ = {r.h_ctx:.2f} nats, ΔI = {r.delta_i:.2f}; context from *{r.title}* "
                   f"({kindword}; {r.shared_entities} shared entity words).  \n"
                   f"  query window: “{' '.join(str(p.query).split())[:220]}”  \n"
                   f"  context: “{ctx[:260]}…”")
    return out


def seeds_needed(values: list[float], margin: float, most: int = 10_000) -> int:
    """Fewest seeds whose 95% t-interval has half-width ≤ ``margin`` at the observed seed-to-seed spread."""
    from scipy import stats

    sd = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
    if not math.isfinite(sd):
        return -1
    return next((n for n in range(2, most) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) <= margin), most)


def settle_text(rule: VerdictRule, ev: dict[str, Any], control_passed: bool, n_kept: int, n_main: int) -> str:
    """What the measured spread and the positive control say about the scale that would decide the claim."""
    need = "; ".join(f"{c.metric}: about {seeds_needed(ev['per_seed'][c.metric], c.threshold)} seeds"
                     for c in rule.checks if c.metric in ev["per_seed"])
    control = ("The positive control passed, so the models do read their contexts; the open question is "
               "statistical." if control_passed else
               "The positive control failed: no trained model reads its contexts (its loss after the verified "
               "contexts is no better than after random text), so the variants cannot differ in the skill the "
               "paper measures.")
    return (f"{control} Seeds for a 95% interval as narrow as the {rule.checks[0].threshold:g}-nat margin at "
            f"the observed seed-to-seed spread: {need} (more seeds alone would only pin the difference near "
            f"zero while no model reads context). Beyond seeds, the model must first learn to use context at all: "
            "in-context copying (induction heads) emerges only after far more training than the "
            f"{ev['tokens_seen_per_run']:,} tokens per run here — of the order of 10⁸ tokens with sequences "
            "of thousands of tokens (the `paper` profile: "
            f"an 8-layer, 512-wide model, 4,096-token sequences, 20k steps, on a GPU). The data side needs a far "
            f"larger retrieval pool: only {n_kept} of {n_main} candidates ({n_kept / max(n_main, 1):.0%}) passed "
            "verification here, so EntropyLong sequences are mostly filler; with the whole Wikipedia as the pool "
            "(millions of chunks) and top-K ≥ 8, most documents would have verified contexts and the held-out "
            "set could hold hundreds of documents.")


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
    docs, tent, positions, cands, ver = (read_parquet(p) for p in (paths.documents, paths.token_entropy,
                                                                   paths.positions, paths.candidates,
                                                                   paths.verification))
    seqs = read_parquet(paths.sequences)[["variant", "n_tokens", "n_contexts", "doc_start"]]
    log = read_parquet(paths.train_log)
    timings = read_timings(paths.timings, TIMED_STEPS)
    ent_cfg, ver_cfg = cfg.entropy, cfg.verify
    eps = ver_cfg.epsilon
    verdict, outcomes = decide(cfg.verdict, ev["per_seed"])
    content = {v: float(np.mean([g["content_gain"] for g in ev["gains"][v]])) for v in ev["variants"]}
    control_passed = max(content.values()) >= cfg.report.min_content_gain
    if cfg.report.power_gate:
        verdict, outcomes = power_gated(cfg.verdict, outcomes, control_passed)
    rule = cfg.verdict.describe() + (f". {POWER_GATE.format(floor=cfg.report.min_content_gain)}"
                                      if cfg.report.power_gate else "")

    main = ver[ver.retrieved_for & ver.main]
    kept = main[keep_context(main.delta_i.to_numpy(), eps)]
    ablation = ablation_table(tent, ver, ent_cfg.alphas, ver_cfg.epsilons, ent_cfg.query_window)
    paths.plots.mkdir(parents=True, exist_ok=True)
    plot_gains(ev, paths.plots / "loss_gain.png")
    plot_training(log, paths.plots / "training_loss.png")
    plot_delta_i(main, ablation, eps, paths.plots / "delta_i.png")
    plot_ruler(ev, paths.plots / "mini_ruler.png")

    gains = {v: [g["gain"] for g in ev["gains"][v]] for v in ev["variants"]}
    headline = {f"gain_{v}": mean_std(g, 4) for v, g in gains.items()}
    headline |= {f"content_gain_{v}": mean_std([g["content_gain"] for g in ev["gains"][v]], 4)
                 for v in ev["variants"]}
    headline |= {k: mean_std(v, 4) for k, v in ev["per_seed"].items()}
    headline |= {"acceptance": f"{len(kept) / max(len(main), 1):.3f}",
                 "mean_delta_i_kept": f"{kept.delta_i.mean():.3f}" if len(kept) else "n/a"}
    wall = float(sum(timings.values()))
    claim = ClaimRecord(paper=PAPER, title=TITLE, claim=CLAIM, paper_result=PAPER_RESULT, measured=headline,
                        verdict=verdict, verdict_rule=rule, checks=outcomes, profile=ctx.profile, seeds=ev["seeds"],
                        wall_time_s=wall)
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
    n_docs = len(docs)
    held = int((docs.split == "heldout").sum())
    copy_share = float(kept.target_in_context.mean()) if len(kept) else float("nan")
    md = [*report_opening(claim, timings),
          "## What the miniature does",
          f"- **Entropy model**: SmolLM2-135M (float32, from the asset layer), batched scoring. **Documents**: "
          f"{n_docs} ({int((docs.source == 'wikipedia').sum())} longest Wikipedia lead extracts, "
          f"{int((docs.source == 'enwiki').sum())} enwiki articles), each cut to {ent_cfg.doc_tokens} SmolLM2 "
          f"tokens ({int(docs.n_tokens.sum())} tokens scored); {n_docs - held} train / {held} held out.",
          f"- **Positions**: τ = μ_H + α·σ_H per document; up to {ent_cfg.max_positions} per document (highest "
          f"entropy first, ≥ {ent_cfg.min_separation} tokens apart, not in the first {ent_cfg.query_window}); "
          f"{len(positions)} positions at α = {min(ent_cfg.alphas)} (verified, for the α ablation), "
          f"{int(positions.main.sum())} at the main α = {ent_cfg.alpha}.",
          f"- **Retrieval**: a ±{ent_cfg.query_window}-token window around each position, embedded with "
          f"MiniLM-L6, searched in the exact faiss index of Wikipedia chunks (2,000 articles, 2,500 chunks); "
          f"the document's own article and near-duplicates (word 8-gram overlap) excluded "
          f"({int(cands.groupby(['doc_id', 'pos']).n_excluded.first().sum())} hits excluded); top-K = "
          f"{int(cands['rank'].max()) + 1}: {len(cands)} (position, candidate) pairs, "
          f"{int(cands.groupby('doc_id').chunk_id.nunique().sum())} distinct (document, candidate) forward passes.",
          f"- **Verification**: one SmolLM2 forward pass per (document, candidate) gives H′ at all of the "
          f"document's selected positions; ΔI = (H − H′)/H; keep when ΔI > ε = {eps}. At the main α: "
          f"{len(main)} candidates, {len(kept)} kept (acceptance {len(kept) / max(len(main), 1):.1%}).",
          f"- **Training**: a small tokenizer (byte-level BPE, {ev['vocab_size']} ids) trained here; the same "
          f"TinyGPT ({ev['model']['n_layers']} layers, d = {ev['model']['d_model']}) trained from scratch on each "
          f"variant, {len(ev['seeds'])} seeds, {ev['tokens_seen_per_run']:,} tokens seen per run, sequences of "
          f"{ev['train_len']} tokens (Lightning, CPU). Seed s uses the same initialisation and data order for "
          "every variant, so differences are paired.",
          markdown_table(seq_rows),
          f"- **Evaluation**: ONE shared held-out set ({ev['heldout_docs']} held-out documents with ≥ 1 verified "
          f"context, {ev['heldout_doc_tokens']} document tokens): loss on the document tokens alone vs after "
          "their verified contexts; and a mini-RULER on held-out text, ranked by likelihood (chance stated).",
          "", "What differs from the paper and why: an 8B model and 128K-token sequences are out of reach on 2 CPU "
          "cores; here the documents are short, the pool is 2,500 chunks, sequences are "
          f"{ev['train_len']} tokens and each model sees {ev['tokens_seen_per_run']:,} training tokens. The "
          "miniature keeps the whole method (entropy → threshold → retrieval → model-in-the-loop verification → "
          "shuffled contexts with the document last) and both baselines at equal token counts. One setting "
          "departs from the paper: "
          f"ε = {eps:g} instead of 0.4, because a pilot on these documents (before any training) accepted only "
          "about 2% of candidates at 0.4, leaving EntropyLong sequences without contexts; the paper's ε stays in "
          "the ablation below. Wall times are the run alone on 2 cores (the entropy step scored "
          f"{int(docs.n_tokens.sum()) / max(timings['entropy'], 1e-9):.0f} SmolLM2 tokens/s); side by side with "
          "other jobs the same run took about ten times longer.", "",
          "## Results (mean ± std over seeds)",
          "Primary metric, long-context loss gain on the shared held-out set (nats per document token): loss "
          "of the document alone minus loss after its verified contexts. Control: the same documents after as "
          "many tokens of random pool text, so `content gain` = loss(random text) − loss(verified contexts) "
          "separates reading the contexts from merely sitting later in the sequence:",
          markdown_table(per_variant),
          f"Positive control ({'passed' if control_passed else 'FAILED'}): the largest mean content gain is "
          f"{max(content.values()):.4f} nats/token (floor {cfg.report.min_content_gain:g}).", "",
          "Per-seed paired differences of the gain:",
          markdown_table([{"metric": k, "value": mean_std(v, 4)} for k, v in ev["per_seed"].items()]),
          "Mini-RULER score (likelihood ranking among candidates; 1 = right, chance in its own column):",
          markdown_table(ruler_rows, digits=2),
          "## Data quality",
          f"Mean ΔI of kept contexts: **{kept.delta_i.mean():.3f}** (paper: 0.68); acceptance at α = "
          f"{ent_cfg.alpha}, ε = {eps}: **{len(kept) / max(len(main), 1):.1%}**; "
          f"{kept.doc_id.nunique()} of {n_docs} documents have ≥ 1 kept context." if len(kept) else
          "No candidate passed verification.",
          "", "Kept vs rejected vs unverified top-K contexts:",
          markdown_table(quality_rows(main, eps)),
          "Where the selected and kept positions fall (relative position in the document):",
          markdown_table(by_position(main, positions, eps).to_dict("records")),
          f"Ablation on data statistics (no training): α ∈ {ent_cfg.alphas}, ε ∈ {ver_cfg.epsilons}:",
          markdown_table(ablation.to_dict("records")),
          "### What the kept contexts resolve",
          f"{copy_share:.0%} of kept contexts contain the very token being predicted (a copy/lookup "
          "dependency: a name, a date, a term the context states); the rest lower the entropy by priming the "
          "topic (the right register, the right set of candidate words). Examples, highest ΔI first, then the "
          "two best-scored rejected candidates:" if len(kept) else "",
          "", *examples(main, positions, cands, docs, eps, cfg.report.n_examples), "",
          *verdict_section(claim),
          "### What scale would settle it",
          settle_text(cfg.verdict, ev, control_passed, len(kept), len(main)), "",
          "## Plots", "![gain](plots/loss_gain.png)", "", "![training](plots/training_loss.png)", "",
          "![ΔI](plots/delta_i.png)", "", "![mini-RULER](plots/mini_ruler.png)", ""]
    write_markdown("\n".join(md), paths.report)
    write_json({"per_seed": ev["per_seed"], "gains": gains, "content_gains": content,
                "positive_control_passed": control_passed, "ruler": ev["ruler"], "acceptance": len(kept) /
                max(len(main), 1), "mean_delta_i_kept": float(kept.delta_i.mean()) if len(kept) else None,
                "ablation": ablation.to_dict("records"), "verdict": verdict}, paths.metrics)
    write_json(claim.model_dump(), paths.claim)
    return {"verdict": verdict}


def main() -> None:
    stage_main(PAPER, "report", run, load_report, Paths)


if __name__ == "__main__":
    main()
