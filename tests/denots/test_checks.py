"""The issue-37 logic on hand-made inputs: divergence by threshold, the per-field verdict metrics (long-horizon R²,
divergences, baselines at the step cap), the convergence counts and the measured field findings of the report."""

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from stages.core.config import ConfigError
from stages.denots.config import load_evaluate
from stages.denots.evaluate import is_divergent, perturbed_replicate, replicate_metrics, verdict_metrics
from stages.denots.fitting import n_workers
from stages.denots.grid import config_grid, reads_for_verdict
from stages.denots.report import budget_counts, field_findings

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("score", "threshold", "diverged"), [
    (-3e24, -10.0, True), (float("nan"), -10.0, True), (float("inf"), -10.0, True), (-math.inf, None, True),
    (-10.5, -10.0, True), (-10.0, -10.0, False), (-5.0, -10.0, False), (0.93, -10.0, False), (0.2, None, False),
])
def test_a_score_below_the_threshold_or_not_finite_is_divergence(score, threshold, diverged):
    assert is_divergent(score, threshold) is diverged


def test_divergence_threshold_above_the_floor_is_refused(tmp_path):
    from tests.conftest import write_params

    with pytest.raises(ConfigError, match="pendulum_divergence_r2"):
        load_evaluate(write_params(tmp_path, "default", **{"denots.evaluate.pendulum_divergence_r2": -0.5}))


def _results(inputs, scores: dict[tuple[str, float], list[float]], diverged: dict[tuple[str, float], list[bool]],
             baseline_best: dict[str, list[int]], cap: int = 100) -> pd.DataFrame:
    """Chosen-lr results of the default grid: pendulum scores per (field or baseline, D) and seed; val = test."""
    rows = []
    for spec in config_grid(inputs.train):
        key = (spec.name, spec.horizon)
        s = spec.seed_index
        score = scores.get(key, [0.2] * 4)[s] if spec.group != "tolerance" else 0.1
        div = diverged.get(key, [False] * 4)[s]
        best = baseline_best.get(spec.name, [50] * 4)[s] if spec.group == "baseline" else 50
        rows.append({**spec.__dict__, "run_id": replace(spec, lr=0.01).run_id, "config_id": spec.config_id,
                     "lr_chosen": True, "val_score": score, "test_score": math.nan if div else score,
                     "test_nfe": 10.0, "diverged": div, "best_step": best, "step_cap": cap})
    return pd.DataFrame(rows)


def test_feedback_checks_see_a_field_that_diverges_at_both_horizons():
    inputs = load_evaluate(ROOT / "params.yaml")
    d_long = max(inputs.train.pendulum.horizons)
    scores = {("anti_feedback", 1.0): [0.3, 0.3, 0.3, 0.3], ("anti_feedback", d_long): [0.9, 0.6, 0.4, 0.5],
              ("strict_feedback", 1.0): [0.0] * 4, ("strict_feedback", d_long): [0.0] * 4,
              ("gru_delta", 1.0): [0.9, 0.8, 0.95, 0.85]}
    div = {("strict_feedback", 1.0): [True, False, False, False],
           ("strict_feedback", d_long): [True, True, False, False]}
    results = _results(inputs, scores, div, {"gru_delta": [100, 40, 100, 40]})
    per_seed, _ = verdict_metrics(results, inputs)
    floor = inputs.evaluate.pendulum_score_floor
    # a field diverged at both D has R²(D_max) − R²(D = 1) = floor − floor = 0 on seed 0: the old check passed it
    assert per_seed["long_vs_d1__strict_feedback"][0] == 0.0
    assert per_seed["long_r2__strict_feedback"] == [floor, floor, 0.0, 0.0]
    assert per_seed["diverged__strict_feedback"] == [2.0, 1.0, 0.0, 0.0]
    assert per_seed["long_r2__anti_feedback"] == pytest.approx([0.9, 0.6, 0.4, 0.5])
    assert per_seed["diverged__anti_feedback"] == [0.0, 0.0, 0.0, 0.0]
    assert per_seed["best_baseline_pendulum"] == pytest.approx([0.9, 0.8, 0.95, 0.85])
    # gru_delta reached its best validation loss at the cap on seeds 0 and 2
    assert per_seed["baselines_best_at_cap"] == [1.0, 0.0, 1.0, 0.0]


