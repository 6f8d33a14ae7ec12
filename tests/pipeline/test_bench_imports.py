"""benchmarks/imports.py: parsing ``python -X importtime`` and finding each stage's module."""

from __future__ import annotations

import pytest

from benchmarks.imports import markdown, parse_importtime, stage_modules

# a trimmed -X importtime trace: torch imported once at top level, again (a cache hit) under another module
TRACE = """import time: self [us] | cumulative | imported package
import time:       120 |        120 |   _io
import time:      1000 |     900000 |   torch
import time:        50 |        200 |     torch.nn
import time:       300 |      40000 |     pandas
import time:        10 |         10 |       torch
import time:       700 |    1250000 | stages.toy.train
"""


def test_the_module_total_and_each_heavy_package_come_from_their_outermost_lines():
    r = parse_importtime(TRACE, "stages.toy.train")
    assert r["import_s"] == pytest.approx(1.25)
    assert r["heavy"] == {"torch": pytest.approx(0.9), "pandas": pytest.approx(0.04)}


def test_a_trace_without_the_module_gives_no_total():
    assert parse_importtime(TRACE, "stages.toy.report")["import_s"] is None


def test_every_stage_command_names_its_module():
    modules = stage_modules()
    assert modules["claims"] == "stages.claims"
    assert all(m.startswith("stages.") for m in modules.values())
    assert len(modules) > 100


def test_the_table_sorts_by_import_time():
    result = {"machine": {"load_average_1min": 1.0}, "total_import_s": 3.0,
              "stages": {"a-x": {"module": "stages.a.x", "import_s": 1.0, "heavy": {}},
                         "b-y": {"module": "stages.b.y", "import_s": 2.0, "heavy": {"torch": 1.5}}}}
    text = markdown(result)
    assert text.index("| b-y |") < text.index("| a-x |") and "torch 1.50" in text and "| - |" in text
