"""refinestat in the DAG: bundled tables -> task splits -> programs from three methods in the sandbox -> report.

The generator's asset folder follows the param ``generate.generator`` of params/refinestat.yaml (read here, so
``make dag`` writes the chosen asset as synthesize's dependency; synthesize refuses an asset of another name)."""

from pathlib import Path

import yaml

GENERATOR = yaml.safe_load((Path(__file__).resolve().parents[2] / "params" / "refinestat.yaml").read_text()
                           )["generate"]["generator"]

STEPS = ("data", "synthesize", "report")
PATHS = {
    "tables": "stages/refinestat/tables",
    "tasks": "data/refinestat/tasks.parquet",
    "lm": f"models/assets/{GENERATOR}",
    "programs": "data/refinestat/programs.parquet",
    "versions": "data/refinestat/versions.parquet",
    "trace": "data/refinestat/trace.parquet",
}
