"""Judges of candidate briefs (one interface, two backends), reference metrics and statistics.

Rubric (Sci2Pol-Bench, Sec. 3: briefs scored on contextual depth, hallucination risk,
readability/tone and actionability, each 0-5). The rubric judge reads the generator's
ground truth (the paper's findings), so it is a ceiling; the LM judge prompts
SmolLM2 with the rubric and reads the expected score from the logits of the score
tokens ``0``..``5``. ROUGE-L and a greedy token-level BERTScore are the baselines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from stages.sci2pol.data import SECTIONS, Paper

DIMENSIONS = ("contextual_depth", "hallucination_risk", "readability_tone", "actionability")
SCORE_TOKENS = tuple(str(k) for k in range(6))
FINDING = re.compile(r"(reduced|increased) (?:the )?(.+?) by (\d+)(?: percent|%| per cent)")
RUBRIC = ("Rate the policy brief for the paper from 0 (poor) to 5 (excellent): contextual depth, "
          "no hallucinated or wrong numbers, readable policy tone, actionable recommendation.")


class Judge(Protocol):
    """Scores (paper, brief) pairs; higher is better."""

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """One overall score per pair."""
        ...


def has_section(text: str, name: str) -> bool:
    """Whether the brief has a ``name:`` heading at the start of a line."""
    return re.search(rf"(^|\n){name}:", text) is not None


def section_text(text: str, name: str) -> str:
    """The text under the ``name:`` heading (empty if absent)."""
    m = re.search(rf"(?:^|\n){name}:(.*?)(?=\n[A-Z][a-z]+:|\Z)", text, flags=re.S)
    return m.group(1).lower() if m else ""


def rubric_scores(paper: Paper, brief: str) -> dict[str, float]:
    """The four brief dimensions (0-5) computed from the paper's ground-truth findings (Sec. 3 rubric)."""
    low = brief.lower()
    structured = sum(has_section(brief, s) for s in SECTIONS)
    ctx = section_text(brief, "Context") if structured else low
    context = 2.5 * (paper.population in ctx) + 2.5 * (paper.intervention in ctx)
    n_stated, errors = stated_errors(paper, brief)
    hallucination = max(0.0, 5.0 - 2.5 * errors) if n_stated else 2.5
    verbatim = "methods: we use" in low or paper.title.lower() in low
    readability = 1.0 if verbatim else min(5.0, 2.0 + structured)
    rec = section_text(brief, "Recommendation")
    action = 2.5 * (paper.intervention in rec) + 2.5 * ("should" in rec)
    return {"contextual_depth": context, "hallucination_risk": hallucination,
            "readability_tone": readability, "actionability": action}


def rubric_overall(dims: dict[str, float]) -> float:
    """Mean of the four dimensions, capped by the hallucination score (a wrong number outweighs style)."""
    return float(min(dims["hallucination_risk"], np.mean(list(dims.values()))))


class RubricJudge:
    """Deterministic judge that knows the ground truth (a ceiling, not a real judge)."""

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """Overall score of each pair: ``rubric_overall``."""
        return np.array([rubric_overall(rubric_scores(p, b)) for p, b in zip(papers, briefs, strict=True)])


SUMMARY_DIMENSIONS = ("clarity", "accuracy", "coverage")


def required_facts(paper: Paper, aspect: str) -> list[str]:
    """What a one-sentence summary of ``aspect`` must mention (the summary rubric's coverage)."""
    if aspect == "Findings":
        return [f"{f.direction} {f.outcome} by {f.value}" for f in paper.findings]
    if aspect == "Context":
        return [paper.population, paper.intervention]
    if aspect == "Recommendation":
        return [paper.intervention, paper.population]
    raise ValueError(f"unknown summary aspect {aspect!r}")