def test_the_replicate_reruns_every_pendulum_configuration_the_verdict_reads_on_its_seeds():
    cfg = load_evaluate(ROOT / "params.yaml").train
    grid = config_grid(cfg)
    twins = {s.config_id.removesuffix("__ulp") for s in grid if s.group == "perturbed"}
    seed0 = [s for s in grid if s.group != "perturbed" and s.seed_index in cfg.stability.seeds]
    read = {s.config_id for s in seed0 if reads_for_verdict(s, cfg)}
    assert twins == read and len(twins) == len([s for s in grid if s.group == "perturbed"])  # no duplicates
    assert all(s.dataset == "pendulum" for s in grid if s.group == "perturbed")
    # the tolerance run and every baseline are read; a field other than DeNOTS's at an intermediate D is not
    groups = {s.group for s in seed0 if s.config_id in read}
    assert groups == {"horizon", "tolerance", "baseline"}
    middle = [s for s in seed0 if s.group == "horizon" and 1.0 < s.horizon < max(cfg.pendulum.horizons)]
    assert {s.field for s in middle if s.config_id in read} == {cfg.denots_field}


def _with_twins(results: pd.DataFrame, moved: dict[tuple[str, float], float]) -> pd.DataFrame:
    """``results`` plus a one-ulp twin of every seed-0 configuration; the twin's score is ``moved`` or the same."""
    base = results[(results.seed_index == 0) & (results.group != "perturbed") & (results.dataset == "pendulum")]
    twins = base.copy()
    twins["group"] = "perturbed"
    twins["config_id"] = twins.config_id + "__ulp"
    for (name, d), score in moved.items():
        at = (twins.field.where(twins.model == "denots", twins.model) == name) & (twins.horizon == d) & \
             (base.group == "horizon").to_numpy()
        twins.loc[at, ["val_score", "test_score"]] = score
    return pd.concat([results[results.group != "perturbed"], twins], ignore_index=True)


def test_the_replicate_puts_each_rerun_in_place_of_its_original_on_its_seed_only():
    inputs = load_evaluate(ROOT / "params.yaml")
    d_long = max(inputs.train.pendulum.horizons)
    scores = {("anti_feedback", 1.0): [0.3] * 4, ("anti_feedback", d_long): [0.9, 0.6, 0.4, 0.5],
              ("gru_delta", 1.0): [0.9, 0.8, 0.95, 0.85]}
    results = _with_twins(_results(inputs, scores, {}, {}), {("anti_feedback", d_long): 0.2})
    replicate = perturbed_replicate(results)
    assert set(replicate.seed_index) == {0} and "perturbed" not in set(replicate.group)
    assert len(replicate) == len(results[(results.group != "perturbed") & (results.seed_index == 0)])
    per_seed, _ = verdict_metrics(replicate, inputs)
    assert per_seed["long_r2__anti_feedback"] == pytest.approx([0.2])         # the twin's score
    assert per_seed["long_vs_d1__anti_feedback"] == pytest.approx([0.2 - 0.3])
    assert per_seed["best_baseline_pendulum"] == pytest.approx([0.9])          # an unmoved twin: same value
    rep = replicate_metrics(results, inputs)
    assert rep["seeds"] == [0] and rep["complete"] and rep["rerun"] == rep["needed"]
    assert rep["per_seed"]["long_r2__anti_feedback"] == pytest.approx([0.2])


def test_budget_counts_read_lr_edges_and_the_step_cap():
    frame = pd.DataFrame({"dataset": ["pendulum"] * 5 + ["vowels"], "group": ["horizon"] * 3 + ["baseline"] * 3,
                          "lr": [0.003, 0.01, 0.03, 0.03, 0.01, 0.003], "train_steps": [80, 300, 300, 120, 300, 100],
                          "best_step": [30, 300, 250, 70, 300, 100], "step_cap": [300] * 5 + [100],
                          "name": ["anti_feedback", "anti_feedback", "strict_feedback", "gru_delta", "neural_cde",
                                   "gru_delta"], "horizon": [1.0, 30.0, 30.0, 1.0, 1.0, 1.0]})
    c = budget_counts(frame, [0.003, 0.01, 0.03])
    assert c["all"] == {"n": 5, "lr_low": 1, "lr_high": 2, "lr_edge": 3, "at_cap": 3, "best_at_cap": 2}
    assert c["baselines"] == {"n": 2, "lr_low": 0, "lr_high": 1, "lr_edge": 1, "at_cap": 1, "best_at_cap": 1}
    assert c["step_cap"] == 300 and c["grid"] == 3
    assert c["edge_configs"] == ["anti_feedback at D = 1: lr 0.003", "gru_delta at D = 1: lr 0.03",
                                 "strict_feedback at D = 30: lr 0.03"]


def _fields(anti_long: list[float], strict_long: list[float], speeds: dict[str, float]) -> pd.DataFrame:
    rows = []
    for field, long in (("anti_feedback", anti_long), ("strict_feedback", strict_long)):
        for d, scores in ((1.0, [0.2, 0.2, 0.2]), (30.0, long)):
            for s, score in enumerate(scores):
                rows.append({"dataset": "pendulum", "group": "horizon", "field": field, "horizon": d, "seed_index": s,
                             "test_score": score, "diverged": False, "state_rms": 2.0,
                             "end_speed_rms": speeds[field] if d == 30.0 else 1.0})
    return pd.DataFrame(rows)


