"""Each semantic constraint on hand-written good and bad statements (RefineStat §3.1)."""

import pytest

from stages.refinestat.semantics import (
    as_statement,
    check_declared_before_use,
    check_distribution_exists,
    check_likelihood,
    check_parameter_names,
    check_support,
    check_types,
    declare,
    expression_kind,
    parses,
    semantic_violation,
)

DECLARED = {"y": "real", "sigma": "positive", "mu": "real", "tau": "positive"}


def st(line):
    statement, why = as_statement(line)
    assert statement is not None, why
    return statement


def test_syntax():
    assert parses('mu = pm.Normal("mu", mu=0, sigma=1)') is None
    assert parses('mu = pm.Normal("mu", mu=0, sigma=1') is not None
    assert parses("a = 1; b = 2") is not None
    assert as_statement("x + 1")[0] is None
    assert as_statement('x = np.random.normal(0, 1)')[0] is None


def test_distribution_exists():
    assert check_distribution_exists(st('a = pm.Normal("a", 0, 1)')) is None
    assert check_distribution_exists(st('a = pm.Deterministic("a", mu + 1)')) is None
    assert "does not exist" in check_distribution_exists(st('a = pm.Gaussian("a", 0, 1)'))


@pytest.mark.parametrize(("line", "ok"), [
    ('a = pm.Normal("a", mu=0, sigma=1)', True),
    ('a = pm.Normal("a", 0, 1)', True),
    ('a = pm.Normal("a", 0, 1, shape=3)', True),
    ('a = pm.Normal("a", mu=0, sd=1)', False),          # PyMC 5 has no `sd`
    ('a = pm.Poisson("a", mu=1, beta=1)', False),
    ('a = pm.Normal("b", mu=0, sigma=1)', False),        # the name must match the variable
    ('a = pm.Normal("a", 0, 1, 2, 3)', False),           # too many positional parameters
    ('a = pm.Normal("a", 0, mu=1)', False),              # mu given twice
])
def test_parameter_names(line, ok):
    assert (check_parameter_names(st(line)) is None) == ok


def test_declared_before_use():
    assert check_declared_before_use(st('b = pm.Normal("b", mu=mu, sigma=tau)'), DECLARED) is None
    assert "before it is declared" in check_declared_before_use(st('b = pm.Normal("b", mu=alpha, sigma=1)'), DECLARED)
    assert "already declared" in check_declared_before_use(st('mu = pm.Normal("mu", 0, 1)'), DECLARED)
    assert check_declared_before_use(st('b = pm.Normal("b", mu=pm.math.exp(mu), sigma=1, shape=len(y))'),
                                     DECLARED) is None


@pytest.mark.parametrize(("line", "ok"), [
    ('s = pm.HalfNormal("s", sigma=2)', True),
    ('s = pm.HalfNormal("s", sigma=-2)', False),
    ('s = pm.HalfNormal("s", sigma=0)', False),
    ('p = pm.Beta("p", alpha=1, beta=1)', True),
    ('k = pm.Bernoulli("k", p=1.5)', False),
    ('u = pm.Uniform("u", lower=1, upper=0)', False),
    ('u = pm.Uniform("u", lower=-1, upper=1)', True),
    ('n = pm.Normal("n", mu=-3, sigma=1)', True),       # a negative mean is fine
])
def test_support(line, ok):
    assert (check_support(st(line)) is None) == ok


def test_types():
    assert check_types(st('b = pm.Normal("b", mu=0, sigma=tau)'), DECLARED) is None
    assert "real-valued" in check_types(st('b = pm.Normal("b", mu=0, sigma=mu)'), DECLARED)
    assert check_types(st('b = pm.Normal("b", mu=0, sigma=pm.math.exp(mu))'), DECLARED) is None
    assert "real-valued" in check_types(st('b = pm.Poisson("b", mu=mu - 1)'), DECLARED)
    assert expression_kind(st('b = pm.Normal("b", mu=tau * sigma, sigma=1)').call.keywords[0].value,
                           DECLARED) == "positive"


def test_likelihood_support_and_data():
    normal = st('y_obs = pm.Normal("y_obs", mu=mu, sigma=sigma, observed=y)')
    assert check_likelihood(normal, "y", "real", True) is None
    assert "support" in check_likelihood(st('y_obs = pm.Poisson("y_obs", mu=tau, observed=y)'), "y", "positive", True)
    assert "support" in check_likelihood(st('y_obs = pm.HalfNormal("y_obs", sigma=tau, observed=y)'), "y", "real", True)
    assert check_likelihood(st('y_obs = pm.HalfNormal("y_obs", sigma=tau, observed=y)'), "y", "positive", True) is None
    assert "data variable" in check_likelihood(st('y_obs = pm.Normal("y_obs", mu=0, sigma=1, observed=mu)'),
                                               "y", "real", True)


def test_semantic_violation_in_order_and_declare():
    assert semantic_violation('b = pm.Normal("b", mu=mu, sigma=tau)', DECLARED, "y", "real") is None
    assert semantic_violation('b = pm.Normal("b", mu=mu, sigma=tau', DECLARED, "y", "real").startswith("syntax")
    assert semantic_violation('b = pm.Gauss("b", 0, 1)', DECLARED, "y", "real").startswith("distribution")
    after = declare('s = pm.HalfNormal("s", sigma=1)', DECLARED)
    assert after["s"] == "positive" and "s" not in DECLARED


def test_prefix_violations_stop_a_line_early():
    from stages.refinestat.semantics import prefix_violation

    assert prefix_violation("alpha = pm.Nor", DECLARED) is None
    assert prefix_violation("alp", DECLARED) is None
    assert "already declared" in prefix_violation("mu = ", DECLARED)
    assert "pm.<Distribution>" in prefix_violation("a = np.", DECLARED)
    assert "does not exist" in prefix_violation('a = pm.Exp("', DECLARED)
    assert "name 'a'" in prefix_violation('a = pm.Normal("b', DECLARED)
    assert "no parameter 'beta_max'" in prefix_violation('a = pm.Gamma("a", beta_max=', DECLARED)
    assert "before it is declared" in prefix_violation('a = pm.Normal("a", mu=alpha, ', DECLARED)
    assert prefix_violation('a = pm.Normal("a", mu=mu + tau * pm.math.exp(sig', DECLARED) is None
