"""The exact prefix checker (RefineStat §3.1) on hand-written good and bad statements, every prefix included."""

import math

import pytest

from stages.refinestat.semantics import (
    Context,
    check_prefix,
    declare,
    number_range,
    task_context,
    violation,
)

VARS = {"y": "real", "sigma": "positive"}
SEM = Context(declared={**VARS, "mu": "real", "tau": "positive"}, data=frozenset(VARS), observed="y",
              data_kind="real")
SYN = Context(**{**SEM.__dict__, "semantic": False})

GOOD = [
    'b = pm.Normal("b", mu=mu, sigma=tau)',
    'b = pm.Normal("b")',                                        # Normal has defaults
    'b = pm.Normal("b", mu=0, sigma=1, shape=len(y))',
    'b = pm.Normal("b", mu=-3.5, tau=0.5)',                      # a negative mean is fine
    'b = pm.Normal("b", mu=mu + tau * pm.math.exp(mu), sigma=pm.math.exp(mu - 1))',
    's = pm.HalfCauchy("s", beta=5)',
    'g = pm.Gamma("g", alpha=2, beta=0.5)',
    'u = pm.Uniform("u", lower=-1, upper=1)',
    'u = pm.Uniform("u", upper=2, lower=0.5)',
    'p = pm.Poisson("p", mu=tau * sigma)',
    'p = pm.Normal("p", mu=0, sigma=tau ** mu)',                 # a positive base to any power
    'd = pm.Deterministic("d", mu + tau * (mu - 1))',
    'y_obs = pm.Normal("y_obs", mu=mu, sigma=sigma, observed=y)',
]


@pytest.mark.parametrize("line", GOOD)
def test_good_statements_are_complete_and_every_prefix_open(line):
    for ctx in (SEM, SYN):
        assert check_prefix(line, ctx).status == "complete", (line, check_prefix(line, ctx))
        for k in range(len(line)):
            assert check_prefix(line[:k], ctx).status == "open", (line[:k], check_prefix(line[:k], ctx))


# (line, the shortest dead prefix's length, the reason's kind); the syntax checker accepts each line
BAD = [
    ('a = pm.Gaussian("a")', len('a = pm.Gau'), "distribution"),      # Gamma starts with Ga; Gau is dead
    ('a = pm.Nromal("a")', len('a = pm.Nr'), "distribution"),
    ('a = pm.Normal("b")', len('a = pm.Normal("b'), "parameters"),     # the name must be the variable's
    ('a = pm.Normal("a", sd=1)', len('a = pm.Normal("a", sd'), "parameters"),
    ('a = pm.Normal("a", sigma=1, tau=1)', len('a = pm.Normal("a", sigma=1, t'), "parameters"),
    ('a = pm.Gamma("a", alpha=2)', len('a = pm.Gamma("a", alpha=2)'), "parameters"),   # needs beta too
    ('a = pm.HalfCauchy("a")', len('a = pm.HalfCauchy("a")'), "parameters"),
    ('a = pm.Normal("a", mu=alpha)', len('a = pm.Normal("a", mu=a'), "declaration"),   # no declared name a...
    ('mu = pm.Normal("mu")', len('mu '), "declaration"),                # declared twice
    ('a = pm.HalfNormal("a", sigma=-2)', len('a = pm.HalfNormal("a", sigma=-'), "support"),
    ('a = pm.HalfNormal("a", sigma=0)', len('a = pm.HalfNormal("a", sigma=0)'), "support"),
    ('a = pm.Uniform("a", lower=1, upper=0)', len('a = pm.Uniform("a", lower=1, upper=0'), "support"),
    ('a = pm.Normal("a", sigma=mu)', len('a = pm.Normal("a", sigma=m'), "types"),    # mu is real
    ('a = pm.Poisson("a", mu=tau - 1)', len('a = pm.Poisson("a", mu=tau -'), "types"),
    ('a = pm.Normal("a", mu=0, sigma=1, observed=sigma)', len('a = pm.Normal("a", mu=0, sigma=1, observed=s'),
     "likelihood"),
    ('a = pm.HalfNormal("a", sigma=1, observed=y)', len('a = pm.HalfNormal("a", sigma=1, o'), "parameters"),
]


