"""Generated papers, policy documents that cite them, and candidate briefs with quality labels.

A paper states four numbers (follow-up months, the primary and the secondary finding, and the
change in a comparison group) and names every distractor a choice item offers exactly once
(the comparison arm, the comparison group, the two designs not used, the secondary outcome),
so no option can be picked by spotting it in the paper. Brief sections and defects are each
written in several wordings (templates drawn per brief), and every defect can be seen from
the brief and the paper alone, without the gold brief: an unsupported number, a reversed
finding, a missing section, an off-topic brief, a copy of the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stages.core.seeding import rng


@dataclass(frozen=True)
class Topic:
    """A study topic: the treated intervention and its comparison arm, two outcomes, two groups.

    ``subject`` (the policy area) shares no word with the other fields, so a model must infer it."""

    subject: str
    intervention: str
    alternative: str
    outcome: str
    secondary: str
    population: str
    comparison: str


CORPUS_TOPICS = [
    Topic("air quality", "low-emission zones", "congestion charges", "asthma admissions", "retail footfall",
          "urban children", "suburban adults"),
    Topic("school meals", "free breakfast programmes", "lunch vouchers", "test scores", "late arrivals",
          "primary pupils", "nursery children"),
    Topic("housing", "rent subsidies", "mortgage guarantees", "eviction rates", "household moves",
          "low-income tenants", "first-time buyers"),
    Topic("transport", "bus lane expansion", "cycle lane expansion", "commute times", "car ownership",
          "city workers", "rural commuters"),
    Topic("drinking water", "lead pipe replacement", "household filters", "blood lead levels", "clinic visits",
          "infants", "school-age children"),
    Topic("energy", "home insulation grants", "smart meter rollouts", "winter heating costs", "damp complaints",
          "pensioners", "young families"),
    Topic("agriculture", "cover cropping", "reduced tillage", "soil erosion", "fertiliser use",
          "smallholder farms", "commercial estates"),
    Topic("labour markets", "minimum wage increases", "hiring credits", "employment", "staff turnover",
          "teenage workers", "older workers"),
    Topic("food policy", "sugar taxes", "advertising limits", "soft drink purchases", "dental treatments",
          "households", "single shoppers"),
    Topic("education", "class size reduction", "teaching assistants", "reading scores", "pupil exclusions",
          "early-grade pupils", "upper-grade pupils"),
]
BENCH_TOPICS = [
    Topic("public health", "text-message reminders", "printed leaflets", "vaccination uptake",
          "clinic waiting times", "young adults", "older adults"),
    Topic("wildfire management", "prescribed burning", "mechanical thinning", "burned area",
          "smoke-related hospital visits", "dry forests", "wet forests"),
    Topic("nutrition", "front-of-pack labels", "shelf-edge price tags", "calorie purchases", "store revenue",
          "supermarket shoppers", "convenience-store shoppers"),
    Topic("mental health", "school counsellors", "peer mentoring", "absenteeism", "exam pass rates",
          "secondary pupils", "sixth-form students"),
    Topic("digital infrastructure", "rural broadband subsidies", "mobile hotspot loans", "small-business revenue",
          "youth out-migration", "rural towns", "suburban towns"),
    Topic("climate adaptation", "urban tree planting", "cool roof coatings", "summer surface temperature",
          "electricity demand", "dense neighbourhoods", "low-density estates"),
    Topic("tobacco control", "plain packaging", "retail display bans", "smoking initiation", "cigarette sales",
          "adolescents", "adult smokers"),
    Topic("environmental policy", "wetland restoration", "levee upgrades", "flood damage costs", "farm yields",
          "river catchments", "coastal plains"),
]
POOLS = {"corpus": CORPUS_TOPICS, "bench": BENCH_TOPICS}
METHODS = {
    "corpus": ["a difference-in-differences study", "a randomised controlled trial", "a panel regression"],
    "bench": ["a regression discontinuity design", "a cluster-randomised trial", "a synthetic control study"],
}
SECTIONS = ("Context", "Findings", "Recommendation")
DEGRADATIONS = ("missing_section", "unsupported_number", "reversed_finding", "off_topic", "verbatim_copy")
# quality label of each candidate brief (gold 5, each defect lower; off-topic worst)
QUALITY = {"gold": 5, "missing_section": 3, "verbatim_copy": 3, "unsupported_number": 2,
           "reversed_finding": 1, "off_topic": 0}
# direction words of the briefs; the paper itself says "fell"/"rose", and choice options say "reduced"/"increased"
ACTIVE = {"down": ("reduced", "lowered", "cut"), "up": ("increased", "raised", "boosted")}
INTRANSITIVE = {"down": ("fell", "dropped", "declined"), "up": ("rose", "grew", "climbed")}
ADJECTIVE = {"down": ("lower",), "up": ("higher",)}
NOUN = {"down": ("reduction", "drop", "fall"), "up": ("increase", "rise", "gain")}
FLIP = {"down": "up", "up": "down"}
NUMBER_RANGE = (3, 60)  # every number a paper states is drawn here, without replacement


@dataclass(frozen=True)
class Finding:
    """One numeric result: the treated arm moved ``outcome`` by ``value`` percent, ``direction`` up or down."""

    outcome: str
    value: int
    direction: str  # "down" | "up"


@dataclass(frozen=True)
class Paper:
    """A generated scientific paper (the body names each entity and each number once)."""

    pid: str
    doi: str
    title: str
    pool: str
    topic: Topic
    method: str
    other_methods: tuple[str, str]
    months: int
    findings: tuple[Finding, Finding]  # primary, secondary (opposite directions)
    comparison_value: int
    treated_first: bool  # the order the two arms are named in

    @property
    def subject(self) -> str:
        """The policy area (never written in the body)."""
        return self.topic.subject

    @property
    def intervention(self) -> str:
        """The treated intervention."""
        return self.topic.intervention

    @property
    def population(self) -> str:
        """The treated population."""
        return self.topic.population

    @property
    def numbers(self) -> frozenset[int]:
        """Every number the paper states."""
        return frozenset({self.months, *(f.value for f in self.findings), self.comparison_value})

    @property
    def body(self) -> str:
        """Problem, methods, findings, implications (what prompts and judges read)."""
        t, (f1, f2) = self.topic, self.findings
        arms = (f"assigning {t.intervention} to the treated arm and {t.alternative} to the comparison arm"
                if self.treated_first else
                f"assigning {t.alternative} to the comparison arm and {t.intervention} to the treated arm")
        m1, m2 = self.other_methods
        return (f"Problem: policymakers lack evidence for {t.population}. "
                f"Methods: we use {self.method} rather than {m1} or {m2}, {arms}, over {self.months} months. "
                f"Findings: in the treated arm {t.outcome} {INTRANSITIVE[f1.direction][0]} by {f1.value} percent, "
                f"while {t.secondary} {INTRANSITIVE[f2.direction][0]} by {f2.value} percent. "
                f"Among {t.comparison}, who were not eligible, the primary outcome changed by "
                f"{self.comparison_value} percent. "
                f"Implications: the results bear on whether the programme should be expanded.")

    @property
    def text(self) -> str:
        """Title and body."""
        return f"{self.title}. {self.body}"


@dataclass(frozen=True)
class Brief:
    """A candidate brief for a paper with its kind (gold or a defect) and quality label."""

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
    """``n`` papers on the pool's topics (four distinct numbers each; titles unique by index)."""
    g = rng(seed, "papers", pool)
    topics, methods = POOLS[pool], METHODS[pool]
    papers = []
    for i in range(n):
        t = topics[int(g.integers(len(topics)))]
        months, v1, v2, v3 = (int(x) for x in g.choice(np.arange(*NUMBER_RANGE), size=4, replace=False))
        d1 = "down" if g.random() < 0.5 else "up"
        k = int(g.integers(len(methods)))
        others = tuple(m for j, m in enumerate(methods) if j != k)
        title = f"Effects of {t.intervention} on {t.outcome} among {t.population}: evidence {pool} {i:04d}"
        papers.append(Paper(pid=f"{pool}-{i:04d}", doi=f"10.{5000 + i}/{pool}.{i:04d}", title=title, pool=pool,
                            topic=t, method=methods[k], other_methods=(others[0], others[1]), months=months,
                            findings=(Finding(t.outcome, v1, d1), Finding(t.secondary, v2, FLIP[d1])),
                            comparison_value=v3, treated_first=bool(g.random() < 0.5)))
    return papers


