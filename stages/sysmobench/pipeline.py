"""sysmobench in the DAG: TLA+ tools asset + instrumented executions -> scored candidate specs -> report."""

STEPS = ("traces", "generate", "evaluate", "report")
PATHS = {
    "tools": "models/assets/tla2tools",
    "lm": "models/assets/smollm2-135m",
    "traces": "data/sysmobench/traces.parquet",
    "generated": "data/sysmobench/generated.parquet",
    "scores": "data/sysmobench/scores.parquet",
}