@pytest.mark.parametrize(("line", "dead_at", "kind"), BAD)
def test_bad_statements_die_at_the_first_violating_character(line, dead_at, kind):
    for k in range(dead_at):
        assert check_prefix(line[:k], SEM).status == "open", line[:k]
    dead = check_prefix(line[:dead_at], SEM)
    assert dead.status == "dead" and dead.reason.startswith(kind), (line[:dead_at], dead)
    assert check_prefix(line, SEM).status == "dead"
    assert check_prefix(line, SYN).status == "complete"      # the statement form alone lets it through


@pytest.mark.parametrize("line", [
    'a = pm.Normal("a", 0, 1)',          # positional parameters are outside the form
    'a = pm.Normal("a",mu=0)',           # spacing is part of the form
    'a = pm.Normal("a", mu=0) ',         # nothing after the statement
    'a = pm.Normal("a", mu=0, mu=1)',    # a repeated keyword is a SyntaxError
    'a = np.random.normal(0, 1)',
    'for i in range(3):',
    'a = pm.Normal("a", mu=0, observed=y, sigma=1)',   # observed= is the last argument
])
def test_outside_the_statement_form_both_checkers_refuse(line):
    assert check_prefix(line, SEM).status == "dead"
    assert check_prefix(line, SYN).status == "dead"


def test_likelihood_required_on_the_last_statement():
    last = Context(**{**SEM.__dict__, "require_likelihood": True})
    assert check_prefix('y_obs = pm.Normal("y_obs", mu=mu, sigma=sigma, observed=y)', last).status == "complete"
    assert check_prefix('b = pm.Normal("b", mu=mu)', last).reason.startswith("likelihood")
    assert check_prefix('b = pm.HalfN', last).status == "dead"           # support cannot hold real data
    assert check_prefix('b = pm.Deter', last).status == "dead"


def test_observed_is_offered_only_once_the_parametrisation_is_complete():
    ctx = task_context({"y": "positive"}, "y", semantic=True)
    assert check_prefix('o = pm.Gamma("o", alpha=2, o', ctx).status == "dead"
    assert check_prefix('o = pm.Gamma("o", alpha=2, beta=1, observed=y)', ctx).status == "complete"
    assert check_prefix('o = pm.Poisson("o", mu=2, o', ctx).status == "dead"   # a count support, continuous data
    counts = task_context({"y": "count"}, "y", semantic=True)
    assert check_prefix('o = pm.Poisson("o", mu=2, observed=y)', counts).status == "complete"


def test_a_likelihood_needs_a_random_variable_to_infer():
    none = Context(**{**SEM.__dict__, "has_free": False})
    assert check_prefix('o = pm.Normal("o", mu=0, sigma=1, o', none).status == "dead"
    assert check_prefix('o = pm.Normal("o", mu=0, sigma=1, o', SEM).status == "open"


def test_indent_when_the_prompt_ends_at_the_newline():
    ctx = task_context(VARS, "y", semantic=True, indent="    ")
    assert check_prefix("  ", ctx).status == "open"
    assert check_prefix('    b = pm.Normal("b")', ctx).status == "complete"
    assert check_prefix("     b", ctx).status == "dead"
    assert check_prefix('b = pm.Normal("b")', ctx).status == "dead"


def test_declare_records_the_kind_of_each_statement():
    d = declare(check_prefix('s = pm.HalfNormal("s", sigma=1)', SEM), SEM.declared)
    assert d["s"] == "positive" and "s" not in SEM.declared
    d = declare(check_prefix('t = pm.Deterministic("t", tau * sigma)', SEM), SEM.declared)
    assert d["t"] == "positive"
    d = declare(check_prefix('t = pm.Deterministic("t", tau - sigma)', SEM), SEM.declared)
    assert d["t"] == "real"
    assert violation('b = pm.Normal("b", mu=mu', SEM).startswith("form")   # incomplete


def test_number_range_hand_values():
    assert number_range("") == (-math.inf, math.inf)  # the literal may still start with "-"
    assert number_range("0") == (0.0, 1.0)
    assert number_range("12") == (12.0, math.inf)
    assert number_range("1.2") == pytest.approx((1.2, 1.3))
    assert number_range("1.") == (1.0, 2.0)
    assert number_range("-") == (-math.inf, -0.0)
    assert number_range("-0.5") == pytest.approx((-0.6, -0.5))