def _pick(options: tuple[str, ...] | list[str], g: np.random.Generator) -> str:
    return options[int(g.integers(len(options)))]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def finding_sentence(intervention: str, f: Finding, g: np.random.Generator) -> str:
    """One finding in one of four wordings (active verb, outcome as subject, adjective, noun)."""
    form = int(g.integers(4))
    if form == 0:
        return f"{_cap(intervention)} {_pick(ACTIVE[f.direction], g)} {f.outcome} by {f.value} percent."
    if form == 1:
        return f"{_cap(f.outcome)} {_pick(INTRANSITIVE[f.direction], g)} by {f.value} percent with {intervention}."
    if form == 2:
        return f"With {intervention}, {f.outcome} ended {f.value} percent {ADJECTIVE[f.direction][0]}."
    return f"The study found a {f.value} percent {_pick(NOUN[f.direction], g)} in {f.outcome} with {intervention}."


def context_sentence(p: Paper, g: np.random.Generator) -> str:
    """Who is affected and what was studied, in one of three wordings."""
    form = int(g.integers(3))
    if form == 0:
        return f"{_cap(p.population)} are affected by {p.subject} decisions; {p.method} examined {p.intervention}."
    if form == 1:
        return f"{_cap(p.method)} tested {p.intervention} for {p.population}."
    return f"{_cap(p.intervention)} was evaluated for {p.population} in {p.method}."


