"""The modelling tasks: a data description, the data's variables and kinds, the expert program, a
mis-specified control program, and the few-shot examples a prompt may show (never the task's own expert).

A program is a list of statements run inside ``with pm.Model():`` with the task's data bound as
numpy arrays; its one likelihood statement has ``observed=<the task's observed variable>``.
"""

from __future__ import annotations

from dataclasses import dataclass

# data kinds: what the values allow (checked against a likelihood's support, RefineStat §3.1)
REAL, POSITIVE, COUNT = "real", "positive", "count"


@dataclass(frozen=True)
class Task:
    """One data set as the generator sees it."""

    name: str
    description: str
    variables: dict[str, str]          # data variable -> kind (the observed one included)
    observed: str
    expert: tuple[str, ...]
    misspecified: tuple[str, ...]
    null: tuple[str, ...]              # the null model: complete pooling / intercept only (a predictive control)
    exchangeable: bool                 # rows can be held out (a held-out split exists), else PSIS-LOO scores it


TASKS: dict[str, Task] = {
    "eight_schools": Task(
        name="eight_schools",
        description=("Estimated effects y of SAT coaching in 8 schools, with known standard errors sigma. "
                     "Model the school effects as exchangeable draws around a common mean."),
        variables={"y": REAL, "sigma": POSITIVE},
        observed="y",
        expert=(
            'mu = pm.Normal("mu", mu=0, sigma=5)',
            'tau = pm.HalfCauchy("tau", beta=5)',
            'theta_raw = pm.Normal("theta_raw", mu=0, sigma=1, shape=len(y))',
            'theta = pm.Deterministic("theta", mu + tau * theta_raw)',
            'y_obs = pm.Normal("y_obs", mu=theta, sigma=sigma, observed=y)',
        ),
        misspecified=(  # the centred parameterisation: a funnel NUTS cannot explore
            'mu = pm.Normal("mu", mu=0, sigma=5)',
            'tau = pm.HalfCauchy("tau", beta=5)',
            'theta = pm.Normal("theta", mu=mu, sigma=tau, shape=len(y))',
            'y_obs = pm.Normal("y_obs", mu=theta, sigma=sigma, observed=y)',
        ),
        null=(  # complete pooling: one common effect
            'mu = pm.Normal("mu", mu=0, sigma=5)',
            'y_obs = pm.Normal("y_obs", mu=mu, sigma=sigma, observed=y)',
        ),
        exchangeable=False,
    ),
    "dugongs": Task(
        name="dugongs",
        description=("Length y (metres) of dugongs against their age (years). Length grows quickly when young "
                     "and levels off towards an asymptote."),
        variables={"age": POSITIVE, "y": POSITIVE},
        observed="y",
        expert=(
            'alpha = pm.Normal("alpha", mu=2.5, sigma=1)',
            'beta = pm.HalfNormal("beta", sigma=2)',
            'gamma = pm.Uniform("gamma", lower=0.5, upper=1)',
            'sigma_y = pm.HalfNormal("sigma_y", sigma=1)',
            'y_obs = pm.Normal("y_obs", mu=alpha - beta * gamma ** age, sigma=sigma_y, observed=y)',
        ),
        misspecified=(  # one centred latent mean per animal, age ignored: a funnel, and LOO that fails
            'mu = pm.Normal("mu", mu=2, sigma=1)',
            'tau = pm.HalfCauchy("tau", beta=1)',
            'theta = pm.Normal("theta", mu=mu, sigma=tau, shape=len(y))',
            'y_obs = pm.Normal("y_obs", mu=theta, sigma=0.3, observed=y)',
        ),
        null=(  # intercept only: age ignored
            'alpha = pm.Normal("alpha", mu=2.5, sigma=1)',
            'sigma_y = pm.HalfNormal("sigma_y", sigma=1)',
            'y_obs = pm.Normal("y_obs", mu=alpha, sigma=sigma_y, observed=y)',
        ),
        exchangeable=True,
    ),
    "diabetes": Task(
        name="diabetes",
        description=("Disease progression y one year after baseline for diabetes patients, against their "
                     "standardised body mass index bmi."),
        variables={"bmi": REAL, "y": POSITIVE},
        observed="y",
        expert=(
            'alpha = pm.Normal("alpha", mu=150, sigma=50)',
            'beta = pm.Normal("beta", mu=0, sigma=50)',
            'sigma_y = pm.HalfNormal("sigma_y", sigma=100)',
            'y_obs = pm.Normal("y_obs", mu=alpha + beta * bmi, sigma=sigma_y, observed=y)',
        ),
        misspecified=(  # one centred latent mean per patient, bmi ignored: a funnel, and LOO that fails
            'mu = pm.Normal("mu", mu=150, sigma=50)',
            'tau = pm.HalfCauchy("tau", beta=50)',
            'theta = pm.Normal("theta", mu=mu, sigma=tau, shape=len(y))',
            'y_obs = pm.Normal("y_obs", mu=theta, sigma=70, observed=y)',
        ),
        null=(  # intercept only: bmi ignored
            'alpha = pm.Normal("alpha", mu=150, sigma=50)',
            'sigma_y = pm.HalfNormal("sigma_y", sigma=100)',
            'y_obs = pm.Normal("y_obs", mu=alpha, sigma=sigma_y, observed=y)',
        ),
        exchangeable=True,
    ),
}


