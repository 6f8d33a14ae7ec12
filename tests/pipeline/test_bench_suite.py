"""benchmarks/suite.py: the suite's time split and its projection, on a hand-made JUnit XML."""

from __future__ import annotations

import pytest

from benchmarks.suite import markdown, summarise

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite name="pytest" tests="6" time="1000.0">
<properties><property name="smoke_dag_seconds" value="300.0"/>
<property name="smoke_stage_times"
 value='{"alpha-train": {"wall_s": 200.0, "cpu_s": 350.0}, "beta-data": {"wall_s": 90.0, "cpu_s": 80.5}}'/>
</properties>
<testcase classname="tests.alpha.test_steps" name="test_a" time="310.0"/>
<testcase classname="tests.beta.test_steps" name="test_b" time="10.0"/>
<testcase classname="tests.pipeline.test_determinism_every_stage"
          name="test_stage_rerun_reproduces_its_outputs_bit_for_bit[alpha-train]" time="200.0"/>
<testcase classname="tests.pipeline.test_determinism_every_stage"
          name="test_stage_rerun_reproduces_its_outputs_bit_for_bit[beta-data]" time="80.0"/>
<testcase classname="tests.pipeline.test_kill_every_paper" name="test_longest_stage_survives_kills[alpha]"
          time="20.0"/>
<testcase classname="tests.flows.test_ui" name="test_ui" time="40.0"/>
</testsuite></testsuites>"""


def test_per_paper_cost_and_projection_by_hand(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    result = summarise(junit, ["alpha", "beta"])
    # test_a hosts the shared DAG (310 s = 300 s DAG + 10 s own); growing: DAG 300 + the per-stage reruns
    # 200 + 80 + probes 20 + paper folders (10 + 10) = 620, over 2 papers
    assert result["per_paper_cost_s"] == 310.0
    assert result["projected_suite_s_at_19_papers"] == 1000.0 + 17 * 310.0
    assert result["per_folder_s"] == {"pipeline": 300.0, "flows": 40.0, "alpha": 10.0, "beta": 10.0}
    assert result["slowest"][0]["seconds"] == 200.0
    assert "| determinism, every stage rerun on the shared inputs | 280.0 |" in markdown(result)
    # the shared run's stages, by CPU, and their sum per paper
    assert result["smoke_dag_cpu_s"] == 430.5
    assert result["smoke_dag_cpu_s_per_paper"] == {"alpha": 350.0, "beta": 80.5}
    assert [r["stage"] for r in result["smoke_stages_most_cpu"]] == ["alpha-train", "beta-data"]
    assert "| `alpha-train` | 350.0 | 200.0 |" in markdown(result)


def test_a_run_without_the_smoke_dag_time_is_refused(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT.replace('<property name="smoke_dag_seconds" value="300.0"/>', ""))
    with pytest.raises(ValueError, match="smoke_dag_seconds"):
        summarise(junit, ["alpha"])
