"""Standardisation reads the fit rows alone: held-out rows never inform the transform."""

import numpy as np
import pytest

from stages.refinestat.data import standardise_on


def test_standardise_on_fit_rows_only():
    values = np.array([1.0, 2.0, 3.0, 100.0])
    z = standardise_on(values, np.array([0, 1, 2]))
    assert z[:3] == pytest.approx([-1.0, 0.0, 1.0])           # mean 2, sd 1 of the fit rows
    assert z[3] == pytest.approx(98.0)                         # the held-out row does not move them
    changed = standardise_on(np.array([1.0, 2.0, 3.0, -50.0]), np.array([0, 1, 2]))
    assert changed[:3] == pytest.approx(z[:3])
