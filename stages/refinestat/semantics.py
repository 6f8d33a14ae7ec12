"""Statement constraints on generated PyMC programs (RefineStat §3.1), as an exact prefix checker.

A statement has one form: ``name = pm.Dist("name", param=expr, ..., observed=data)`` (keyword arguments
only, ``observed=`` last and only in the likelihood) or ``name = pm.Deterministic("name", expr)``, with
single spaces around ``=`` and binary operators, and expressions built from numbers, names, ``(...)``,
``+ - * / **`` and ``pm.math.exp / log / sigmoid(...)``. :func:`check_prefix` reads any prefix of a line
and says whether it is ``dead`` (no completion is a valid statement), ``open`` (some completion is) or
``complete`` (it is a valid statement). Because the form is this small the answer is exact, so the
generator can mask every next token that would make the line dead (constrained decoding, §3.1).

Two checkers share the form. ``semantic=False`` (the syntax-only baseline) checks the form alone: any
callable, any keyword (not repeated), any name. ``semantic=True`` (RefineStat) adds the paper's semantic
constraints: the distribution exists; the name argument is the variable's name; the parameter names are
the distribution's and form one of its parametrisations; every name is declared before use and a name is
not declared twice; literal parameter values lie in their domain (and Uniform's bounds are ordered); types
fit (a positive parameter gets an expression that is positive by construction); the likelihood observes
the task's data with a distribution whose support holds it, once the program has a random variable to infer.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

REAL, POSITIVE, COUNT = "real", "positive", "count"
ANY = "any"  # an expression context that accepts every expression


@dataclass(frozen=True)
class Dist:
    """A distribution: the domain of each parameter, the support of its values, and its parametrisations
    (each: the parameters it allows, and those of them without a default)."""

    domains: dict[str, str]
    support: str
    parametrisations: tuple[tuple[frozenset[str], frozenset[str]], ...]


def _p(allowed: str, required: str = "") -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(allowed.split()), frozenset(required.split())


DISTRIBUTIONS: dict[str, Dist] = {
    "Normal": Dist({"mu": REAL, "sigma": POSITIVE, "tau": POSITIVE}, REAL, (_p("mu sigma"), _p("mu tau"))),
    "StudentT": Dist({"nu": POSITIVE, "mu": REAL, "sigma": POSITIVE}, REAL, (_p("nu mu sigma", "nu"),)),
    "Cauchy": Dist({"alpha": REAL, "beta": POSITIVE}, REAL, (_p("alpha beta", "alpha beta"),)),
    "Laplace": Dist({"mu": REAL, "b": POSITIVE}, REAL, (_p("mu b", "mu b"),)),
    "Logistic": Dist({"mu": REAL, "s": POSITIVE}, REAL, (_p("mu s"),)),
    "Uniform": Dist({"lower": REAL, "upper": REAL}, REAL, (_p("lower upper"),)),
    "HalfNormal": Dist({"sigma": POSITIVE, "tau": POSITIVE}, POSITIVE, (_p("sigma"), _p("tau"))),
    "HalfCauchy": Dist({"beta": POSITIVE}, POSITIVE, (_p("beta", "beta"),)),
    "HalfStudentT": Dist({"nu": POSITIVE, "sigma": POSITIVE}, POSITIVE, (_p("nu sigma"),)),
    "Exponential": Dist({"lam": POSITIVE, "scale": POSITIVE}, POSITIVE, (_p("lam", "lam"), _p("scale", "scale"))),
    "Gamma": Dist({"alpha": POSITIVE, "beta": POSITIVE, "mu": POSITIVE, "sigma": POSITIVE}, POSITIVE,
                  (_p("alpha beta", "alpha beta"), _p("mu sigma", "mu sigma"))),
    "InverseGamma": Dist({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE, (_p("alpha beta", "alpha beta"),)),
    "LogNormal": Dist({"mu": REAL, "sigma": POSITIVE}, POSITIVE, (_p("mu sigma"),)),
    "Weibull": Dist({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE, (_p("alpha beta", "alpha beta"),)),
    "Poisson": Dist({"mu": POSITIVE}, COUNT, (_p("mu", "mu"),)),
    "NegativeBinomial": Dist({"mu": POSITIVE, "alpha": POSITIVE}, COUNT, (_p("mu alpha", "mu alpha"),)),
}
DETERMINISTIC = "Deterministic"
FUNCTIONS = {"pm.math.exp": POSITIVE, "pm.math.sigmoid": POSITIVE, "pm.math.log": REAL}
BUILTINS = frozenset({"pm", "len", "np", "model"})
# which likelihood supports hold which data: real data need a real support, positive data also allow a
# positive support, counts every support
FITS = {REAL: {REAL}, POSITIVE: {REAL, POSITIVE}, COUNT: {COUNT, REAL, POSITIVE}}
NUMBER_PREFIX = re.compile(r"-?((0|[1-9]\d*)(\.\d*)?)?")
NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?")
IDENT_START = re.compile(r"[A-Za-z_]")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")


@dataclass(frozen=True)
class Context:
    """What a statement may use: the declared names and their kinds (data variables and earlier statements),
    the task's data variables, its observed variable and kind; which checker; whether this statement must be
    the likelihood (the program's last allowed statement); the text every line starts with."""

    declared: Mapping[str, str]
    data: frozenset[str]
    observed: str
    data_kind: str
    semantic: bool = True
    require_likelihood: bool = False
    indent: str = ""
    has_free: bool = True  # a random variable is declared already (a likelihood needs a free variable to infer)


@dataclass(frozen=True)
class Check:
    """The checker's answer for one prefix: ``dead`` (with the reason), ``open`` or ``complete``; for a complete
    statement its target, callable, the kind of its values and whether it is the likelihood."""

    status: str
    reason: str | None = None
    target: str | None = None
    func: str | None = None
    kind: str | None = None
    likelihood: bool = False


class _Dead(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _More(Exception):
    """The prefix ended inside a construct that some completion makes valid."""


def number_range(text: str) -> tuple[float, float]:
    """Infimum and supremum of the numbers whose literal starts with ``text`` (a prefix of -?(0|[1-9]d*)(.d+)?)."""
    if text == "":
        return -math.inf, math.inf  # the literal may still start with "-"
    neg = text.startswith("-")
    body = text[1:] if neg else text
    if body == "":
        lo, hi = 0.0, math.inf
    elif "." not in body:
        lo, hi = (0.0, 1.0) if body == "0" else (float(body), math.inf)
    else:
        whole, frac = body.split(".")
        lo = float(f"{whole}.{frac or '0'}")
        hi = lo + 10.0 ** -len(frac)
    return (-hi, -lo) if neg else (lo, hi)


@dataclass
class _Parser:
    text: str
    ctx: Context
    i: int = 0
    given: set[str] = field(default_factory=set)
    bounds: dict[str, float] = field(default_factory=dict)

    # ---- characters ----
    def peek(self) -> str:
        if self.i >= len(self.text):
            raise _More
        return self.text[self.i]

    def expect(self, literal: str, why: str) -> None:
        for ch in literal:
            if self.peek() != ch:
                raise _Dead(why)
            self.i += 1

    def word(self, dotted: bool = False) -> tuple[str, bool]:
        """An identifier (with dots when ``dotted``) and whether the text ended inside it."""
        start = self.i
        while self.i < len(self.text) and (IDENT_CHAR.match(self.text[self.i])
                                           or (dotted and self.text[self.i] == ".")):
            self.i += 1
        w = self.text[start:self.i]
        if w and not IDENT_START.match(w[0]):
            raise _Dead(f"form: '{w}' is not a name")
        return w, self.i >= len(self.text)

    @staticmethod
    def choose(w: str, at_end: bool, options: set[str] | dict[str, str], why: str) -> str:
        """A word that must be one of ``options``: a partial one must still be able to become one."""
        if at_end:
            if any(o.startswith(w) for o in options):
                raise _More
            raise _Dead(why)
        if w not in options:
            raise _Dead(why)
        return w

    # ---- the statement ----
    def statement(self) -> Check:
        ctx = self.ctx
        self.expect(ctx.indent, "form: the statement starts at the indent")
        if self.peek() == " ":
            raise _Dead("form: extra indentation")
        target, at_end = self.word()
        if not target:
            raise _Dead("form: a statement starts with the variable's name")
        if at_end:
            raise _More  # a name can always grow into a fresh one
        if keyword.iskeyword(target):
            raise _Dead(f"form: '{target}' is a Python keyword")
        if ctx.semantic and (target in ctx.declared or target in BUILTINS):
            raise _Dead(f"declaration: '{target}' is already declared")
        self.expect(" = pm.", "form: the value is a pm.<Distribution>(...) call")
        func = self.callable()
        self.expect('("', "form: the first argument is the variable's name in double quotes")
        if ctx.semantic:
            self.expect(f'{target}"', f"parameters: the first argument must be the name '{target}'")
        else:
            name, _ = self.word()
            self.expect('"', "form: the name argument is one word in double quotes")
            del name
        if func == DETERMINISTIC:
            self.expect(", ", "form: pm.Deterministic takes the name and one expression")
            kind = self.expression(ANY)
            self.expect(")", "parameters: pm.Deterministic takes the name and one expression")
            self.end()
            return Check("complete", target=target, func=func, kind=kind)
        likelihood = self.arguments(func)
        self.end()
        kind = DISTRIBUTIONS[func].support if func in DISTRIBUTIONS else None
        return Check("complete", target=target, func=func, kind=kind, likelihood=likelihood)

    def callable(self) -> str:
        func, at_end = self.word()
        if not self.ctx.semantic:
            if at_end or not func:
                raise _More if at_end else _Dead("form: pm.<name>")
            return func
        options = {d for d, spec in DISTRIBUTIONS.items() if not self.ctx.require_likelihood
                   or spec.support in FITS[self.ctx.data_kind]}
        if not self.ctx.require_likelihood:
            options.add(DETERMINISTIC)
        return self.choose(func, at_end, options, f"distribution: pm.{func} does not exist"
                           + (" with a support that holds the data" if self.ctx.require_likelihood else ""))

    def end(self) -> None:
        if self.i < len(self.text):
            raise _Dead("form: text after the statement")

    # ---- keyword arguments ----
    def closable(self, func: str) -> bool:
        params = self.given - {"shape", "observed"}
        return any(req <= params <= allowed for allowed, req in DISTRIBUTIONS[func].parametrisations)

    def keywords(self, func: str) -> set[str]:
        """The keywords the next argument may take (semantic checker)."""
        spec = DISTRIBUTIONS[func]
        params = self.given - {"shape", "observed"}
        ok = {p for p in spec.domains if p not in self.given
              and any(params | {p} <= allowed for allowed, _ in spec.parametrisations)}
        if "shape" not in self.given:
            ok.add("shape")
        if self.ctx.has_free and spec.support in FITS[self.ctx.data_kind] and any(
                req <= params <= allowed for allowed, req in spec.parametrisations):
            ok.add("observed")
        return ok

    def arguments(self, func: str) -> bool:
        """``(, kw=value)* )``; whether ``observed=`` was given."""
        observed = False
        while True:
            if self.peek() == ")":
                if self.ctx.semantic:
                    if not self.closable(func):
                        raise _Dead(f"parameters: pm.{func} needs more parameters")
                    if self.ctx.require_likelihood and not observed:
                        raise _Dead("likelihood: the last statement must observe the data")
                self.i += 1
                return observed
            if observed:
                raise _Dead("form: observed= is the last argument")
            self.expect(", ", "form: arguments are separated by ', '")
            kw, at_end = self.word()
            if self.ctx.semantic:
                kw = self.choose(kw, at_end, self.keywords(func), f"parameters: pm.{func} takes no '{kw}' here")
            elif at_end:
                raise _More
            elif not kw or kw in self.given:
                raise _Dead("form: a keyword argument" + (f" '{kw}' repeated" if kw else ""))
            self.expect("=", "form: keyword arguments only, as kw=value")
            self.given.add(kw)
            if kw == "observed":
                observed = True
                if self.ctx.semantic:
                    name, at_end = self.word()
                    self.choose(name, at_end, {self.ctx.observed},
                                f"likelihood: observed= must be the data variable '{self.ctx.observed}'")
                else:
                    self.expression(ANY)
            elif kw == "shape" and self.ctx.semantic:
                self.shape()
            elif self.ctx.semantic and func == "Uniform":
                self.bound(kw)
            else:
                self.expression(DISTRIBUTIONS[func].domains[kw] if self.ctx.semantic else ANY)

    def shape(self) -> None:
        """``shape=len(<data variable>)`` or a positive integer."""
        if self.peek().isdigit():
            start = self.i
            while self.i < len(self.text) and self.text[self.i].isdigit():
                self.i += 1
            if self.text[start] == "0":
                raise _Dead("support: shape is a positive integer")
            return
        self.expect("len(", "form: shape=len(<data>) or a positive integer")
        name, at_end = self.word()
        self.choose(name, at_end, set(self.ctx.data), "declaration: shape=len(<a data variable>)")
        self.expect(")", "form: shape=len(<data>)")

    def bound(self, kw: str) -> None:
        """Uniform's bounds are numbers, lower < upper (a bound checked against the other one once given)."""
        other = {"lower": "upper", "upper": "lower"}[kw]
        lo, hi = self.number(ANY, allow_end=True)
        given = self.bounds.get(other)
        if given is not None and not (hi > given if kw == "upper" else lo < given):
            raise _Dead(f"support: pm.Uniform needs lower < upper ({kw} against {other} = {given:g})")
        if self.i >= len(self.text):
            raise _More
        self.bounds[kw] = lo

    # ---- expressions ----
    def expression(self, need: str) -> str:
        """``atom ( op atom )*`` in a context that needs ``need`` values; returns the expression's kind.

        Positive by construction: no ``-``, and every base of a power (every atom not right of ``**``)
        positive; a positive context refuses the first atom or operator that breaks this."""
        positive = True
        power = False
        while True:
            kind = self.atom(POSITIVE if need == POSITIVE and not power else ANY)
            if not power and kind != POSITIVE:
                positive = False
            if self.i >= len(self.text):
                raise _More
            if self.text[self.i] != " ":
                return POSITIVE if positive else REAL
            self.i += 1
            op = self.peek()
            if op == "*":
                self.i += 1
                if self.peek() == "*":
                    self.i += 1
                    op = "**"
            elif op in "+-/":
                self.i += 1
            else:
                raise _Dead("form: an operator (+ - * / **) between single spaces")
            if op == "-":
                positive = False
                if need == POSITIVE:
                    raise _Dead("types: a positive parameter gets a difference (not positive by construction)")
            self.expect(" ", "form: an operator (+ - * / **) between single spaces")
            power = op == "**"

    def atom(self, need: str) -> str:
        c = self.peek()
        if c == "(":
            self.i += 1
            kind = self.expression(need)
            self.expect(")", "form: unbalanced parenthesis")
            return kind
        if c.isdigit() or c == "-":
            lo, _ = self.number(need)
            return POSITIVE if lo > 0 else REAL
        name, at_end = self.word(dotted=True)
        if not name:
            raise _Dead(f"form: '{c}' cannot start an expression")
        if not self.ctx.semantic:
            if at_end:
                raise _More
            if name.endswith(".") or ".." in name:
                raise _Dead("form: a dotted name")
            if self.peek() == "(":
                self.i += 1
                while True:
                    self.expression(ANY)
                    if self.peek() == ")":
                        self.i += 1
                        return REAL
                    self.expect(", ", "form: call arguments are separated by ', '")
            return REAL
        names = {n: k for n, k in self.ctx.declared.items() if need != POSITIVE or k in (POSITIVE, COUNT)}
        funcs = {f: k for f, k in FUNCTIONS.items() if need != POSITIVE or k == POSITIVE}
        options = {**names, **funcs}
        known = [*self.ctx.declared, *FUNCTIONS]
        why = (f"types: '{name}' is not positive, the parameter needs positive values"
               if any(k.startswith(name) if at_end else k == name for k in known)
               else f"declaration: '{name}' is used before it is declared")
        name = self.choose(name, at_end, options, why)
        if name in FUNCTIONS:
            self.expect("(", f"form: {name}(...)")
            self.expression(ANY)
            self.expect(")", f"form: {name} takes one argument")
            return FUNCTIONS[name]
        return POSITIVE if self.ctx.declared[name] in (POSITIVE, COUNT) else REAL

    def number(self, need: str, allow_end: bool = False) -> tuple[float, float]:
        """A number literal; at the end of the text, the range its completions can take. A positive context
        needs a completion above 0."""
        start = self.i
        while self.i < len(self.text) and (self.text[self.i].isdigit() or self.text[self.i] in "-."):
            if self.text[self.i] == "-" and self.i > start:
                break
            self.i += 1
        lit = self.text[start:self.i]
        if not NUMBER_PREFIX.fullmatch(lit):
            raise _Dead(f"form: '{lit}' is not a number")
        at_end = self.i >= len(self.text)
        if at_end:
            lo, hi = number_range(lit)
        else:
            if not NUMBER.fullmatch(lit):
                raise _Dead(f"form: '{lit}' is not a number")
            lo = hi = float(lit)
        if need == POSITIVE and not hi > 0:
            raise _Dead(f"support: {lit} is not positive, the parameter needs positive values")
        if at_end and not allow_end:
            raise _More
        return lo, hi


def check_prefix(text: str, ctx: Context) -> Check:
    """Whether ``text`` (a prefix of one line, without its newline) is dead, open or a complete valid statement."""
    parser = _Parser(text, ctx)
    try:
        return parser.statement()
    except _More:
        return Check("open")
    except _Dead as dead:
        return Check("dead", dead.reason)


def violation(line: str, ctx: Context) -> str | None:
    """The constraint a whole line violates (None if it is a complete valid statement)."""
    check = check_prefix(line, ctx)
    return None if check.status == "complete" else (check.reason or "form: the statement is incomplete")


def declare(check: Check, declared: Mapping[str, str]) -> dict[str, str]:
    """The declared names after a complete statement, with the kind of its values."""
    assert check.status == "complete" and check.target is not None
    return {**declared, check.target: check.kind or REAL}


def task_context(variables: Mapping[str, str], observed: str, semantic: bool, indent: str = "") -> Context:
    """The checker's context at the start of a task's program."""
    return Context(declared=dict(variables), data=frozenset(variables), observed=observed,
                   data_kind=variables[observed], semantic=semantic, indent=indent)
