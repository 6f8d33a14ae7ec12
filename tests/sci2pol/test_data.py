"""The generator: disjoint pools, every entity and number named once, defects in several wordings."""

import re

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
    reference_brief,
    render,
    sections,
)


def _count(text, phrase):
    return len(re.findall(rf"(?<![\w-]){re.escape(phrase.lower())}(?![\w-])", text.lower()))


def test_pools_are_disjoint():
    assert not {t.subject for t in CORPUS_TOPICS} & {t.subject for t in BENCH_TOPICS}
    assert not {t.intervention for t in CORPUS_TOPICS} & {t.intervention for t in BENCH_TOPICS}
    corpus, bench = make_papers("corpus", 30, 0), make_papers("bench", 30, 0)
    assert not {p.title for p in corpus} & {p.title for p in bench}
    assert not {p.method for p in corpus} & {p.method for p in bench}


def test_a_paper_names_each_entity_and_number_once_and_never_its_policy_area():
    for p in make_papers("bench", 40, 3):
        t = p.topic
        for phrase in (t.intervention, t.alternative, t.outcome, t.secondary, t.population, t.comparison,
                       p.method, *p.other_methods):
            assert _count(p.body, phrase) == 1, (phrase, p.body)
        assert len(p.numbers) == 4 and sorted(int(x) for x in re.findall(r"\d+", p.body)) == sorted(p.numbers)
        assert all(_count(p.body, x.subject) == 0 for x in BENCH_TOPICS)
        assert p.findings[0].direction != p.findings[1].direction


def test_generator_is_deterministic():
    assert make_papers("corpus", 10, 3) == make_papers("corpus", 10, 3)
    assert make_papers("corpus", 10, 3) != make_papers("corpus", 10, 4)
    a = make_documents(make_papers("corpus", 10, 0), 20, 1)
    b = make_documents(make_papers("corpus", 10, 0), 20, 1)
    assert [d.text for d in a] == [d.text for d in b]
    p = make_papers("bench", 1, 0)[0]
    assert gold_brief(p).text == gold_brief(p).text


def test_every_paper_gets_gold_and_each_defect_with_lower_label():
    papers = make_papers("bench", 5, 0)
    briefs = candidate_briefs(papers, 0)
    assert len(briefs) == 5 * (1 + len(DEGRADATIONS))
    assert all(QUALITY[k] < QUALITY["gold"] for k in DEGRADATIONS)
    assert {b.kind for b in briefs} == {"gold", *DEGRADATIONS}


def test_sections_and_defects_come_in_several_wordings():
    p, other = make_papers("bench", 2, 0)
    g = rng(0, "t")
    golds = {render(sections(p, g)) for _ in range(40)}
    assert len(golds) >= 10
    for kind in DEGRADATIONS:
        texts = {degrade(p, kind, other, g).text for _ in range(40)}
        assert len(texts) >= 2, kind
    assert reference_brief(p, 0) != reference_brief(p, 1)


def test_defects_are_visible_from_the_paper():
    p, other = make_papers("bench", 2, 0)
    g = rng(1, "t")
    for _ in range(20):
        nums = {int(x) for x in re.findall(r"\d+", degrade(p, "unsupported_number", other, g).text)}
        assert nums - p.numbers  # a number the paper does not state
        assert p.intervention not in degrade(p, "off_topic", other, g).text.lower()
        missing = degrade(p, "missing_section", other, g).text
        assert missing.count("\n") < 2 or any(x in missing for x in ("(not provided)", "To be completed.", "—"))
    assert degrade(p, "verbatim_copy", other, rng(0, "c")).text.replace("\n", " ")[:40].lower() in p.body.lower() or \
        "policymakers lack evidence" in degrade(p, "verbatim_copy", other, rng(0, "c")).text


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
