"""The prompt never shows a task's own expert program; masked sampling is exact; the scripted positive control:
the constrained loop masks its way from known-invalid statements to a valid program within the budget, where
the baselines write the invalid ones; line sampling with the cache rewinds exactly."""

import math
from types import SimpleNamespace

import pytest
import torch

from stages.assets.loaders import load_causal_lm
from stages.refinestat.generator import (
    EOS_TEXT,
    Budget,
    LMSource,
    PositionMask,
    ScriptedSource,
    Settings,
    Trace,
    allows,
    attempt,
    build_prompt,
    draft,
    generator_for,
    masked_sample,
    sample_statement,
    sample_token,
)
from stages.refinestat.semantics import check_prefix, task_context
from stages.refinestat.tasks import TASKS, misspelled, scripted_control

SETTINGS = Settings(temperature=0.3, resample_temperature=0.8, top_p=0.95, max_statements=8, max_line_tokens=200,
                    refine_rounds=2, min_passing=5, thresholds=None, max_checks=64)


def test_prompt_holds_other_tasks_only():
    for name, task in TASKS.items():
        prompt = build_prompt(name, {v: 10 for v in task.variables}, n_shots=6)
        assert task.expert[0] not in prompt or any(task.expert[0] in o.expert for n, o in TASKS.items() if n != name)
        assert task.description in prompt
        assert prompt.rstrip().endswith("with pm.Model() as model:")
        assert all(line not in prompt for line in task.expert if "observed" in line)
        assert prompt.endswith(":\n    ")
        assert build_prompt(name, {v: 10 for v in task.variables}, 6, prompt_end="newline").endswith(":\n")


def test_nucleus_sampling_keeps_the_top_token_at_small_top_p():
    logits = torch.tensor([0.0, 3.0, 1.0])
    assert all(sample_token(logits, 1.0, 0.01, generator_for(s)) == 1 for s in range(5))


def test_masked_sampling_draws_from_the_renormalised_allowed_tokens():
    logits = torch.tensor([0.0, 3.0, 1.0])
    gen = generator_for(3)
    draws = [masked_sample(logits, 1.0, 1.0, gen, lambda t: t != 1, 64) for _ in range(4000)]
    assert all(tok in (0, 2) for tok, _ in draws)
    share = sum(tok == 2 for tok, _ in draws) / len(draws)
    assert share == pytest.approx(math.e / (1 + math.e), abs=0.03)          # p(2) / (p(0) + p(2))
    masked = [m for _, ms in draws for m in ms]
    assert masked and all(t == 1 for t, _ in masked)                        # only the disallowed token is logged


def test_masking_removes_the_whole_nucleus_then_uses_the_full_distribution():
    logits = torch.tensor([10.0, 0.0, 0.0])
    tok, masked = masked_sample(logits, 1.0, 0.5, generator_for(1), lambda t: t == 2, 64)
    assert tok == 2 and next(t for t, _ in masked) == 0


def test_a_dead_end_returns_no_token():
    tok, masked = masked_sample(torch.zeros(5), 1.0, 1.0, generator_for(1), lambda t: False, 64)
    assert tok is None and len(masked) == 5


def test_newline_and_end_of_text_only_after_a_complete_statement():
    ctx = task_context({"y": "real"}, "y", semantic=True)
    checker = lambda text: check_prefix(text, ctx)  # noqa: E731
    assert allows(checker, 'a = pm.Normal("a"', ")")
    assert not allows(checker, 'a = pm.Normal("a"', "\n")
    assert allows(checker, 'a = pm.Normal("a")', "\n    ")
    assert allows(checker, 'a = pm.Normal("a"', ")\n")
    assert not allows(checker, 'a = pm.Normal("a"', EOS_TEXT)


