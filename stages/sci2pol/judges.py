"""Judges of candidate briefs, the open-answer scorer, reference metrics and statistics.

Rubric (Sci2Pol-Bench, Sec. 3: briefs judged on contextual depth, hallucination risk,
readability/tone and actionability). Two judges share one interface:
- ``RubricJudge`` reads the generator's ground truth (the paper's numbers, outcomes and
  directions): a labelled ceiling, never the judge under test;
- ``LMJudge`` prompts a small instruction-tuned LM (SmolLM2-135M or Gemma-3-270M) with the
  rubric, the source paper and the brief, and reads the expected score from the logits of
  the score tokens ``0``..``5``. Whether it can judge at all is measured by a competence
  gate: the AUC of its scores for gold against off-topic briefs (``auc``).
Open benchmark answers are scored on the answer alone: the section content rubric
(``section_content``, against the paper's ground truth) times a form factor
(``form_factor``: distinct-token ratio, sentences that parse, no span copied from the prompt),
so repetition, keyword salad and copying cannot score.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from stages.sci2pol.data import FLIP, SECTIONS, Paper

SCORE_TOKENS = tuple(str(k) for k in range(6))
RUBRIC = ("You review a policy brief written from a scientific paper. Score it from 0 to 5. "
          "5: faithful to the paper, with Context, Findings and Recommendation sections. "
          "Lower the score for every number the paper does not state, for a finding whose direction is "
          "reversed, for a missing section, and for text copied from the paper. "
          "0: the brief is about a different topic than the paper.")
# direction words a reader recognises (wider than the generator's own wordings)
DIRECTION_WORDS = {
    "down": {"reduced", "reduce", "reduces", "reducing", "reduction", "lowered", "lower", "lowers", "cut", "cuts",
             "fell", "falls", "fall", "dropped", "drop", "drops", "declined", "decline", "declines", "decreased",
             "decrease", "decreases", "less", "fewer"},
    "up": {"increased", "increase", "increases", "increasing", "raised", "raise", "raises", "boosted", "boost",
           "rose", "rise", "rises", "grew", "grow", "grows", "climbed", "higher", "gain", "gains", "more"},
}
ACTION_WORDS = {"should", "recommend", "recommended", "recommends", "consider", "must", "advised", "pilot",
                "expand", "adopt", "scale", "prioritise", "prioritize", "invest", "weigh"}
FUNCTION_WORDS = {"the", "a", "an", "of", "by", "for", "in", "on", "to", "and", "or", "with", "is", "are", "was",
                  "were", "be", "been", "has", "have", "had", "that", "this", "it", "its", "their", "as", "at",
                  "from", "should", "while", "than", "who", "which", "not", "can", "will", "would", "also"}
MIN_DISTINCT = 0.7  # distinct-token ratio at and above which an answer is not penalised for repetition
COPY_SPAN = 8  # an answer sharing this many consecutive tokens with its prompt is a copy (scores 0)
MIN_SENTENCE_TOKENS = 4


class Judge(Protocol):
    """Scores (paper, brief) pairs; higher is better."""

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """One overall score per pair."""
        ...


# ---------------------------------------------------------------- text pieces

def tokens(text: str) -> list[str]:
    """Lower-case word tokens (hyphenated words and numbers kept whole)."""
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", text.lower())


def sentences(text: str) -> list[str]:
    """Sentences: split after ``.``, ``!`` or ``?`` followed by white space (a trailing fragment counts)."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def parse_sections(text: str) -> dict[str, str]:
    """``Heading: text`` sections of a brief (text lower-cased; an absent heading is absent)."""
    out = {}
    for m in re.finditer(r"(?:^|\n)([A-Z][a-z]+):(.*?)(?=\n[A-Z][a-z]+:|\Z)", text, flags=re.S):
        out[m.group(1)] = " ".join(m.group(2).split()).lower()
    return out


def clauses(text: str) -> list[str]:
    """Lower-cased clauses: sentences cut at ``;`` and at the conjunctions that join two findings."""
    parts = re.split(r"[.;!?]\s|[.;!?]$|,? while |,? whereas |,? but |, and | and ", text.lower())
    return [p.strip() for p in parts if p and p.strip()]


def numbers_in(text: str) -> list[int]:
    """Every integer written in digits."""
    return [int(x) for x in re.findall(r"(?<![\w.])\d+(?![\w.]\d)", text)]


def directions_in(clause: str, names: Sequence[str] = ()) -> set[str]:
    """Directions ("down"/"up") named by the clause's words, outside the entity ``names`` it contains
    (so "class size reduction" names an intervention, not a direction)."""
    for name in names:
        clause = clause.replace(name.lower(), " ")
    words = set(tokens(clause))
    return {d for d, vocab in DIRECTION_WORDS.items() if words & vocab}


# ---------------------------------------------------------------- form factor (open answers)

def distinct_token_ratio(text: str) -> float:
    """Distinct tokens over tokens (0 for an empty text)."""
    t = tokens(text)
    return len(set(t)) / len(t) if t else 0.0


