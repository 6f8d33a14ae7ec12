"""The report's binomial chance that a seed clears both run-rate margins, against hand-computed values."""

from __future__ import annotations

import pytest

from stages.refinestat.report import binom_pmf, seed_clears_probability

PAPER_RATES = {"unconstrained": 0.11, "syntax": 0.21, "refinestat": 0.50}


def test_binom_pmf_hand_values() -> None:
    assert binom_pmf(0, 3, 0.5) == pytest.approx(0.125)
    assert binom_pmf(1, 3, 0.11) == pytest.approx(3 * 0.11 * 0.89 ** 2)


def test_seed_clears_at_paper_rates_three_attempts() -> None:
    # R ~ Bin(3, .5) must exceed U ~ Bin(3, .11) and S ~ Bin(3, .21) by >= 1 (margin 0.15 of 3 attempts):
    # sum_r P(R=r) P(U<=r-1) P(S<=r-1) = .375*.7050*.4930 + .375*.9664*.8862 + .125*.99867*.99074
    p_u = [0.89 ** 3, 0.89 ** 3 + 3 * 0.11 * 0.89 ** 2, 1 - 0.11 ** 3]
    p_s = [0.79 ** 3, 0.79 ** 3 + 3 * 0.21 * 0.79 ** 2, 1 - 0.21 ** 3]
    hand = 0.375 * p_u[0] * p_s[0] + 0.375 * p_u[1] * p_s[1] + 0.125 * p_u[2] * p_s[2]
    assert seed_clears_probability(PAPER_RATES, 3, 0.15) == pytest.approx(hand)
    assert hand == pytest.approx(0.575, abs=0.002)


def test_seed_clears_extremes() -> None:
    assert seed_clears_probability({"unconstrained": 0.0, "syntax": 0.0, "refinestat": 1.0}, 3, 0.15) == 1.0
    assert seed_clears_probability({"unconstrained": 0.5, "syntax": 0.5, "refinestat": 0.0}, 3, 0.15) == 0.0
    # a margin of 0.4 of 3 attempts needs a difference of 2 runnable attempts
    assert seed_clears_probability({"unconstrained": 0.0, "syntax": 0.0, "refinestat": 0.5}, 3, 0.4) == \
        pytest.approx(0.5)
