# SPDX-License-Identifier: MIT
import pytest

from confucius.units import UnitError, format_rate, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("text, bps", [
    ("20mbit", 20e6), ("20Mbit", 20e6), ("95mbit", 95e6), ("1gbit", 1e9), ("500kbit", 5e5),
    ("1mbps", 8e6), ("1000", 1000.0), (2e6, 2e6),
])
def test_rates_read_as_tc_reads_them(text, bps):
    assert parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize("text, seconds", [
    ("40ms", 0.04), ("250ms", 0.25), ("1s", 1.0), ("100us", 1e-4), ("0.5", 0.5), ("2sec", 2.0),
])
def test_times(text, seconds):
    assert parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text, size", [("32mb", 32 * 2**20), ("15kb", 15 * 1024), ("1514", 1514)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["fast", "20 parsecs", "", "-5ms", "ms"])
def test_bad_quantities_are_rejected_with_the_expected_form(text):
    with pytest.raises(UnitError, match="time"):
        parse_time(text)


def test_rates_print_in_tc_style():
    assert format_rate(95e6) == "95Mbit"
    assert format_rate(1.5e9) == "1.5Gbit"
