# SPDX-License-Identifier: MIT
"""CCA responsiveness from the probing period (paper 000 Appx. B.5, Eq. 33)."""

import math

import pytest

from confucius.models import cca
from confucius.models.validate import ModelInputError


def test_k_is_the_square_of_the_angular_probing_frequency():
    # A 200 ms period: k = (2π / 0.2 s)² = (31.4159 s^-1)² = 986.96 s^-2.
    assert cca.responsiveness_from_period(0.2) == pytest.approx(986.960, rel=1e-5)
    assert cca.probing_period(986.960) == pytest.approx(0.2, rel=1e-5)


@pytest.mark.parametrize("name, rtts, paper_k_per_ms2, tolerance", [
    ("copa", 5, 0.001, 0.014),    # B.5: k_Copa = 0.001 ms^-2 at 40 ms; ours 0.000987
    ("bbr", 8, 0.0004, 0.037),    # B.5: k_BBR = 0.0004 ms^-2 at 40 ms; ours 0.000386
])
def test_paper_000_values_at_40ms_rtt(name, rtts, paper_k_per_ms2, tolerance):
    k = cca.responsiveness(name, 0.040)
    assert k == pytest.approx((2 * math.pi / (rtts * 0.040)) ** 2)
    assert k * 1e-6 == pytest.approx(paper_k_per_ms2, rel=tolerance)


def test_names_are_case_insensitive():
    assert cca.responsiveness("Copa", 0.04) == cca.responsiveness("copa", 0.04)


@pytest.mark.parametrize("call", [
    lambda: cca.responsiveness("cubic", 0.04),
    lambda: cca.responsiveness("copa", -0.04),
    lambda: cca.responsiveness("copa", 0),
    lambda: cca.responsiveness_from_period(float("nan")),
    lambda: cca.probing_period(0),
])
def test_impossible_inputs_are_refused(call):
    with pytest.raises(ModelInputError):
        call()