def stated_errors(paper: Paper, text: str) -> tuple[int, int]:
    """(findings stated, errors among them): a wrong number or direction is one error each, a finding
    about an outcome the paper does not report counts two."""
    truth = {f.outcome: f for f in paper.findings}
    stated = FINDING.findall(text.lower())
    errors = 0
    for direction, outcome, value in stated:
        f = truth.get(outcome)
        errors += 2 if f is None else (int(value) != f.value) + (direction != f.direction)
    return len(stated), errors


def summary_scores(paper: Paper, aspect: str, summary: str) -> dict[str, float]:
    """Clarity, accuracy and coverage (1-5) of a one-sentence summary (Sci2Pol-Bench summary rubric)."""
    low = " ".join(FINDING.sub(lambda m: f"{m.group(1)} {m.group(2)} by {m.group(3)}", summary.lower()).split())
    words = len(summary.split())
    if words == 0:
        return dict.fromkeys(SUMMARY_DIMENSIONS, 1.0)
    facts = required_facts(paper, aspect)
    coverage = 1.0 + 4.0 * sum(f in low for f in facts) / len(facts)
    _, errors = stated_errors(paper, summary)
    accuracy = max(1.0, 5.0 - 2.0 * errors)
    copied = "methods: we use" in low or paper.title.lower() in low
    clarity = 1.0 if copied else 5.0 if words <= 40 else 3.0
    return {"clarity": clarity, "accuracy": accuracy, "coverage": coverage}


def summary_overall(dims: dict[str, float]) -> float:
    """Overall (1-5): mean of the dimensions, capped by accuracy (as ``rubric_overall`` is by hallucination)."""
    return float(min(dims["accuracy"], np.mean(list(dims.values()))))


class SummaryRubricJudge:
    """The summary rubric judge for one aspect (ground-truth ceiling, like ``RubricJudge``); 1-5."""

    def __init__(self, aspect: str) -> None:
        self.aspect = aspect

    def score(self, papers: Sequence[Paper], texts: Sequence[str]) -> np.ndarray:
        """Overall summary score of each (paper, summary) pair."""
        return np.array([summary_overall(summary_scores(p, self.aspect, t))
                         for p, t in zip(papers, texts, strict=True)])


def judge_prompt(paper: Paper, brief: str) -> str:
    """The LM judge's prompt: rubric, paper, brief, and the cue for a single digit."""
    return f"{RUBRIC}\n\nPaper: {paper.text}\n\nBrief: {brief}\n\nScore (0-5):"


def expected_score(score_logits: np.ndarray) -> float:
    """Expected score under the softmax over the score tokens' logits (0..K-1)."""
    z = np.asarray(score_logits, dtype=float)
    p = np.exp(z - z.max())
    p /= p.sum()
    return float(p @ np.arange(len(z)))


def score_token_ids(tokenizer: Any, tokens: Sequence[str] = SCORE_TOKENS) -> list[int]:
    """The single token id of each score token (with a leading space if the tokenizer joins it so)."""
    ids = []
    for t in tokens:
        enc = tokenizer(" " + t, add_special_tokens=False)["input_ids"]
        enc = enc if len(enc) == 1 else tokenizer(t, add_special_tokens=False)["input_ids"]
        if len(enc) != 1:
            raise ValueError(f"score token {t!r} is not a single token")
        ids.append(enc[0])
    return ids


