"""The generator: disjoint pools, known quality labels, controlled degradations."""

from stages.core.seeding import rng
from stages.sci2pol.data import (
    BENCH_TOPICS,
    CORPUS_TOPICS,
    DEGRADATIONS,
    QUALITY,
    candidate_briefs,
    degrade,
    gold_brief,
    make_documents,
    make_papers,
)


def test_pools_are_disjoint():
    assert not {t[0] for t in CORPUS_TOPICS} & {t[0] for t in BENCH_TOPICS}
    assert not {t[1] for t in CORPUS_TOPICS} & {t[1] for t in BENCH_TOPICS}
    corpus, bench = make_papers("corpus", 30, 0), make_papers("bench", 30, 0)
    assert not {p.title for p in corpus} & {p.title for p in bench}
    assert not {p.method for p in corpus} & {p.method for p in bench}


def test_generator_is_deterministic():
    assert make_papers("corpus", 10, 3) == make_papers("corpus", 10, 3)
    assert make_papers("corpus", 10, 3) != make_papers("corpus", 10, 4)
    a = make_documents(make_papers("corpus", 10, 0), 20, 1)
    b = make_documents(make_papers("corpus", 10, 0), 20, 1)
    assert [d.text for d in a] == [d.text for d in b]


def test_every_paper_gets_gold_and_each_degradation_with_lower_label():
    papers = make_papers("bench", 5, 0)
    briefs = candidate_briefs(papers, 0)
    assert len(briefs) == 5 * (1 + len(DEGRADATIONS))
    assert all(QUALITY[k] < QUALITY["gold"] for k in DEGRADATIONS)
    assert {b.kind for b in briefs} == {"gold", *DEGRADATIONS}


def test_degradations_change_what_they_say():
    p, other = make_papers("corpus", 2, 0)
    g = rng(0, "t")
    gold = gold_brief(p).text
    f = p.findings[0]
    assert f"by {f.value} percent" in gold
    assert f"by {f.value} percent" not in degrade(p, "hallucinated_number", other, g).text
    flipped = {"reduced": "increased", "increased": "reduced"}[f.direction]
    assert f"{flipped} {f.outcome}" in degrade(p, "wrong_direction", other, g).text
    assert p.intervention not in degrade(p, "off_topic", other, g).text.lower() or p.subject == other.subject
    assert degrade(p, "verbatim_copy", other, g).text == p.text
    missing = degrade(p, "missing_section", other, g).text
    assert missing.count("\n") == gold.count("\n") - 1


def test_documents_know_their_links():
    papers = make_papers("corpus", 20, 0)
    docs = make_documents(papers, 50, 0, p_many=0.5, p_long=0.5)
    ids = {p.pid for p in papers}
    for d in docs:
        assert d.source_pid == d.true_links[0]
        assert set(d.true_links) <= ids
        assert len(d.citations) >= len(d.true_links)
    assert any(len(d.true_links) > 3 for d in docs)
    assert any(d.is_long and "\n\nAnnex" in d.text for d in docs)
    assert not any(not d.is_long and "Annex" in d.text for d in docs)