def parses_as_sentence(sentence: str) -> bool:
    """A sentence: capital or digit first, ``.``/``!``/``?`` last, at least 4 tokens, at least one function
    word, and no content bigram said twice (``young adults are affected by young adults``)."""
    t = tokens(sentence)
    if len(t) < MIN_SENTENCE_TOKENS or not re.match(r"[A-Z0-9]", sentence) or sentence[-1] not in ".!?":
        return False
    if not any(w in FUNCTION_WORDS for w in t):
        return False
    content = [(a, b) for a, b in itertools.pairwise(t) if a not in FUNCTION_WORDS and b not in FUNCTION_WORDS]
    return len(content) == len(set(content))


def copied_span(answer: str, prompt: str, n: int = COPY_SPAN) -> bool:
    """Whether the answer repeats ``n`` consecutive tokens of the prompt."""
    a, p = tokens(answer), tokens(prompt)
    grams = {tuple(p[i:i + n]) for i in range(len(p) - n + 1)}
    return any(tuple(a[i:i + n]) in grams for i in range(len(a) - n + 1))


def form_factor(answer: str, prompt: str) -> float:
    """Form of an open answer in [0, 1]: min(1, distinct-token ratio / 0.7) × share of its sentences that
    parse × (0 if it copies an 8-token span of the prompt, else 1)."""
    sents = sentences(answer)
    if not sents:
        return 0.0
    distinct = min(1.0, distinct_token_ratio(answer) / MIN_DISTINCT)
    parsed = sum(parses_as_sentence(s) for s in sents) / len(sents)
    return distinct * parsed * (0.0 if copied_span(answer, prompt) else 1.0)


# ---------------------------------------------------------------- content against the ground truth

def finding_status(paper: Paper, text: str) -> tuple[int, int, int]:
    """(findings stated correctly, findings reversed, numbers the paper does not state) in ``text``.

    A finding is stated correctly when one clause names its outcome, its direction alone and its number;
    reversed when a clause names its outcome with the opposite direction alone."""
    correct, reversed_ = 0, 0
    cls = clauses(text)
    t = paper.topic
    names = (t.intervention, t.alternative, t.outcome, t.secondary, t.population, t.comparison)
    for f in paper.findings:
        hits = [c for c in cls if f.outcome in c]
        dirs = [directions_in(c, names) for c in hits]
        correct += any(d == {f.direction} and f.value in numbers_in(c) for c, d in zip(hits, dirs, strict=True))
        reversed_ += any(d == {FLIP[f.direction]} for d in dirs)
    unsupported = sum(v not in paper.numbers for v in numbers_in(text))
    return correct, reversed_, unsupported


def section_content(paper: Paper, section: str, text: str) -> float:
    """Content of one brief section (or a one-sentence summary of that aspect) in [0, 1], Sec. 3 rubric:
    coverage of what the section must say, halved for every reversed finding or unsupported number.

    Findings: both findings with direction and number; Context: the population and the intervention;
    Recommendation: the intervention, the population and an action word."""
    low = " ".join(text.lower().split())
    correct, reversed_, unsupported = finding_status(paper, text)
    if section == "Findings":
        coverage = correct / len(paper.findings)
    elif section == "Context":
        coverage = ((paper.population in low) + (paper.intervention in low)) / 2
    elif section == "Recommendation":
        coverage = ((paper.intervention in low) + (paper.population in low) + bool(set(tokens(low)) & ACTION_WORDS)) / 3
    else:
        raise ValueError(f"unknown section {section!r}")
    return float(coverage * 0.5 ** (reversed_ + unsupported))


def open_answer_score(paper: Paper, section: str, answer: str, prompt: str) -> float:
    """Score (0-100) of an open answer, on the answer alone: 100 × content × form factor."""
    return 100.0 * section_content(paper, section, answer) * form_factor(answer, prompt)


def rubric_overall(paper: Paper, brief: str) -> float:
    """The ground-truth rubric (0-5), worst defect first: off-topic 0, a reversed finding 1, an unsupported
    number 2, a copy of the paper or a missing section 3, otherwise 5 (the labelled ceiling)."""
    low = brief.lower()
    if paper.intervention not in low and paper.findings[0].outcome not in low:
        return 0.0
    _, reversed_, unsupported = finding_status(paper, brief)
    if reversed_:
        return 1.0
    if unsupported:
        return 2.0
    secs = parse_sections(brief)
    complete = all(len(tokens(secs.get(s, ""))) >= MIN_SENTENCE_TOKENS for s in SECTIONS)
    if copied_span(brief, paper.body) or not complete:
        return 3.0
    return 5.0


class RubricJudge:
    """Deterministic judge that knows the ground truth (a ceiling, not a real judge)."""

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """Overall score of each pair: ``rubric_overall``."""
        return np.array([rubric_overall(p, b) for p, b in zip(papers, briefs, strict=True)])


