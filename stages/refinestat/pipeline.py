"""refinestat in the DAG: bundled tables -> task splits -> programs from three methods in the sandbox -> report."""

STEPS = ("data", "synthesize", "report")
PATHS = {
    "tables": "stages/refinestat/tables",
    "tasks": "data/refinestat/tasks.parquet",
    "lm": "models/assets/smollm2-135m",
    "programs": "data/refinestat/programs.parquet",
    "versions": "data/refinestat/versions.parquet",
    "trace": "data/refinestat/trace.parquet",
}