def recommendation_sentence(p: Paper, g: np.random.Generator) -> str:
    """An actionable recommendation, in one of three wordings."""
    form = int(g.integers(3))
    if form == 0:
        return f"Policymakers should weigh {p.intervention} for {p.population}, given the measured effects."
    if form == 1:
        return f"Authorities should consider {p.intervention} for {p.population} while monitoring {p.topic.secondary}."
    return f"Decision-makers should pilot {p.intervention} for {p.population} before a wider roll-out."


def sections(p: Paper, g: np.random.Generator, findings: tuple[Finding, ...] | None = None) -> dict[str, str]:
    """The three brief sections, each in a wording drawn from ``g``."""
    fs = p.findings if findings is None else findings
    return {"Context": context_sentence(p, g),
            "Findings": " ".join(finding_sentence(p.intervention, f, g) for f in fs),
            "Recommendation": recommendation_sentence(p, g)}


def render(secs: dict[str, str]) -> str:
    """Sections as ``Heading: text`` lines."""
    return "\n".join(f"{k}: {v}" for k, v in secs.items())


def gold_brief(p: Paper, g: np.random.Generator | None = None) -> Brief:
    """A faithful brief: context, both findings with number and direction, a recommendation.

    Without ``g`` the wording is the paper's own fixed draw (the same text on every call)."""
    return Brief(p.pid, "gold", render(sections(p, g if g is not None else rng(0, "gold", p.pid))))


def unsupported_value(p: Paper, g: np.random.Generator) -> int:
    """A number the paper does not state."""
    free = [v for v in range(*NUMBER_RANGE) if v not in p.numbers]
    return int(free[int(g.integers(len(free)))])


