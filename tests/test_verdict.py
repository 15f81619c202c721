"""One reading per result (bertlab.verdict): a gain and its noise give the words every generated
sentence uses. The lab's sentences built on them, and the README's figures for the book's own BERT,
are held to the records in lab/tests/test_readings.py."""

from pathlib import Path

import pytest

from bertlab.tasks.metrics import against_baseline, clears, standard_error
from bertlab.verdict import BELOW, CLEAR, WITHIN, Reading, band, signed, verdict

ROOT = Path(__file__).resolve().parent.parent


def test_a_gain_is_clear_only_when_its_band_excludes_zero():
    assert verdict(2.2, interval=(1.3, 3.4)) == CLEAR
    assert verdict(-2.2, interval=(-3.4, -1.3)) == BELOW
    assert verdict(0.6, interval=(-1.6, 2.1)) == WITHIN
    assert verdict(3.2, 3.0) == WITHIN  # chapter 12's RTE: two standard errors are 6.0
    assert verdict(6.1, 3.0) == CLEAR and verdict(-6.1, 3.0) == BELOW
    assert verdict(6.0, 3.0) == WITHIN  # an edge that touches zero is noise
    assert verdict(0.0, interval=(0.0, 1.0)) == WITHIN
    assert verdict(1.5, 1.0, sigmas=1) == CLEAR and verdict(1.5, 1.0) == WITHIN
    assert verdict(0.1, 0.0) == CLEAR  # no noise at all: any gain is clear


def test_the_band_needs_one_kind_of_noise_and_a_sane_one():
    assert band(2.0, 0.5) == (1.0, 3.0)
    assert band(2.0, interval=(1, 3)) == (1.0, 3.0)
    for bad in (dict(), dict(noise=1.0, interval=(0, 1))):
        with pytest.raises(ValueError, match="not both or neither"):
            band(1.0, **bad)
    with pytest.raises(ValueError):
        band(1.0, -0.1)
    with pytest.raises(ValueError):
        band(1.0, interval=(2, 1))


def test_a_reading_writes_its_number_words_and_band():
    r = Reading(2.175, 1.315, 3.38, "90% of bootstrap draws over 10 seeds")
    assert r.phrase("scratch") == "+2.2 points, clear of scratch (90% of bootstrap draws over 10 seeds: +1.3 to +3.4)"
    assert Reading.from_noise(3.2, 3.0, "two standard errors").words == WITHIN
    seeds = Reading.from_seeds([72.5, 70.3, 71.3], [70.8, 71.9, 70.4])
    assert seeds.words == WITHIN and seeds.how == "the three seeds' range"
    assert Reading.from_seeds([75, 76], [70, 71]).clear and Reading.from_seeds([60], [70, 71]).words == BELOW
    assert signed(-0.04) == "0.0" and signed(0.56) == "+0.6"


def test_clears_and_against_baseline_are_one_reading():
    se = standard_error(52.7, 277)
    for score in (52.7 + 3.2, 52.7 + 2 * se + 0.01, 52.7 - 2 * se - 0.01):
        r = against_baseline(score, 52.7, 277)
        assert clears(score, 52.7, 277) == (r.words == CLEAR)
        assert r.high - r.gain == pytest.approx(2 * se)
    assert against_baseline(52.7 + 3.2, 52.7, 277).words == WITHIN