class LMJudge:
    """A causal LM prompted with the rubric; score = expected value over the score tokens' logits."""

    def __init__(self, model: Any, tokenizer: Any, max_tokens: int = 512, use_chat: bool = True) -> None:
        self.model, self.tokenizer, self.max_tokens, self.use_chat = model, tokenizer, max_tokens, use_chat
        self.ids = score_token_ids(tokenizer)

    def _encode(self, prompt: str) -> list[int]:
        if self.use_chat and getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                      add_generation_prompt=True)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        else:
            ids = self.tokenizer(prompt)["input_ids"]
        return ids[-self.max_tokens:]

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """Expected score of each pair (one forward pass per prompt, last position only)."""
        import torch

        out = []
        with torch.inference_mode():
            for p, b in zip(papers, briefs, strict=True):
                ids = torch.tensor([self._encode(judge_prompt(p, b))])
                logits = self.model(input_ids=ids).logits[0, -1, self.ids]
                out.append(expected_score(logits.float().numpy()))
        return np.array(out)


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F-measure (rouge-score, stemmed)."""
    from rouge_score import rouge_scorer

    return float(rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(reference, candidate)["rougeL"].fmeasure)


def greedy_bertscore(ref_emb: np.ndarray, cand_emb: np.ndarray) -> float:
    """BERTScore F1 (Zhang et al. 2020, Eq. 1-3 without idf): greedy cosine matching of token embeddings."""
    r = ref_emb / np.linalg.norm(ref_emb, axis=1, keepdims=True)
    c = cand_emb / np.linalg.norm(cand_emb, axis=1, keepdims=True)
    sim = r @ c.T
    recall, precision = sim.max(axis=1).mean(), sim.max(axis=0).mean()
    return float(2 * precision * recall / (precision + recall)) if precision + recall > 0 else 0.0


def token_embeddings(encoder: Any, texts: Sequence[str]) -> list[np.ndarray]:
    """Contextual token embeddings of each text from a SentenceTransformer (special tokens dropped)."""
    embs = encoder.encode(list(texts), output_value="token_embeddings", convert_to_numpy=False)
    return [e.detach().cpu().numpy()[1:-1] if len(e) > 2 else e.detach().cpu().numpy() for e in embs]


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties; NaN if either side is constant)."""
    from scipy.stats import spearmanr

    if np.ptp(np.asarray(x, float)) == 0 or np.ptp(np.asarray(y, float)) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def bootstrap_se(scores: Sequence[float], n_resamples: int = 1000, seed: int = 0) -> float:
    """Bootstrap standard error of the mean score (Sci2Pol-Bench, Sec. 4: 1,000 resamples)."""
    s = np.asarray(scores, dtype=float)
    if s.size == 0:
        return float("nan")
    g = np.random.default_rng(seed)
    means = s[g.integers(0, s.size, size=(n_resamples, s.size))].mean(axis=1)
    return float(means.std(ddof=1))


def bootstrap_se_of(statistic: Callable[[np.ndarray], float], n_items: int, n_resamples: int = 1000,
                    seed: int = 0) -> float:
    """Bootstrap standard error of any statistic of the items (e.g. macro F1), given resampled indices."""
    if n_items == 0:
        return float("nan")
    g = np.random.default_rng(seed)
    stats = [statistic(g.integers(0, n_items, size=n_items)) for _ in range(n_resamples)]
    return float(np.std(stats, ddof=1))


def choose(loglik: Callable[[str, str], float], context: str, options: Sequence[str]) -> int:
    """Choice task: the index of the option with the highest log-likelihood given the context."""
    return int(np.argmax([loglik(context, o) for o in options]))


def macro_f1(gold: Sequence[int], pred: Sequence[int]) -> float:
    """Macro-averaged F1 over the labels present in gold or pred (choice tasks)."""
    labels = sorted(set(gold) | set(pred))
    f1s = []
    for lab in labels:
        tp = sum(g == lab and p == lab for g, p in zip(gold, pred, strict=True))
        fp = sum(g != lab and p == lab for g, p in zip(gold, pred, strict=True))
        fn = sum(g == lab and p != lab for g, p in zip(gold, pred, strict=True))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    return float(np.mean(f1s)) if f1s else float("nan")


def lm_option_logliks(model: Any, tokenizer: Any, context: str, options: Sequence[str],
                      batch_size: int = 8) -> list[float]:
    """log p(option | context) of each option, summed over the option's tokens."""
    from stages.core.lm_scoring import score_sequences

    if hasattr(model, "get_base_model"):  # a peft wrapper: its LoRA layers live in the base model
        model = model.get_base_model()
    ctx = tokenizer(context)["input_ids"]
    seqs = [ctx + tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in options]
    return [s.total_logprob for s in score_sequences(model, seqs, start=len(ctx), batch_size=batch_size)]
