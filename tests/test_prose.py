"""Generated sentences: numbers under ten in words, plurals and verbs that agree with their count."""

import pytest

from bertlab.prose import count, number, plural, rate, verb_agreeing


def test_numbers_under_ten_are_words_and_larger_ones_digits():
    assert [number(n) for n in (0, 1, 3, 9)] == ["zero", "one", "three", "nine"]
    assert number(10) == "10" and number(1250) == "1,250" and number(-2) == "-2"
    with pytest.raises(TypeError, match="whole numbers"):
        number(2.5)
    with pytest.raises(TypeError):
        number(True)


def test_nouns_and_verbs_agree_with_their_count():
    assert count(1, "seed") == "one seed" and count(3, "seed") == "three seeds"
    assert count(12, "epoch") == "12 epochs" and count(0, "window") == "zero windows"
    assert count(2, "layer", "keeps") == "two layers keep" and count(1, "layer", "keeps") == "one layer keeps"
    assert count(1, "comparison", "separates") == "one comparison separates"
    assert count(4, "comparison", "separates") == "four comparisons separate"
    assert [plural(w) for w in ("match", "box", "entry", "day", "analysis", "bias")] == [
        "matches",
        "boxes",
        "entries",
        "days",
        "analyses",
        "biases",
    ]
    assert [verb_agreeing(2, v) for v in ("is", "has", "carries", "reaches", "passes", "beat")] == [
        "are",
        "have",
        "carry",
        "reach",
        "pass",
        "beat",
    ]


def test_rate_writes_learning_rates_as_papers_do():
    rates = (1e-4, 5e-4, 0.002, 1.2e-3, 2e-5, 3e-3)
    assert [rate(x) for x in rates] == ["1e-4", "5e-4", "2e-3", "1.2e-3", "2e-5", "3e-3"]
    assert rate(0.5) == "0.5" and rate(1) == "1"
    for bad in (0, -1e-4, float("nan"), True, "5e-4"):
        with pytest.raises(ValueError, match="positive learning rate"):
            rate(bad)


def test_and_list_joins_as_a_sentence_lists():
    from bertlab.prose import and_list

    assert and_list(["MRPC"]) == "MRPC"
    assert and_list(["MRPC", "RTE"]) == "MRPC and RTE"
    assert and_list(("SST-2", "MRPC", "RTE")) == "SST-2, MRPC and RTE"
    with pytest.raises(ValueError, match="at least one"):
        and_list([])
