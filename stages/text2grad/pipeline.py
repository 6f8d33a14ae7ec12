"""text2grad in the DAG: data → reward models and warm start → PPO per scheme → report (read by ``make dag``)."""

STEPS = ("data", "reward_model", "sft", "ppo", "report")
PATHS = {
    # data
    "sources": "data/text2grad/sources.parquet",
    "outputs": "data/text2grad/outputs.parquet",
    "tokenizer": "data/text2grad/tokenizer.json",
    # reward_model (its outputs; ppo and report read them as reward_models, rm_evaluation, rm_examples)
    "models": "models/text2grad/reward_models",
    "evaluation": "data/text2grad/rm_evaluation.json",
    "examples": "data/text2grad/rm_examples.parquet",
    "reward_models": "models/text2grad/reward_models",
    "rm_evaluation": "data/text2grad/rm_evaluation.json",
    "rm_examples": "data/text2grad/rm_examples.parquet",
    # sft (its `models` is the policy folder)
    "sft": "models/text2grad/sft",
    # ppo
    "curves": "data/text2grad/curves.parquet",
}
STEP_PATHS = {
    "sft": {"models": "models/text2grad/sft"},
}
