"""Property-based params tests (hypothesis) of the core models every paper's params build on.

A toy section made of the core pieces (``Section`` fields with bounds, a nested ``Section``, a
``VerdictRule``) and the global switches (``GlobalParams``) are written to a params file with one
generated mistake: a wrong type, ±inf/NaN, a negative or zero count, an empty list, an unknown
or a missing key. Loading must refuse it with a ``ConfigError`` that starts with the dotted key of
the mistake, under ``profiles.paper.`` exactly when the mistake came from that profile's override.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from stages.core.config import PROFILES, ConfigError, Section, load_global, load_section
from stages.core.verdict import VerdictRule
from tests.conftest import write_layout

SETTINGS = settings(max_examples=50, deadline=None, database=None)


class Inner(Section):
    rate: float = Field(gt=0)


class Toy(Section):
    count: int = Field(ge=1)
    rate: float = Field(gt=0)
    sizes: list[int] = Field(min_length=1)
    inner: Inner
    verdict: VerdictRule


VALID: dict[str, Any] = {
    "count": 3, "rate": 0.5, "sizes": [1, 2], "inner": {"rate": 1.0},
    "verdict": {"min_seeds": 2, "checks": [{"name": "a", "metric": "m", "op": "<=", "threshold": 0.1}]},
}
GLOBAL: dict[str, Any] = {"seed": 0, "profile": "smoke", "threads": 1, "papers": ["toy"]}


def _not_a_finite_number(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return True


NON_FINITE = st.sampled_from([math.inf, -math.inf, math.nan])
OTHER_TYPES = st.one_of(st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=1))
NOT_A_FLOAT = st.one_of(NON_FINITE, OTHER_TYPES, st.text(max_size=6).filter(_not_a_finite_number))
NOT_AN_INT = st.one_of(OTHER_TYPES, st.floats(), st.text(max_size=6))  # 2.0 and "2" are not ints either
NAME = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)


def _case(path: tuple[Any, ...], values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[tuple[Any, ...], Any]]:
    return st.tuples(st.just(path), values)


def _unknown(path: tuple[Any, ...], known: set[str]) -> st.SearchStrategy[tuple[tuple[Any, ...], Any]]:
    return NAME.filter(lambda k: k not in known and k != "profiles").map(lambda k: ((*path, k), 1))


CHECK = ("verdict", "checks", 0)
BAD_TOY = st.one_of(
    _case(("count",), st.one_of(NOT_AN_INT, st.integers(max_value=0))),           # wrong type, zero/negative
    _case(("rate",), st.one_of(NOT_A_FLOAT, st.floats(max_value=0.0, allow_nan=False), st.integers(max_value=0))),
    _case(("sizes",), st.one_of(st.just([]), st.lists(NOT_AN_INT, min_size=1, max_size=3), st.integers(),
                                st.none())),
    _case(("inner", "rate"), NOT_A_FLOAT),
    _case(("verdict", "min_seeds"), st.one_of(NOT_AN_INT, st.integers(max_value=0))),
    _case(("verdict", "checks"), st.one_of(st.just([]), st.none(), st.text(max_size=3))),
    _case((*CHECK, "threshold"), NOT_A_FLOAT),
    _case((*CHECK, "metric"), st.one_of(st.just(""), st.just(" "), st.integers(), st.none())),
    _case((*CHECK, "op"), st.text(max_size=3).filter(lambda s: s not in ("<=", ">="))),
    _unknown((), set(Toy.model_fields)),
    _unknown(("inner",), set(Inner.model_fields)),
    _unknown(("verdict",), set(VerdictRule.model_fields)),
    _unknown(CHECK, {"name", "metric", "op", "threshold"}),
)
MISSING = st.sampled_from([("count",), ("sizes",), ("inner", "rate"), ("verdict", "min_seeds"), (*CHECK, "op")])


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def _delete(tree: Any, path: tuple[Any, ...]) -> None:
    for key in path[:-1]:
        tree = tree[key]
    del tree[path[-1]]


@pytest.fixture(scope="module")
def params_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("params") / "params.yaml"


def _write(path: Path, section: dict[str, Any] | None = None, **glob: Any) -> Path:
    data = {**GLOBAL, **glob}
    data = {k: v for k, v in data.items() if v is not _MISSING}
    if section is not None:
        data["toy"] = {"step": section}
    return write_layout(path, data)


_MISSING = object()


def _refused(load: Any, dotted: str) -> str:
    with pytest.raises(ConfigError) as info:
        load()
    message = str(info.value)
    assert re.match(re.escape(dotted) + r"[.:]", message), f"expected the key {dotted!r}: {message}"
    return message


def _place(path: tuple[Any, ...], mutate: Any, in_profile: bool) -> tuple[dict[str, Any], str]:
    """The section with the mistake in its base values, or in the ``paper`` profile's override."""
    bad = copy.deepcopy(VALID)
    mutate(bad)
    if not in_profile:
        return bad, "toy.step"
    # the override replaces the top-level entry that holds the mistake; the base stays valid
    override = {path[0]: bad[path[0]]} if path[0] in bad else {}
    return {**copy.deepcopy(VALID), "profiles": {"paper": override}}, "toy.step.profiles.paper"


