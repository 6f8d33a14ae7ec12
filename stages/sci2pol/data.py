"""Generated papers, policy documents that cite them, and candidate briefs with quality labels.

Every paper has numeric findings with a direction of effect; the gold brief restates
them with context and a recommendation; the degradations change one thing each, so
their quality labels are known (the ground truth the judges are compared against).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stages.core.seeding import rng

# (subject, intervention, outcome, population) — corpus and benchmark pools are disjoint
CORPUS_TOPICS = [
    ("air quality", "low-emission zones", "asthma admissions", "urban children"),
    ("school meals", "free breakfast programmes", "test scores", "primary pupils"),
    ("housing", "rent subsidies", "eviction rates", "low-income tenants"),
    ("transport", "bus lane expansion", "commute times", "city workers"),
    ("water", "lead pipe replacement", "blood lead levels", "infants"),
    ("energy", "home insulation grants", "winter heating costs", "pensioners"),
    ("agriculture", "cover cropping", "soil erosion", "smallholder farms"),
    ("labour", "minimum wage increases", "employment", "teenage workers"),
    ("health", "sugar taxes", "soft drink purchases", "households"),
    ("education", "class size reduction", "reading scores", "early-grade pupils"),
    ("policing", "body-worn cameras", "use-of-force complaints", "patrol officers"),
    ("fisheries", "catch quotas", "fish stock biomass", "coastal fisheries"),
]
BENCH_TOPICS = [
    ("vaccination", "text-message reminders", "vaccination uptake", "young adults"),
    ("wildfire", "prescribed burning", "burned area", "dry forests"),
    ("nutrition", "front-of-pack labels", "calorie purchases", "supermarket shoppers"),
    ("mental health", "school counsellors", "absenteeism", "secondary pupils"),
    ("broadband", "rural broadband subsidies", "small-business revenue", "rural towns"),
    ("heat", "urban tree planting", "summer surface temperature", "dense neighbourhoods"),
    ("tobacco", "plain packaging", "smoking initiation", "adolescents"),
    ("flooding", "wetland restoration", "flood damage costs", "river catchments"),
]
POOLS = {"corpus": CORPUS_TOPICS, "bench": BENCH_TOPICS}
METHODS = {
    "corpus": ["a difference-in-differences study", "a randomised controlled trial", "a panel regression"],
    "bench": ["a regression discontinuity design", "a cluster-randomised trial", "a synthetic control study"],
}
SECTIONS = ("Context", "Findings", "Recommendation")
DEGRADATIONS = ("missing_section", "hallucinated_number", "wrong_direction", "off_topic", "verbatim_copy")
# quality label of each candidate brief (gold 5, each degradation lower; off-topic worst)
QUALITY = {"gold": 5, "missing_section": 3, "verbatim_copy": 3, "hallucinated_number": 2,
           "wrong_direction": 1, "off_topic": 0}


@dataclass(frozen=True)
class Finding:
    """One numeric result: the intervention moved the outcome by ``value`` percent in ``direction``."""

    outcome: str
    value: int
    direction: str  # "reduced" | "increased"


@dataclass(frozen=True)
class Paper:
    """A generated scientific paper."""

    pid: str
    doi: str
    title: str
    pool: str
    subject: str
    intervention: str
    population: str
    method: str
    findings: tuple[Finding, ...]

    @property
    def text(self) -> str:
        """Abstract-like body: problem, methods, findings, implications."""
        res = " ".join(f"The {self.intervention} {f.direction} {f.outcome} by {f.value} percent."
                       for f in self.findings)
        return (f"{self.title}. Problem: {self.subject} policy needs evidence on {self.intervention} "
                f"for {self.population}. Methods: we use {self.method}. Findings: {res} "
                f"Implications: the results inform {self.subject} policy.")


@dataclass(frozen=True)
class Brief:
    """A candidate brief for a paper with its kind (gold or a degradation) and quality label."""

    pid: str
    kind: str
    text: str

    @property
    def quality(self) -> int:
        """Ground-truth quality label (``QUALITY``)."""
        return QUALITY[self.kind]


@dataclass
class PolicyDocument:
    """A policy document with its citations (DOI or title strings) and the ids really cited."""

    did: str
    text: str
    citations: list[str]
    true_links: list[str]
    source_pid: str | None
    kind: str
    is_long: bool = False
    extra: dict = field(default_factory=dict)


def make_papers(pool: str, n: int, seed: int) -> list[Paper]:
    """``n`` papers on the pool's topics (two findings each; titles unique by index)."""
    g = rng(seed, "papers", pool)
    topics, methods = POOLS[pool], METHODS[pool]
    papers = []
    for i in range(n):
        subject, intervention, outcome, population = topics[int(g.integers(len(topics)))]
        d1, d2 = ("reduced", "increased") if g.random() < 0.5 else ("increased", "reduced")
        findings = (Finding(outcome, int(g.integers(5, 60)), d1),
                    Finding(f"{subject} spending", int(g.integers(5, 60)), d2))
        title = f"Effects of {intervention} on {outcome} among {population}: evidence {pool} {i:04d}"
        papers.append(Paper(pid=f"{pool}-{i:04d}", doi=f"10.{5000 + i}/{pool}.{i:04d}", title=title, pool=pool,
                            subject=subject, intervention=intervention, population=population,
                            method=methods[int(g.integers(len(methods)))], findings=findings))
    return papers


