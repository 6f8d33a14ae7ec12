"""sysmobench in the DAG: TLA+ tools asset + instrumented executions -> scored candidate specs -> report."""

STEPS = ("traces", "evaluate", "report")
PATHS = {
    "tools": "models/assets/tla2tools",
    "traces": "data/sysmobench/traces.parquet",
    "scores": "data/sysmobench/scores.parquet",
}
