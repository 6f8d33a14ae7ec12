"""Statement-level constraints on generated PyMC programs (RefineStat §3.1, "semantic constraints").

Syntax: a statement parses as one Python statement. Semantics (checked without running anything):
the distribution exists, its parameter names are right, every name is declared before use, literal
parameter values lie in the parameter's domain, and types fit (a positive parameter is not given a
real-valued variable; the likelihood's support holds the observed data). A violating statement is
resampled on its own by the generator.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

REAL, POSITIVE, UNIT, COUNT = "real", "positive", "unit", "count"

# distribution -> (parameters in positional order with their domain, the support of its values)
DISTRIBUTIONS: dict[str, tuple[dict[str, str], str]] = {
    "Normal": ({"mu": REAL, "sigma": POSITIVE, "tau": POSITIVE}, REAL),
    "StudentT": ({"nu": POSITIVE, "mu": REAL, "sigma": POSITIVE}, REAL),
    "Cauchy": ({"alpha": REAL, "beta": POSITIVE}, REAL),
    "Laplace": ({"mu": REAL, "b": POSITIVE}, REAL),
    "Logistic": ({"mu": REAL, "s": POSITIVE}, REAL),
    "Uniform": ({"lower": REAL, "upper": REAL}, REAL),
    "HalfNormal": ({"sigma": POSITIVE, "tau": POSITIVE}, POSITIVE),
    "HalfCauchy": ({"beta": POSITIVE}, POSITIVE),
    "HalfStudentT": ({"nu": POSITIVE, "sigma": POSITIVE}, POSITIVE),
    "Exponential": ({"lam": POSITIVE, "scale": POSITIVE}, POSITIVE),
    "Gamma": ({"alpha": POSITIVE, "beta": POSITIVE, "mu": POSITIVE, "sigma": POSITIVE}, POSITIVE),
    "InverseGamma": ({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE),
    "LogNormal": ({"mu": REAL, "sigma": POSITIVE}, POSITIVE),
    "Weibull": ({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE),
    "Beta": ({"alpha": POSITIVE, "beta": POSITIVE}, UNIT),
    "Poisson": ({"mu": POSITIVE}, COUNT),
    "NegativeBinomial": ({"mu": POSITIVE, "alpha": POSITIVE}, COUNT),
    "Binomial": ({"n": COUNT, "p": UNIT}, COUNT),
    "Bernoulli": ({"p": UNIT}, COUNT),
}
EXTRA_KEYWORDS = frozenset({"shape", "observed"})
BUILTINS = frozenset({"pm", "len"})
MATH_POSITIVE = frozenset({"exp", "sigmoid", "invlogit", "softplus"})


@dataclass(frozen=True)
class Statement:
    """A parsed ``name = pm.Dist("name", ...)`` statement."""

    target: str
    func: str
    call: ast.Call


def parses(line: str) -> str | None:
    """Syntax constraint: the line is exactly one Python statement (None if it is, else the reason)."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError as err:
        return f"syntax: {err.msg}"
    if len(tree.body) != 1:
        return f"syntax: {len(tree.body)} statements on one line"
    return None


def as_statement(line: str) -> tuple[Statement | None, str | None]:
    """The statement's target, the ``pm`` callable and its call, or why it is not of that form."""
    why = parses(line)
    if why:
        return None, why
    node = ast.parse(line.strip()).body[0]
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None, "form: not an assignment to one name"
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "pm"):
        return None, "form: the value is not a pm.<Distribution>(...) call"
    return Statement(node.targets[0].id, call.func.attr, call), None


def check_distribution_exists(st: Statement) -> str | None:
    """Every distribution exists (§3.1): ``pm.<func>`` is a known distribution or ``pm.Deterministic``."""
    if st.func == "Deterministic" or st.func in DISTRIBUTIONS:
        return None
    return f"distribution: pm.{st.func} does not exist"