@SETTINGS
@given(case=BAD_TOY, in_profile=st.booleans())
def test_a_bad_value_is_refused_naming_its_dotted_key(params_file, case, in_profile):
    path, value = case
    section, prefix = _place(path, lambda tree: _set(tree, path, value), in_profile)
    _refused(lambda: load_section(Toy, "toy.step", _write(params_file, section)),
             ".".join([prefix, *map(str, path)]))


@SETTINGS
@given(path=MISSING)
def test_a_missing_key_is_refused_naming_it(params_file, path):
    section, prefix = _place(path, lambda tree: _delete(tree, path), in_profile=False)
    message = _refused(lambda: load_section(Toy, "toy.step", _write(params_file, section)),
                       ".".join([prefix, *map(str, path)]))
    assert "Field required" in message


@SETTINGS
@given(count=st.integers(min_value=1, max_value=2**62), rate=st.one_of(
    st.floats(min_value=1e-300, max_value=1e300), st.integers(min_value=1, max_value=10**6)),
    threshold=st.floats(allow_nan=False, allow_infinity=False))
def test_good_values_load_unchanged(params_file, count, rate, threshold):
    section = copy.deepcopy(VALID)
    section.update(count=count, rate=rate)
    section["verdict"]["checks"][0]["threshold"] = threshold
    cfg = load_section(Toy, "toy.step", _write(params_file, section))
    assert cfg.count == count and cfg.rate == float(rate) and isinstance(cfg.rate, float)
    assert cfg.verdict.checks[0].threshold == threshold


BAD_GLOBAL = st.one_of(
    _case(("seed",), st.one_of(NOT_AN_INT, st.integers(max_value=-1))),
    _case(("threads",), st.one_of(NOT_AN_INT, st.integers(max_value=0), st.integers(min_value=513))),
    _case(("profile",), st.one_of(st.text(max_size=8).filter(lambda s: s not in PROFILES), OTHER_TYPES)),
    _case(("papers",), st.one_of(st.just([]), st.none(), st.integers(),
                                 st.lists(st.one_of(st.integers(), st.floats(), st.booleans(), st.none()),
                                          min_size=1, max_size=2))),
    _case(("seed",), st.just(_MISSING)),
    _case(("threads",), st.just(_MISSING)),
)


@SETTINGS
@given(case=BAD_GLOBAL)
def test_bad_global_switches_are_refused_naming_the_key(params_file, case):
    (key,), value = case
    _refused(lambda: load_global(_write(params_file, None, **{key: value})), f"params.{key}")