PIECES = ([*"abxyz019_ .,=()\"+-*/", "", "=-", "si", "sigma", " sigma", "=0", "=0.5", "=-1", ", ", '", ', "pm", "pm.",
           ".Normal", "Normal(", "Nromal", "observed", "=y", "=x", ")", "))", "**", " * ", "exp", "len(", "shape",
           ")\n", "\n", "\n    ", EOS_TEXT, "\ufffd", "a\ufffd", "#", " #", "[", "mu", "mu=", "alpha", "beta", "tau"])


@pytest.mark.parametrize("semantic", [True, False])
def test_position_mask_agrees_with_the_checker_and_parses_each_prefix_once(semantic):
    """The memoised mask gives allows()'s answer for every piece at every position of the experts' lines (which
    also checks that the checker is prefix-closed there), and parses a prefix once: asking again costs nothing."""
    for task in TASKS.values():
        ctx = task_context(dict(task.variables), task.observed, semantic=semantic)
        checker = lambda text, ctx=ctx: check_prefix(text, ctx)  # noqa: E731
        for line in task.expert:
            for cut in range(0, len(line) + 1, 3):
                text, mask = line[:cut], PositionMask(checker, line[:cut])
                assert [mask(p) for p in PIECES] == [allows(checker, text, p) for p in PIECES], (task.name, text)
                parsed = mask.calls
                assert [mask(p) for p in PIECES[::-1]] == [allows(checker, text, p) for p in PIECES[::-1]]
                assert mask.calls == parsed <= sum(len(p) for p in PIECES)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_scripted_positive_control(task):
    """Known-invalid statements rank first in the script; masking must reach the valid (expert) program."""
    expert = list(TASKS[task].expert)
    src, budget, trace = ScriptedSource(scripted_control(task)), Budget(tokens=2000, runs=1), Trace()
    program, complete = draft(src, generator_for(0), budget, SETTINGS, "refinestat", task, [], trace)
    assert complete and program == expert
    assert budget.used_tokens == sum(len(line) + 1 for line in expert)     # one token per character and newline
    assert budget.masked >= len(expert)                                     # at least one mask per statement
    reasons = {e["reason"].split(":")[0] for e in trace.events if e["event"] == "masked"}
    assert {"distribution", "parameters", "likelihood"} <= reasons
    for method in ("syntax", "unconstrained"):
        src, budget = ScriptedSource(scripted_control(task)), Budget(tokens=2000, runs=1)
        program, _ = draft(src, generator_for(0), budget, SETTINGS, method, task, [], Trace())
        assert program[0] == misspelled(expert[0])                         # the invalid statement goes through


def test_attempt_runs_the_scripted_program_and_stops_on_success():
    ran = []

    def run(program):
        ran.append(program)
        return {"outcome": "ok", "rhat_max": 1.0, "ess_bulk_min": 900, "ess_tail_min": 900, "divergences": 0,
                "bfmi_min": 1.0, "pareto_k_max": 0.2, "elpd_loo": -10.0}

    th = SimpleNamespace(rhat_max=1.05, ess_bulk_min=400, ess_tail_min=100, bfmi_min=0.3, pareto_k_max=0.7)
    s = Settings(**{**SETTINGS.__dict__, "thresholds": th})
    res = attempt(ScriptedSource(scripted_control("diabetes")), generator_for(0), run, "refinestat", "diabetes", s,
                  Budget(tokens=2000, runs=3))
    assert ran == [list(TASKS["diabetes"].expert)] and res["best"]["score"] == 7
    assert any(e["event"] == "sandbox" for e in res["trace"])


def test_a_statement_longer_than_the_limit_is_a_dead_end():
    src = ScriptedSource([['a = pm.Normal("a", mu=0, sigma=1)']])
    ctx = task_context({"y": "real"}, "y", semantic=True)
    s = Settings(**{**SETTINGS.__dict__, "max_line_tokens": 10})
    trace = Trace()
    line, _ = sample_statement(src, generator_for(0), Budget(100, 1), s, 0.3, lambda t: check_prefix(t, ctx), trace, 0)
    assert line is None and trace.events[-1]["event"] == "dead_end"


