"""The prompt never shows a task's own expert program; line sampling with the cache rewinds exactly."""

import torch

from stages.assets.loaders import load_causal_lm
from stages.refinestat.generator import LineSampler, build_prompt, generator_for, sample_token
from stages.refinestat.tasks import TASKS


def test_prompt_holds_other_tasks_only():
    for name, task in TASKS.items():
        prompt = build_prompt(name, {v: 10 for v in task.variables}, n_shots=6)
        assert task.expert[0] not in prompt or any(task.expert[0] in o.expert for n, o in TASKS.items() if n != name)
        assert task.description in prompt
        assert prompt.rstrip().endswith("with pm.Model() as model:")
        assert all(line not in prompt for line in task.expert if "observed" in line)


def test_nucleus_sampling_keeps_the_top_token_at_small_top_p():
    logits = torch.tensor([0.0, 3.0, 1.0])
    assert all(sample_token(logits, 1.0, 0.01, generator_for(s)) == 1 for s in range(5))


def test_line_sampling_rewinds_the_cache(smollm2_asset):
    torch.set_num_threads(1)
    model, tok = load_causal_lm(smollm2_asset)
    prompt = build_prompt("dugongs", {"age": 20, "y": 20}, n_shots=1)
    sampler = LineSampler(model, tok, prompt)
    a, used_a = sampler.sample_line(generator_for(7), 0.7, 0.95, 8)
    b, used_b = sampler.sample_line(generator_for(7), 0.7, 0.95, 8)
    assert (a, used_a) == (b, used_b) and 0 < used_a <= 8 and "\n" not in a
    sampler.accept('alpha = pm.Normal("alpha", mu=0, sigma=1)')
    sampler.sample_line(generator_for(7), 0.7, 0.95, 8)
    sampler.rewind(0)
    assert sampler.n_lines == 0
    assert sampler.sample_line(generator_for(7), 0.7, 0.95, 8) == (a, used_a)