def test_field_findings_say_same_only_within_the_seed_spread_and_read_the_speed():
    same = field_findings(_fields([0.90, 0.92, 0.88], [0.91, 0.89, 0.90], {"anti_feedback": 0.01,
                                                                          "strict_feedback": 0.5}), -1.0)
    assert "within the seed spread, so the two NF fields behave the same here" in same[0]
    assert "anti_feedback" in same[1] and "settled by the end of the horizon" in same[1]
    assert "strict_feedback" in same[2] and "still moving at the end" in same[2]  # 0.5 / 2.0 = 25% of the state
    apart = field_findings(_fields([0.90, 0.92, 0.91], [0.50, 0.52, 0.51], {"anti_feedback": 0.01,
                                                                           "strict_feedback": 0.01}), -1.0)
    assert "the anti field is better beyond the seed spread" in apart[0]
    assert "difference +0.400" in apart[0]


def test_training_processes_are_the_thread_budget_over_the_per_process_cap():
    assert n_workers(2, 1) == 2 and n_workers(1, 1) == 1 and n_workers(2, 4) == 1 and n_workers(8, 2) == 4


def test_parallel_training_gives_the_same_runs_as_one_process(tmp_path):
    """Each run is seeded on its own: two processes and one give identical losses and checkpoints."""
    import torch

    from stages.denots.config import load_train
    from stages.denots.fitting import train_all
    from stages.denots.grid import RunSpec
    from stages.denots.io import SplitTensors, Task
    from stages.denots.neural_cde import spline_coefficients

    cfg = load_train(ROOT / "params.yaml")
    cfg = cfg.model_copy(update={"hidden": 4, "lrs": [0.01], "trainer": cfg.trainer.model_copy(update={"max_steps": 3}),
                                 "early_stopping": cfg.early_stopping.model_copy(update={"eval_every": 1})})
    gen = torch.Generator().manual_seed(0)

    def split(n):
        t = torch.sort(torch.rand(n, 6, generator=gen), dim=1).values
        v = torch.cat([t.unsqueeze(-1), torch.randn(n, 6, 1, generator=gen)], -1)
        return SplitTensors(v, torch.full((n,), 6), torch.randn(n, 1, generator=gen), spline_coefficients(v))

    task = Task("pendulum", {"train": split(8), "val": split(4), "test": split(4)}, 2, 1, 0.0, 1.0, True)
    specs = [RunSpec("pendulum", "denots", "anti_feedback", d, 1e-3, 1e-4, 0, "horizon", 0.01) for d in (1.0, 3.0)]
    specs.append(RunSpec("pendulum", "gru_delta", "", 1.0, 1e-3, 1e-4, 0, "baseline", 0.01))
    one = train_all(specs, {"pendulum": task}, {}, cfg, 0, None, 1)
    two = train_all(specs, {"pendulum": task}, {}, cfg, 0, None, 2)
    for a, b in zip(one, two, strict=True):
        assert a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]  # row, losses, NFEs, val curve
    assert np.isfinite([x for o in one for x in o[1]]).all()


def test_lr_keys_name_every_configuration_of_the_grid_and_the_ulp_reruns_share_them():
    from stages.denots.config import TrainConfig, lr_keys

    cfg = load_evaluate(ROOT / "params.yaml").train
    keys = set(lr_keys(cfg))
    assert {s.lr_key for s in config_grid(cfg)} == keys
    perturbed = [s for s in config_grid(cfg) if s.group == "perturbed"]
    assert perturbed and all(s.lr_key in keys for s in perturbed)
    fixed = TrainConfig.model_validate({**cfg.model_dump(), "lr_per_config": dict.fromkeys(keys, cfg.lrs[0])})
    from stages.denots.grid import run_grid

    assert len(run_grid(fixed)) == len(config_grid(cfg)) and {s.lr for s in run_grid(fixed)} == {cfg.lrs[0]}
    swept = TrainConfig.model_validate({**cfg.model_dump(), "lr_per_config": None})
    assert len(run_grid(swept)) == len(config_grid(cfg)) * len(cfg.lrs)


def test_lr_per_config_must_cover_the_grid_with_lrs_of_the_grid():
    from pydantic import ValidationError

    from stages.denots.config import TrainConfig, lr_keys

    cfg = load_evaluate(ROOT / "params.yaml").train
    keys = lr_keys(cfg)
    with pytest.raises(ValidationError, match="no lr for"):
        TrainConfig.model_validate({**cfg.model_dump(), "lr_per_config": dict.fromkeys(keys[1:], cfg.lrs[0])})
    with pytest.raises(ValidationError, match="must be among lrs"):
        TrainConfig.model_validate({**cfg.model_dump(), "lr_per_config": dict.fromkeys(keys, 0.5)})
