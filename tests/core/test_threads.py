"""The per-step thread cap lowers torch's threads and never raises them."""

import pytest
import torch
from pydantic import TypeAdapter, ValidationError

from stages.core.threads import MaxThreads, cap_threads


def test_cap_lowers_and_never_raises():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert cap_threads(1) == 1 and torch.get_num_threads() == 1
        assert cap_threads(4) == 1 and torch.get_num_threads() == 1  # a cap above the current count is no raise
    finally:
        torch.set_num_threads(before)


def test_max_threads_type_refuses_zero():
    assert TypeAdapter(MaxThreads).validate_python(1) == 1
    with pytest.raises(ValidationError):
        TypeAdapter(MaxThreads).validate_python(0)