# ---------------------------------------------------------------- the LM judge

def judge_prompt(paper: Paper, brief: str) -> str:
    """The LM judge's prompt: rubric, source paper, brief, and the cue for a single digit."""
    return f"{RUBRIC}\n\nPaper: {paper.body}\n\nBrief:\n{brief}\n\nAnswer with one digit from 0 to 5. Score:"


def expected_score(score_logits: np.ndarray) -> float:
    """Expected score under the softmax over the score tokens' logits (0..K-1)."""
    z = np.asarray(score_logits, dtype=float)
    p = np.exp(z - z.max())
    p /= p.sum()
    return float(p @ np.arange(len(z)))


def score_token_ids(tokenizer: Any, tokens_: Sequence[str] = SCORE_TOKENS, leading_space: bool = False) -> list[int]:
    """The single token id of each score token: bare as it starts a chat answer, or with a leading space
    (after ``Score:`` in a plain prompt) when the tokenizer joins the space to the digit."""
    ids = []
    for t in tokens_:
        enc = tokenizer(" " + t, add_special_tokens=False)["input_ids"] if leading_space else []
        enc = enc if len(enc) == 1 else tokenizer(t, add_special_tokens=False)["input_ids"]
        if len(enc) != 1:
            raise ValueError(f"score token {t!r} is not a single token")
        ids.append(enc[0])
    return ids


class LMJudge:
    """A causal LM prompted with the rubric; score = expected value over the score tokens' logits."""

    def __init__(self, model: Any, tokenizer: Any, max_tokens: int = 768, use_chat: bool = True) -> None:
        self.model, self.tokenizer, self.max_tokens, self.use_chat = model, tokenizer, max_tokens, use_chat
        self.chat = use_chat and bool(getattr(tokenizer, "chat_template", None))
        self.ids = score_token_ids(tokenizer, leading_space=not self.chat)
        # a plain prompt ends "Score:"; a tokenizer that writes " 3" as a space token then "3" gets the space in
        # the prompt, so the digit is the next token
        spaced = [tokenizer(" " + t, add_special_tokens=False)["input_ids"] for t in SCORE_TOKENS]
        self.trailing_space = not self.chat and all(len(x) == 2 and x[0] == spaced[0][0] for x in spaced)

    def encode(self, prompt: str) -> list[int]:
        """Token ids of the prompt (in the chat template when the tokenizer has one), left-cut to ``max_tokens``."""
        if self.chat:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                      add_generation_prompt=True)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        else:
            ids = self.tokenizer(prompt + (" " if self.trailing_space else ""))["input_ids"]
        return ids[-self.max_tokens:]

    def score(self, papers: Sequence[Paper], briefs: Sequence[str]) -> np.ndarray:
        """Expected score of each pair (one forward pass per prompt, logits of the last position only)."""
        import torch

        out = []
        with torch.inference_mode():
            for p, b in zip(papers, briefs, strict=True):
                ids = torch.tensor([self.encode(judge_prompt(p, b))])
                logits = self.model(input_ids=ids, logits_to_keep=1).logits[0, -1, self.ids]
                out.append(expected_score(logits.float().numpy()))
        return np.array(out)


# ---------------------------------------------------------------- reference metrics and statistics

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


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """Area under the ROC curve: P(a positive scores above a negative) + ½ P(tie) over all pairs
    (the judge's competence gate: gold briefs against off-topic briefs)."""
    pos, neg = np.asarray(positive, float), np.asarray(negative, float)
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float((diff > 0).mean() + 0.5 * (diff == 0).mean())


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


def lm_option_logliks(model: Any, tokenizer: Any, context: str, options: Sequence[str]) -> list[float]:
    """log p(option | context) of each option, summed over the option's tokens: the context runs once and
    its key/value cache is shared by the options (one right-padded batch)."""
    import torch

    if hasattr(model, "get_base_model"):  # a peft wrapper: its LoRA layers live in the base model
        model = model.get_base_model()
    ctx = tokenizer(context)["input_ids"]
    opts = [tokenizer(" " + o, add_special_tokens=False)["input_ids"] for o in options]
    n, width = len(opts), max(len(o) for o in opts)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    with torch.inference_mode():
        first = model(input_ids=torch.tensor([ctx]), use_cache=True)
        cache = first.past_key_values
        cache.batch_repeat_interleave(n)
        ids = torch.tensor([o + [pad] * (width - len(o)) for o in opts])
        mask = torch.tensor([[1] * len(ctx) + [1] * len(o) + [0] * (width - len(o)) for o in opts])
        rest = model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=False).logits.float()
        head = torch.log_softmax(first.logits[0, -1].float(), dim=-1)
        logp = torch.log_softmax(rest, dim=-1)
    out = []
    for k, o in enumerate(opts):
        total = float(head[o[0]])
        total += sum(float(logp[k, t - 1, o[t]]) for t in range(1, len(o)))
        out.append(total)
    return out
