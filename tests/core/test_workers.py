"""Independent seeded runs give the same results, in job order, on one process or several."""

import pytest
import torch

from stages.core.workers import in_worker, map_runs, n_workers


def seeded_draw(job: tuple[int, int], shared: float) -> tuple[int, list[float], int, bool]:
    """A run seeded from its job alone: its index, a draw scaled by the shared value, its thread count, where it ran."""
    index, seed = job
    g = torch.Generator().manual_seed(seed)
    return index, (torch.randn(3, generator=g) * shared).tolist(), torch.get_num_threads(), in_worker()


def failing(job: int, shared: None) -> int:
    if job == 2:
        raise ValueError(f"run {job} failed")
    return job


def test_processes_are_the_thread_budget_over_the_cap_and_at_most_one_per_job():
    assert n_workers(2, 1) == 2 and n_workers(1, 1) == 1 and n_workers(2, 4) == 1 and n_workers(8, 2) == 4
    assert n_workers(8, 1, n_jobs=3) == 3 and n_workers(2, 1, n_jobs=1) == 1 and n_workers(2, 1, n_jobs=0) == 1


def test_results_are_in_job_order_and_equal_on_one_process_or_two():
    jobs = [(i, 100 + 7 * i) for i in range(5)]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        one = map_runs(seeded_draw, jobs, 2.0, threads=1, max_threads=1, desc="one")
        assert torch.get_num_threads() == 1  # in this process the runs are capped the same way
        torch.set_num_threads(2)
        two = map_runs(seeded_draw, jobs, 2.0, threads=2, max_threads=1, desc="two")
        assert torch.get_num_threads() == 2  # with workers this process keeps the step's budget
    finally:
        torch.set_num_threads(before)
    assert [r[0] for r in two] == list(range(5))
    assert [r[1] for r in one] == [r[1] for r in two]
    assert {r[2] for r in one} == {1} and {r[2] for r in two} == {1}
    # a run knows whether it is in a worker (its own progress bar stays off there); this process is not one
    assert {r[3] for r in one} == {False} and {r[3] for r in two} == {True} and not in_worker()
    # the shared value reached every worker
    expected = (torch.randn(3, generator=torch.Generator().manual_seed(100)) * 2.0).tolist()
    assert two[0][1] == expected


def test_a_failing_run_raises_from_the_workers():
    with pytest.raises(ValueError, match="run 2 failed"):
        map_runs(failing, list(range(4)), None, threads=2, max_threads=1, desc="fail")