def _sections(p: Paper, findings: tuple[Finding, ...] | None = None) -> dict[str, str]:
    fs = findings if findings is not None else p.findings
    return {
        "Context": f"{p.population.capitalize()} are affected by {p.subject} policy; a study using "
                   f"{p.method} examined {p.intervention}.",
        "Findings": " ".join(f"{p.intervention.capitalize()} {f.direction} {f.outcome} by {f.value} percent."
                             for f in fs),
        "Recommendation": f"Policymakers should weigh {p.intervention} for {p.population}, "
                          f"given the measured effects.",
    }


def render(sections: dict[str, str]) -> str:
    """Sections as ``Heading: text`` paragraphs."""
    return "\n".join(f"{k}: {v}" for k, v in sections.items())


def gold_brief(p: Paper) -> Brief:
    """The faithful brief: context, every finding with its number and direction, a recommendation."""
    return Brief(p.pid, "gold", render(_sections(p)))


def degrade(p: Paper, kind: str, other: Paper, g: np.random.Generator) -> Brief:
    """The gold brief with one controlled defect (``DEGRADATIONS``); ``other`` supplies off-topic text."""
    if kind == "missing_section":
        s = _sections(p)
        del s[SECTIONS[int(g.integers(0, 2)) * 2]]  # drop Context or Recommendation
        return Brief(p.pid, kind, render(s))
    if kind == "hallucinated_number":
        f0 = p.findings[0]
        shift = int(g.integers(7, 30))
        wrong = Finding(f0.outcome, f0.value + shift, f0.direction)
        return Brief(p.pid, kind, render(_sections(p, (wrong, *p.findings[1:]))))
    if kind == "wrong_direction":
        flip = {"reduced": "increased", "increased": "reduced"}
        fs = tuple(Finding(f.outcome, f.value, flip[f.direction]) for f in p.findings)
        return Brief(p.pid, kind, render(_sections(p, fs)))
    if kind == "off_topic":
        return Brief(p.pid, kind, render(_sections(other)))
    if kind == "verbatim_copy":
        return Brief(p.pid, kind, p.text)
    raise ValueError(f"unknown degradation {kind!r}")


def candidate_briefs(papers: list[Paper], seed: int) -> list[Brief]:
    """For every paper: the gold brief and one brief per degradation."""
    g = rng(seed, "briefs")
    out = []
    for i, p in enumerate(papers):
        other = papers[(i + 1 + int(g.integers(len(papers) - 1))) % len(papers)] if len(papers) > 1 else p
        if other.subject == p.subject:
            other = next((q for q in papers if q.subject != p.subject), other)
        out.append(gold_brief(p))
        out.extend(degrade(p, k, other, g) for k in DEGRADATIONS)
    return out


def perturb_title(title: str, g: np.random.Generator, n_edits: int = 2) -> str:
    """A citation with typos: ``n_edits`` random character substitutions (fuzzy matching must recover it)."""
    chars = list(title)
    for _ in range(n_edits):
        i = int(g.integers(len(chars)))
        chars[i] = "abcdefghijklmnopqrstuvwxyz"[int(g.integers(26))]
    return "".join(chars)


def make_documents(papers: list[Paper], n_docs: int, seed: int, p_bad: float = 0.3, p_long: float = 0.2,
                   p_many: float = 0.15, p_false: float = 0.3) -> list[PolicyDocument]:
    """Policy documents citing corpus papers (by DOI, exact title or a typo'd title), with known links.

    A fraction ``p_bad`` carries a degraded brief (the screen should drop it), ``p_long`` is a long
    document whose brief sits among unrelated paragraphs (split recovers it), ``p_many`` cites more than
    three papers (link drops it) and ``p_false`` adds a citation to a paper outside the pool (must not link).
    """
    g = rng(seed, "documents")
    docs = []
    for i in range(n_docs):
        src = papers[int(g.integers(len(papers)))]
        n_cite = int(g.integers(4, 7)) if g.random() < p_many else int(g.integers(1, 3))
        others = [papers[int(j)] for j in g.choice(len(papers), size=min(n_cite, len(papers)), replace=False)]
        cited = [src, *[q for q in others if q.pid != src.pid][:n_cite - 1]]
        citations = []
        for q in cited:
            r = g.random()
            citations.append(q.doi if r < 0.4 else q.title if r < 0.7 else perturb_title(q.title, g))
        if g.random() < p_false:
            citations.append(f"Unrelated evidence on {src.subject} outcomes in other settings {i:04d}")
        other = papers[(papers.index(src) + 1) % len(papers)]
        kind = str(g.choice(list(DEGRADATIONS))) if g.random() < p_bad else "gold"
        brief = gold_brief(src) if kind == "gold" else degrade(src, kind, other, g)
        is_long = bool(g.random() < p_long)
        text = brief.text
        if is_long:
            filler = [f"Annex {k}: procedural notes on committee meetings, budgets and staffing schedules "
                      f"for the year {2000 + k}." for k in range(int(g.integers(8, 14)))]
            cut = int(g.integers(len(filler)))
            text = "\n\n".join([*filler[:cut], brief.text, *filler[cut:]])
        docs.append(PolicyDocument(did=f"doc-{i:05d}", text=text, citations=citations,
                                   true_links=[q.pid for q in cited], source_pid=src.pid, kind=kind,
                                   is_long=is_long))
    return docs