def check_parameter_names(st: Statement) -> str | None:
    """Parameter names are right (§3.1): the variable's own name first, then only the distribution's parameters."""
    args = st.call.args
    if not args or not (isinstance(args[0], ast.Constant) and args[0].value == st.target):
        return f"parameters: the first argument must be the name '{st.target}'"
    if st.func == "Deterministic":
        if len(args) != 2 or st.call.keywords:
            return "parameters: pm.Deterministic takes the name and one expression"
        return None
    params, _ = DISTRIBUTIONS[st.func]
    if len(args) - 1 > len(params):
        return f"parameters: pm.{st.func} takes at most {len(params)} positional parameters"
    for kw in st.call.keywords:
        if kw.arg is None or (kw.arg not in params and kw.arg not in EXTRA_KEYWORDS):
            return f"parameters: pm.{st.func} has no parameter '{kw.arg}'"
    given = [list(params)[i] for i in range(len(args) - 1)] + [kw.arg for kw in st.call.keywords]
    if len(set(given)) != len(given):
        return f"parameters: a parameter of pm.{st.func} is given twice"
    return None


def _names(node: ast.AST) -> list[str]:
    """Names read by an expression (``pm.math.exp`` counts as ``pm``)."""
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]


def check_declared_before_use(st: Statement, declared: dict[str, str]) -> str | None:
    """Variables are declared before use (§3.1), and a name is declared once."""
    if st.target in declared or st.target in BUILTINS:
        return f"declaration: '{st.target}' is already declared"
    for arg in [*st.call.args[1:], *(kw.value for kw in st.call.keywords)]:
        for name in _names(arg):
            if name not in declared and name not in BUILTINS:
                return f"declaration: '{name}' is used before it is declared"
    return None


def _literal(node: ast.AST) -> float | None:
    """A numeric literal's value (with a unary minus), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def _bound(st: Statement) -> dict[str, ast.AST]:
    """The distribution's parameters as given (positional and keyword)."""
    params = list(DISTRIBUTIONS[st.func][0])
    out = {params[i]: a for i, a in enumerate(st.call.args[1:])}
    out.update({kw.arg: kw.value for kw in st.call.keywords if kw.arg in DISTRIBUTIONS[st.func][0]})
    return out


def in_domain(value: float, domain: str) -> bool:
    """Whether a literal lies in a parameter domain."""
    if domain == POSITIVE:
        return value > 0
    if domain == UNIT:
        return 0 <= value <= 1
    if domain == COUNT:
        return value >= 0 and float(value).is_integer()
    return True


def check_support(st: Statement) -> str | None:
    """Parameter values lie in the distribution's support (§3.1): literal values checked against their domain."""
    if st.func == "Deterministic":
        return None
    for name, node in _bound(st).items():
        value = _literal(node)
        if value is not None and not in_domain(value, DISTRIBUTIONS[st.func][0][name]):
            return f"support: pm.{st.func} parameter {name}={value:g} is outside its domain"
    lo, hi = (_literal(_bound(st)[k]) if k in _bound(st) else None for k in ("lower", "upper"))
    if lo is not None and hi is not None and not lo < hi:
        return f"support: pm.{st.func} needs lower < upper, got {lo:g} and {hi:g}"
    return None


def expression_kind(node: ast.AST, declared: dict[str, str]) -> str:
    """The values an expression can take (positive or real), from its variables' supports."""
    value = _literal(node)
    if value is not None:
        return POSITIVE if value > 0 else REAL
    if isinstance(node, ast.Name):
        kind = declared.get(node.id, REAL)
        return POSITIVE if kind in (POSITIVE, COUNT) and node.id in declared else (UNIT if kind == UNIT else REAL)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MATH_POSITIVE:
        return POSITIVE
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Add | ast.Div | ast.Pow):
        left, right = expression_kind(node.left, declared), expression_kind(node.right, declared)
        if isinstance(node.op, ast.Pow) and left in (POSITIVE, UNIT):
            return POSITIVE
        if left in (POSITIVE, UNIT) and right in (POSITIVE, UNIT):
            return POSITIVE
    return REAL


def check_types(st: Statement, declared: dict[str, str]) -> str | None:
    """Types fit (§3.1): a positive or unit-interval parameter is not given a real-valued expression."""
    if st.func == "Deterministic":
        return None
    for name, node in _bound(st).items():
        domain = DISTRIBUTIONS[st.func][0][name]
        if domain in (POSITIVE, UNIT, COUNT) and _literal(node) is None \
                and expression_kind(node, declared) == REAL:
            return f"types: pm.{st.func} parameter {name} needs {domain} values, got a real-valued expression"
    return None


