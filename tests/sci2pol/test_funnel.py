"""The corpus funnel: linking on hand-made citations, monotone and deterministic counts."""

import itertools

import numpy as np
import pytest

from stages.sci2pol.data import PolicyDocument, gold_brief, make_documents, make_papers
from stages.sci2pol.funnel import (
    Linker,
    Pair,
    bow_cosine,
    filter_pairs,
    link,
    polish,
    polish_text,
    run_funnel,
    screen,
    split,
)
from stages.sci2pol.judges import RubricJudge

PAPERS = make_papers("corpus", 12, 0)


def test_linking_exact_fuzzy_and_false_match():
    p = PAPERS[3]
    linker = Linker(PAPERS, min_ratio=0.9)
    assert linker.resolve(p.doi) == p.pid
    assert linker.resolve(p.doi.upper()) == p.pid
    assert linker.resolve(p.title) == p.pid
    assert linker.resolve(p.title.upper() + ".") == p.pid
    typo = p.title.replace("Effects", "Efects").replace("among", "amnog")
    assert linker.resolve(typo) == p.pid
    assert linker.resolve("Effects of something else entirely on nothing") is None
    assert linker.resolve("10.9999/none") is None


def test_link_drops_documents_citing_too_many_papers():
    docs = [PolicyDocument("d1", "x", [PAPERS[0].doi], [PAPERS[0].pid], PAPERS[0].pid, "gold"),
            PolicyDocument("d2", "y", [p.doi for p in PAPERS[:4]], [p.pid for p in PAPERS[:4]], PAPERS[0].pid, "gold"),
            PolicyDocument("d3", "z", ["unknown title"], [], None, "gold")]
    pairs = link(docs, PAPERS, 0.9, max_cited=3)
    assert [(q.did, q.pid) for q in pairs] == [("d1", PAPERS[0].pid)]


def _pair(text, pid, long=False):
    return Pair("d", pid, text, long, "gold", pid)


def test_screen_judges_short_and_defers_long():
    p = PAPERS[0]
    by_id = {p.pid: p}
    long_text = "\n\n".join(["Annex: filler words here " * 10] * 3 + [gold_brief(p).text])
    pairs = [_pair(gold_brief(p).text, p.pid), _pair(p.text, p.pid), _pair(long_text, p.pid, True)]
    kept = screen(pairs, by_id, RubricJudge().score, 4.5, max_words=120)
    assert [q.text for q in kept] == [pairs[0].text, long_text]
    recovered = split(kept, by_id, RubricJudge().score, 4.5, max_words=120)
    assert [q.text for q in recovered] == [gold_brief(p).text] * 2


def test_filter_keeps_the_similarity_band():
    p, q = PAPERS[0], next(x for x in PAPERS if x.subject != PAPERS[0].subject)
    by_id = {p.pid: p}
    pairs = [_pair(gold_brief(p).text, p.pid), _pair(p.text, p.pid), _pair(gold_brief(q).text, p.pid)]
    kept = filter_pairs(pairs, by_id, bow_cosine, 0.5, 0.95)
    assert [x.text for x in kept] == [gold_brief(p).text]
    assert bow_cosine("a b", "a b") == pytest.approx(1.0)
    assert bow_cosine("a", "b") == 0.0


def test_polish_orders_sections_like_the_exemplars():
    ex = ["Recommendation: r\nContext: c\nFindings: f"] * 3
    assert polish_text("Context:  c1\nFindings: f1\nRecommendation: r1", ["Recommendation", "Context", "Findings"]) \
        == "Recommendation: r1\nContext: c1\nFindings: f1"
    out = polish([_pair("Context: a\nRecommendation: b", "x")], ex)
    assert out[0].text == "Recommendation: b\nContext: a"
    with pytest.raises(ValueError):
        polish([], ex[:2])


def _run(seed):
    papers = make_papers("corpus", 40, seed)
    docs = make_documents(papers, 120, seed)
    ex = [gold_brief(p).text for p in make_papers("corpus", 3, 99)]
    return run_funnel(docs, papers, RubricJudge().score, bow_cosine, ex, min_ratio=0.9, max_cited=3,
                      min_score=4.0, max_words=120, min_sim=0.4, max_sim=0.9)


def test_funnel_is_monotone_deterministic_and_keeps_mostly_true_pairs():
    pairs, counts = _run(0)
    values = list(counts.values())
    assert list(counts) == ["citations", "link", "screen", "split", "filter", "polish"]
    assert all(a >= b for a, b in itertools.pairwise(values))
    assert values[-1] > 0
    again, counts2 = _run(0)
    assert counts2 == counts and [p.text for p in again] == [p.text for p in pairs]
    true_link = np.mean([p.pid == p.source_pid for p in pairs])
    assert true_link == 1.0
    assert all(p.kind not in ("off_topic", "reversed_finding", "unsupported_number", "verbatim_copy") for p in pairs)
