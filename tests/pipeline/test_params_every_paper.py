"""Every step of every paper refuses a bad params file before work, naming the dotted key.

Nothing here is written per paper: the cases are generated from the committed params.yaml and
from what each step's loader reads (``record_sections``, as the DAG generator learns it). For a
generated leaf of a section the step reads (a base value or a profile override) the value is
replaced by one its pydantic field cannot accept for that leaf's type (NaN, ±inf, a string for a
number, a list for a scalar, a mapping for a list, ...; never None, which optional fields take),
or an unknown key is added to a mapping.
The step's loader must raise ``ConfigError`` whose message holds the dotted key of the mistake
(under ``<section>.profiles.<name>.`` exactly when the mistake is in that profile's override).
A paper added later is covered without new test code.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages import dag
from stages.core import config
from stages.core.config import PROFILES, ConfigError, read_params, record_sections
from stages.core.stage import declared_metrics, stage_main
from stages.core.verdict import check_verdict_metrics
from tests.conftest import write_layout

ROOT = Path(__file__).resolve().parents[2]
PARAMS = ROOT / "params.yaml"
SETTINGS = settings(max_examples=25, deadline=None, database=None)
UNKNOWN_KEY = "no_such_key_here"

# Replacement values by the type of the committed value; each is invalid for any field whose
# committed value has that type (pydantic v2 does not coerce between these).
BAD_NUMBER = [math.nan, math.inf, -math.inf, "x", [1], {"a": 1}]
BAD_BOOL = ["maybe", 2, [True], {"a": 1}]
BAD_STR = [["x"], {"a": 1}]
BAD_LIST = ["x", 3.5, {"a": 1}]


def _bad_values(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return BAD_BOOL
    if isinstance(value, int | float):
        return BAD_NUMBER
    if isinstance(value, str):
        return BAD_STR
    if isinstance(value, list):
        return BAD_LIST
    return []


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every scalar or list value under ``node`` with its path; list items of mappings too."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_leaves(value, (*path, key)))
    elif isinstance(node, list):
        found.append((path, node))
        for i, item in enumerate(node):
            if isinstance(item, dict):
                found.extend(_leaves(item, (*path, i)))
    else:
        found.append((path, node))
    return found


def _mappings(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every mapping under ``node`` (where an unknown key can be added)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        found.append(path)
        for key, value in node.items():
            found.extend(_mappings(value, (*path, key)))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found.extend(_mappings(item, (*path, i)))
    return found


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _section_cases(params: dict[str, Any], dotted: str) -> list[tuple[tuple[Any, ...], Any, str]]:
    """(path from the params root, bad value or UNKNOWN_KEY marker, dotted key expected in the error)."""
    section_path = tuple(dotted.split("."))
    section = _get(params, section_path)
    cases: list[tuple[tuple[Any, ...], Any, str]] = []
    for path, value in _leaves(section):
        if path and path[0] == "profiles":
            continue  # overrides are enumerated below, with their own expected prefix
        for bad in _bad_values(value):
            cases.append(((*section_path, *path), bad, ".".join(map(str, (*section_path, *path)))))
    for path in _mappings(section):
        if path[:1] == ("profiles",) and len(path) <= 2:
            continue  # `profiles` and `profiles.<name>` have their own checks (unknown profile names)
        cases.append(((*section_path, *path), UNKNOWN_KEY,
                      ".".join(map(str, (*section_path, *path, UNKNOWN_KEY)))))
    for name, override in (section.get("profiles") or {}).items():
        for path, value in _leaves(override):
            full = (*section_path, "profiles", name, *path)
            for bad in _bad_values(value):
                cases.append((full, bad, ".".join(map(str, full))))
    return cases


def _steps() -> list[Any]:
    return [entry for package in dag.packages(PARAMS) for entry in dag.steps(package)]


def _sections_read(entry: Any) -> list[str]:
    with record_sections() as seen:
        entry.load_config(PARAMS)
    return list(seen)


STEPS = _steps()
CONFIGURED = [e for e in STEPS if _sections_read(e)]  # the committed params load for every step


def test_most_steps_read_params() -> None:
    """The generated cases reach the papers: every paper's steps but a few read a section."""
    papers = {e.paper for e in CONFIGURED}
    assert papers == {e.paper for e in STEPS}, f"papers with no configured step: {set(e.paper for e in STEPS) - papers}"