def check_likelihood(st: Statement, observed: str, data_kind: str, is_last: bool) -> str | None:
    """The likelihood observes the task's data with a distribution whose support holds it."""
    obs = [kw.value for kw in st.call.keywords if kw.arg == "observed"]
    if not obs:
        return None
    if not (isinstance(obs[0], ast.Name) and obs[0].id == observed):
        return f"likelihood: observed= must be the data variable '{observed}'"
    if not is_last:
        return "likelihood: only one likelihood statement"
    support = DISTRIBUTIONS.get(st.func, (None, None))[1]
    fits = {REAL: {REAL}, POSITIVE: {REAL, POSITIVE}, COUNT: {COUNT, REAL, POSITIVE}, UNIT: {UNIT, REAL}}
    if support is None or support not in fits[data_kind]:
        return f"likelihood: pm.{st.func} has {support} support, the data are {data_kind}"
    return None


def semantic_violation(line: str, declared: dict[str, str], observed: str, data_kind: str) -> str | None:
    """The first constraint a statement violates (syntax, then the semantic checks in order), or None."""
    st, why = as_statement(line)
    if st is None:
        return why
    for check in (check_distribution_exists, check_parameter_names):
        why = check(st)
        if why:
            return why
    why = check_declared_before_use(st, declared) or check_support(st) or check_types(st, declared)
    if why:
        return why
    return check_likelihood(st, observed, data_kind, is_last=True)


def declare(line: str, declared: dict[str, str]) -> dict[str, str]:
    """The declared names after a statement that passed the checks, with the support of its values."""
    st, _ = as_statement(line)
    assert st is not None
    if st.func == "Deterministic":
        kind = expression_kind(st.call.args[1], declared)
    else:
        kind = DISTRIBUTIONS[st.func][1]
    return {**declared, st.target: kind}


def is_likelihood(line: str) -> bool:
    """Whether a statement observes data (the program's last statement)."""
    st, _ = as_statement(line)
    return st is not None and any(kw.arg == "observed" for kw in st.call.keywords)


_TARGET = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)\s*(.*)", re.S)
_CALL = re.compile(r"pm\.(\w+)\s*\((.*)", re.S)


def prefix_violation(partial: str, declared: dict[str, str]) -> str | None:
    """A violation already certain from the start of a statement (the target, the callable, the name argument),
    so the generator can stop sampling the line at the first violating token (§3.1, constrained decoding)."""
    m = _TARGET.match(partial)
    if m is None:
        head = partial.strip()
        return None if re.fullmatch(r"[A-Za-z_]\w*\s*", head) or not head else "form: not an assignment"
    target, rest = m.group(1), m.group(2)
    if target in declared or target in BUILTINS:
        return f"declaration: '{target}' is already declared"
    if not rest.startswith("pm.") and not "pm.".startswith(rest):
        return "form: the value is not a pm.<Distribution>(...) call"
    call = _CALL.match(rest)
    if call is None:
        return None
    func, args = call.group(1), call.group(2)
    if func != "Deterministic" and func not in DISTRIBUTIONS:
        return f"distribution: pm.{func} does not exist"
    name = f'"{target}"'
    if not (args.startswith(name) or name.startswith(args)):
        return f"parameters: the first argument must be the name '{target}'"
    return _argument_prefix_violation(func, args[len(name):], declared)


_WORD = re.compile(r"(?<![\w.\"'])([A-Za-z_]\w*)(?=\s*([^\w\s]|$))")


def _argument_prefix_violation(func: str, args: str, declared: dict[str, str]) -> str | None:
    """Completed words of the arguments so far: keywords must be the distribution's, names declared."""
    for m in _WORD.finditer(args):
        word, after = m.group(1), args[m.end():].lstrip()
        if not after:
            continue  # the word may still grow
        if after.startswith("=") and not after.startswith("=="):
            if func != "Deterministic" and word not in DISTRIBUTIONS[func][0] and word not in EXTRA_KEYWORDS:
                return f"parameters: pm.{func} has no parameter '{word}'"
        elif word not in declared and word not in BUILTINS:
            return f"declaration: '{word}' is used before it is declared"
    return None