def test_line_sampling_rewinds_the_cache(smollm2_asset):
    torch.set_num_threads(1)
    model, tok = load_causal_lm(smollm2_asset)
    prompt = build_prompt("dugongs", {"age": 20, "y": 20}, n_shots=1)
    src = LMSource(model, tok, prompt)
    s = Settings(**{**SETTINGS.__dict__, "max_line_tokens": 8})
    a = sample_statement(src, generator_for(7), Budget(100, 1), s, 0.7, None, Trace(), 0)
    b = sample_statement(src, generator_for(7), Budget(100, 1), s, 0.7, None, Trace(), 0)
    assert a == b and a[0] is not None and "\n" not in a[0]
    src.accept('alpha = pm.Normal("alpha", mu=0, sigma=1)')
    sample_statement(src, generator_for(7), Budget(100, 1), s, 0.7, None, Trace(), 1)
    src.rewind(0)
    assert src.n_lines == 0
    assert sample_statement(src, generator_for(7), Budget(100, 1), s, 0.7, None, Trace(), 0) == a


@pytest.mark.slow
def test_a_sliding_window_cache_rewinds_past_its_window(gemma3_asset):
    """Gemma 3's sliding-window layers drop states older than their window: past it the cache is restored from a
    copy taken at each accepted line, and gives the same logits as a fresh prefix."""
    torch.set_num_threads(1)
    model, tok = load_causal_lm(gemma3_asset)
    prompt = build_prompt("dugongs", {"age": 27, "y": 27}, n_shots=3)
    window = model.config.sliding_window
    lines = ['alpha = pm.Normal("alpha", mu=0, sigma=1)'] * 3
    src = LMSource(model, tok, prompt, vocab=[""] * model.config.vocab_size)
    assert src.sliding
    start = src.logits().clone()
    for line in lines:
        for t in tok(" some rejected tokens", add_special_tokens=False).input_ids:
            src.push(t)
        src.accept(line)
    for t in range(64):
        src.push(1000 + t)
    assert src.cache.get_seq_length() > window  # past the window: a crop could not roll this back
    src.rewind(0)
    assert torch.equal(src.logits(), start) and src.cache.get_seq_length() == src.checkpoints[0][0]
    for line in lines:
        src.accept(line)
    src.push(7)
    fresh = LMSource(model, tok, prompt, vocab=[""] * model.config.vocab_size)
    for line in lines:
        fresh.accept(line)
    fresh.push(7)
    assert torch.equal(src.logits(), fresh.logits())


def test_sampling_round_zero_keeps_the_first_streams_and_another_round_draws_fresh_ones():
    from stages.core.seeding import derive_seed
    from stages.refinestat.synthesize import lm_stream_seed

    keys = [(s, t, m, k) for s in range(2) for t in ("dugongs", "eight_schools") for m in ("syntax", "refinestat")
            for k in range(3)]
    assert [lm_stream_seed(0, 0, *key) for key in keys] == [derive_seed(0, "refinestat", "lm", *key) for key in keys]
    fresh = [lm_stream_seed(0, 1, *key) for key in keys]
    assert len(set(fresh)) == len(keys) and not set(fresh) & {lm_stream_seed(0, 0, *key) for key in keys}
    assert fresh != [lm_stream_seed(0, 2, *key) for key in keys]


def test_an_empty_number_literal_can_still_become_negative():
    """Prefix-closure at a bound: after a negative upper bound, 'lower=' must stay open because 'lower=-5' is valid
    (the memoised mask relies on it)."""
    ctx = task_context({"y": "real"}, "y", semantic=True)
    checker = lambda text: check_prefix(text, ctx)  # noqa: E731
    text = 'x = pm.Uniform("x", upper=-3, lower'
    assert checker(text + "=").status == "open" and checker(text + "=-").status == "open"
    assert checker(text + "=-5)").status == "complete" and checker(text + "=0").status == "dead"
    assert PositionMask(checker, text)("=-") == allows(checker, text, "=-") is True