@pytest.mark.parametrize("entry", CONFIGURED, ids=[e.stage for e in CONFIGURED])
def test_bad_value_refused_with_its_key(entry: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    params = read_params(PARAMS)
    cases = [case for dotted in _sections_read(entry) for case in _section_cases(params, dotted)]
    assert cases, f"{entry.stage}: no params leaf to perturb"
    folder = tmp_path_factory.mktemp(entry.stage)

    @SETTINGS
    @given(st.sampled_from(cases))
    def check(case: tuple[tuple[Any, ...], Any, str]) -> None:
        path, bad, expected = case
        data = copy.deepcopy(params)
        if bad == UNKNOWN_KEY:
            _get(data, path)[UNKNOWN_KEY] = 1
        else:
            _get(data, path[:-1])[path[-1]] = bad
        # the loaders read the params through read_params; the mapping stands in for the parsed file
        with mock.patch.object(config, "read_params", lambda _path=None: data), \
                pytest.raises(ConfigError) as err:
            entry.load_config(folder / "params.yaml")
        parts = [p.split(":")[0] for p in str(err.value).split("; ")]
        assert any(p == expected or expected.startswith(p + ".") or p.startswith(expected + ".")
                   for p in parts), f"{entry.stage}: {expected} = {bad!r} was refused as: {err.value}"

    check()


PAPERS_WITH_VERDICT = sorted({e.paper for e in STEPS if isinstance(read_params(PARAMS).get(e.paper), dict)
                              and "verdict" in read_params(PARAMS)[e.paper]})


def test_every_verdict_names_only_metrics_its_paper_declares() -> None:
    """Each paper with a verdict block declares METRICS, and the committed rule (every profile) uses only those."""
    assert PAPERS_WITH_VERDICT, "no paper has a verdict block"
    for paper in PAPERS_WITH_VERDICT:
        declared = declared_metrics(paper)
        assert declared, f"stages/{paper}/config.py declares no METRICS"
        check_verdict_metrics(paper, declared, PARAMS)


def test_the_committed_default_reports_measure_exactly_the_declared_metrics() -> None:
    """``METRICS`` cannot go stale: the committed default-profile metrics.json measures every declared name."""
    for paper in PAPERS_WITH_VERDICT:
        measured = set(json.loads((ROOT / "reports" / paper / "metrics.json").read_text())["per_seed"])
        declared = set(declared_metrics(paper) or ())
        assert measured == declared, (f"{paper}: declared but not measured {sorted(declared - measured)}, "
                                      f"measured but not declared {sorted(measured - declared)}")


def _misspelt(paper: str, profile: str | None) -> tuple[dict[str, Any], str]:
    """The committed params with one verdict metric misspelt (in a profile override when given)."""
    data = read_params(PARAMS)
    verdict = data[paper]["verdict"]
    if profile is None:
        checks, key = verdict["checks"], f"{paper}.verdict.checks.0.metric"
    else:
        override = verdict.setdefault("profiles", {}).setdefault(profile, {})
        override["checks"] = copy.deepcopy(override.get("checks") or verdict["checks"])
        checks, key = override["checks"], f"{paper}.verdict.profiles.{profile}.checks.0.metric"
    checks[0]["metric"] += "_misspelt"
    return data, key


@pytest.mark.parametrize("paper", PAPERS_WITH_VERDICT)
def test_misspelt_verdict_metric_is_refused_by_every_step_before_its_work(paper: str, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """A cross-key mistake (a check on a metric no report measures) stops the first stage, not the report."""
    for profile in (None, "paper"):
        data, key = _misspelt(paper, profile)
        params = tmp_path / "params.yaml"
        write_layout(params, data)
        for entry in [e for e in STEPS if e.paper == paper]:
            ran: list[str] = []
            argv = ["--params", str(params), "--timing", str(tmp_path / "t.json")]
            for f in dataclasses.fields(entry.paths):
                argv += ["--" + f.name.replace("_", "-"), str(tmp_path / "out" / f.name)]
            with pytest.raises(SystemExit) as stop:
                stage_main(entry.paper, entry.step, lambda *_, ran=ran: ran.append("work") or {},
                           entry.load_config, entry.paths, argv)
            err = capsys.readouterr().err
            assert stop.value.code == 2 and not ran, f"{entry.stage}: exit {stop.value.code}, ran {ran}: {err}"
            try:  # a report's own loader may cross-check the rule first (e.g. its gates); else this check names it
                entry.load_config(params)
            except ConfigError as own:
                assert str(own) in err, f"{entry.stage}: {err}"
            else:
                assert f"{key}: unknown metric" in err, f"{entry.stage}: {err}"
            assert not (tmp_path / "out").exists()


def test_a_profile_without_its_own_checks_is_blamed_on_the_base_rule(tmp_path: Path) -> None:
    paper = PAPERS_WITH_VERDICT[0]
    data, key = _misspelt(paper, None)
    for name in PROFILES:  # overrides that replace the checks would hide the base rule's mistake
        (data[paper]["verdict"].get("profiles") or {}).get(name, {}).pop("checks", None)
    params = tmp_path / "params.yaml"
    write_layout(params, data)
    with pytest.raises(ConfigError, match=rf"^{key}: unknown metric '.*_misspelt' \(the report measures "):
        check_verdict_metrics(paper, declared_metrics(paper) or (), params)