def degrade(p: Paper, kind: str, other: Paper, g: np.random.Generator) -> Brief:
    """A brief with one defect a reader of the paper can detect (``DEGRADATIONS``), in a drawn wording;
    ``other`` (another policy area) supplies the off-topic brief."""
    if kind == "missing_section":
        s = sections(p, g)
        drop = SECTIONS[int(g.integers(len(SECTIONS)))]
        if g.random() < 0.5:
            del s[drop]
        else:
            s[drop] = _pick(("(not provided)", "To be completed.", "—"), g)
        return Brief(p.pid, kind, render(s))
    if kind == "unsupported_number":
        f1, f2 = p.findings
        form = int(g.integers(3))
        if form < 2:  # one finding's number replaced
            fs = (Finding(f1.outcome, unsupported_value(p, g), f1.direction), f2) if form == 0 else \
                 (f1, Finding(f2.outcome, unsupported_value(p, g), f2.direction))
            return Brief(p.pid, kind, render(sections(p, g, fs)))
        s = sections(p, g)  # an invented extra result
        s["Findings"] += (f" It also {_pick(ACTIVE['down'], g)} programme costs by {unsupported_value(p, g)} percent.")
        return Brief(p.pid, kind, render(s))
    if kind == "reversed_finding":
        f1, f2 = p.findings
        form = int(g.integers(3))
        flip1, flip2 = (True, False) if form == 0 else (False, True) if form == 1 else (True, True)
        fs = (Finding(f1.outcome, f1.value, FLIP[f1.direction] if flip1 else f1.direction),
              Finding(f2.outcome, f2.value, FLIP[f2.direction] if flip2 else f2.direction))
        return Brief(p.pid, kind, render(sections(p, g, fs)))
    if kind == "off_topic":
        return Brief(p.pid, kind, render(sections(other, g)))
    if kind == "verbatim_copy":
        if g.random() < 0.5:
            return Brief(p.pid, kind, p.body)
        parts = p.body.split(" Findings: ")
        findings, implications = parts[1].split(" Implications: ")
        return Brief(p.pid, kind, render({"Context": parts[0].removeprefix("Problem: "), "Findings": findings,
                                          "Recommendation": implications}))
    raise ValueError(f"unknown degradation {kind!r}")


def other_area(papers: list[Paper], i: int, g: np.random.Generator) -> Paper:
    """A paper from another policy area than ``papers[i]`` (itself if there is none)."""
    cands = [q for q in papers if q.subject != papers[i].subject]
    return cands[int(g.integers(len(cands)))] if cands else papers[i]


def candidate_briefs(papers: list[Paper], seed: int) -> list[Brief]:
    """For every paper: a gold brief and one brief per defect, each in its own drawn wording."""
    g = rng(seed, "briefs")
    out = []
    for i, p in enumerate(papers):
        other = other_area(papers, i, g)
        out.append(Brief(p.pid, "gold", render(sections(p, g))))
        out.extend(degrade(p, k, other, g) for k in DEGRADATIONS)
    return out


def reference_brief(p: Paper, seed: int) -> str:
    """The reference a reference-based metric compares with: a gold brief in its own wording draw
    (never the candidate's text, so a gold candidate is not scored against itself)."""
    return render(sections(p, rng(seed, "reference", p.pid)))


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

    A fraction ``p_bad`` carries a defective brief (the screen should drop it), ``p_long`` is a long
    document whose brief sits among unrelated paragraphs (split recovers it), ``p_many`` cites more than
    three papers (link drops it) and ``p_false`` adds a citation to a paper outside the pool (must not link).
    """
    g = rng(seed, "documents")
    docs = []
    for i in range(n_docs):
        src_i = int(g.integers(len(papers)))
        src = papers[src_i]
        n_cite = int(g.integers(4, 7)) if g.random() < p_many else int(g.integers(1, 3))
        others = [papers[int(j)] for j in g.choice(len(papers), size=min(n_cite, len(papers)), replace=False)]
        cited = [src, *[q for q in others if q.pid != src.pid][:n_cite - 1]]
        citations = []
        for q in cited:
            r = g.random()
            citations.append(q.doi if r < 0.4 else q.title if r < 0.7 else perturb_title(q.title, g))
        if g.random() < p_false:
            citations.append(f"Unrelated evidence on {src.subject} outcomes in other settings {i:04d}")
        kind = str(g.choice(list(DEGRADATIONS))) if g.random() < p_bad else "gold"
        brief = (Brief(src.pid, "gold", render(sections(src, g))) if kind == "gold"
                 else degrade(src, kind, other_area(papers, src_i, g), g))
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
