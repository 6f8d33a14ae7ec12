"""sci2pol in the DAG: corpus funnel → judge agreement → benchmark with LoRA → report (read by ``make dag``)."""

STEPS = ("corpus", "agree", "bench", "report")
PATHS = {
    # shared assets (stages/assets)
    "model": "models/assets/smollm2-135m",
    "gemma": "models/assets/gemma3-270m",
    "encoder": "models/assets/minilm-l6-v2",
    # corpus
    "pairs": "data/sci2pol/pairs.parquet",
    "funnel": "data/sci2pol/funnel.json",
    # agree (the report reads its scores as judge_scores)
    "scores": "data/sci2pol/judge_scores.parquet",
    "judge_scores": "data/sci2pol/judge_scores.parquet",
    "correlations": "data/sci2pol/judge_correlations.json",
    # bench (its `scores` is bench_scores; see STEP_PATHS)
    "bench_scores": "data/sci2pol/bench_scores.parquet",
    "answers": "data/sci2pol/bench_answers.parquet",
    "losses": "data/sci2pol/lora_losses.parquet",
    "runs": "data/sci2pol/lora_runs.parquet",
}
STEP_PATHS = {
    "bench": {"scores": "data/sci2pol/bench_scores.parquet"},
}