@dataclass(frozen=True)
class Example:
    """A few-shot example for a data set that is never evaluated."""

    description: str
    variables: dict[str, str]
    program: tuple[str, ...]


EXAMPLES: tuple[Example, ...] = (
    Example(
        description="Log radon level y measured in houses, against the floor x of the measurement (0 or 1).",
        variables={"x": REAL, "y": REAL},
        program=('a = pm.Normal("a", mu=0, sigma=10)',
                 'b = pm.Normal("b", mu=0, sigma=10)',
                 'sigma_y = pm.HalfNormal("sigma_y", sigma=5)',
                 'y_obs = pm.Normal("y_obs", mu=a + b * x, sigma=sigma_y, observed=y)'),
    ),
    Example(
        description="Yearly counts y of coal-mining disasters.",
        variables={"y": COUNT},
        program=('rate = pm.Gamma("rate", alpha=2, beta=0.5)',
                 'y_obs = pm.Poisson("y_obs", mu=rate, observed=y)'),
    ),
)


def shots(task: str, n_shots: int) -> list[tuple[str, dict[str, str], tuple[str, ...]]]:
    """The prompt's examples for ``task``: the fixed examples, then the OTHER tasks' expert programs."""
    pool = [(e.description, e.variables, e.program) for e in EXAMPLES]
    pool += [(t.description, t.variables, t.expert) for name, t in TASKS.items() if name != task]
    return pool[:n_shots]


def misspelled(line: str) -> str:
    """The statement with its distribution's 2nd and 3rd letters swapped (``pm.Nromal``): no such distribution."""
    head, _, rest = line.partition("pm.")
    return f"{head}pm.{rest[0]}{rest[2]}{rest[1]}{rest[3:]}"


def scripted_control(task: str) -> list[list[str]]:
    """The positive control's script: for each statement of the task's expert program, known-invalid versions
    first (a misspelled distribution; ``sd=`` for ``sigma=``; an observed variable that is not the data) and
    the valid statement last, so a constrained loop must mask its way to the expert program."""
    t = TASKS[task]
    script = []
    for line in t.expert:
        bad = [misspelled(line)]
        if "sigma=" in line:
            bad.append(line.replace("sigma=", "sd=", 1))
        if "observed=" in line:
            bad.append(line.replace(f"observed={t.observed}", "observed=data"))
        script.append([*bad, line])
    return script
