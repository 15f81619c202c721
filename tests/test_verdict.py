"""One reading per result (bertlab.verdict): a gain and its noise give the words every generated
sentence uses, the sentences built on them never say more than the numbers, and the README's
figures for the book's own BERT are the record's."""

import re
import statistics
from pathlib import Path

import pytest

from bertlab.tasks.metrics import against_baseline, clears, standard_error
from bertlab.verdict import BELOW, CLEAR, WITHIN, Reading, band, signed, verdict
from lab import finetune_seeds

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


CLAIMS = re.compile(r"\b(clear|clearly|lifts?|beyond|separates?)\b", re.IGNORECASE)


def fake_seeds(pre, scr):
    n = len(pre)
    return finetune_seeds.SeedGains("sst2", 2000, 5e-4, tuple(range(n)), tuple(pre), tuple(scr))


def test_a_seeds_reading_within_the_noise_never_claims_a_gain():
    g = fake_seeds([70, 72, 71, 69, 73], [71, 70, 72, 70, 71])
    assert g.reading().words == WITHIN
    text = finetune_seeds.seeds_reading(g)
    assert "within the noise of scratch" in text and not CLAIMS.search(text)
    clear = finetune_seeds.seeds_reading(fake_seeds([75, 76, 74, 77, 75], [70, 71, 70, 69, 71]))
    assert "the gain is clear of scratch" in clear


README_OWN_BERT = re.compile(
    r"took\s+(?P<minutes>[\d.]+)\s+minutes\s+end\s+to\s+end.*?reaches\s+(?P<heldout>[\d.]+)%\s+held-out\s+masked-LM\s+accuracy\.\s+"
    r"Pre-training\s+is\s+worth\s+(?P<conll>[+-][\d.]+)\s+entity\s+F1\s+on\s+CoNLL-2003\s+\((?P<conll_pre>[\d.]+)\s+against\s+"
    r"(?P<conll_scr>[\d.]+)\),\s+(?P<squad>[+-][\d.]+)\s+F1\s+on\s+SQuAD\s+v1.1\s+\((?P<squad_pre>[\d.]+)\s+against\s+"
    r"(?P<squad_scr>[\d.]+),\s+medians\s+of\s+(?P<squad_seeds>\w+)\s+seeds,"
    r".*?(?P<sst2>[+-][\d.]+)\s+points\s+on\s+SST-2\s+with\s+(?P<n>[\d,]+)\s+labelled\s+sentences\s+"
    r"\((?P<seeds>\w+)\s+seeds;\s+(?P<level>\d+)%\s+of\s+bootstrap\s+draws\s+between\s+(?P<low>[+-][\d.]+)\s+and\s+"
    r"(?P<high>[+-][\d.]+)\)",
    re.DOTALL,
)


def test_the_readmes_figures_for_the_books_bert_are_the_records():
    from bertlab.experiments import reference
    from lab import findings, pilots, rerun

    run = reference.find()
    if run is None:
        pytest.skip("the reference run is not in this checkout")
    text = (ROOT / "README.md").read_text()
    m = README_OWN_BERT.search(text)
    assert m, "the README's paragraph on the book's own BERT no longer reads as this test expects"
    assert m["minutes"] == f"{rerun.wall_seconds(run) / 60:.1f}"
    assert m["heldout"] == f"{100 * run.provenance['pretraining']['final_heldout']['mlm_acc']:.1f}"
    g = {g["task"]: g for g in run.gains()}["conll2003"]
    assert (m["conll"], m["conll_pre"], m["conll_scr"]) == (
        f"{g['gain']:+.1f}",
        f"{g['pretrained']:.1f}",
        f"{g['scratch']:.1f}",
    )
    # SQuAD: the record's fine-tuning over its three seeds, the figure chapter 13 opens with
    sq = findings.squad_seeds(run)
    pre, scr = statistics.median(sq.pretrained), statistics.median(sq.scratch)
    words = {"ten": 10, "three": 3, "five": 5}
    assert words.get(m["squad_seeds"]) == len(sq.seeds)
    assert (m["squad"], m["squad_pre"], m["squad_scr"]) == (f"{pre - scr:+.1f}", f"{pre:.1f}", f"{scr:.1f}")
    _, rows = pilots.finetune_sweeps(pilots.PILOTS_DIR / "sst2_2000_seeds.jsonl")
    n = int(m["n"].replace(",", ""))
    g = finetune_seeds.seed_gains(rows, train_examples=n)
    r = g.reading(int(m["level"]) / 100)
    assert words.get(m["seeds"], m["seeds"]) == len(g.seeds)
    assert (m["sst2"], m["low"], m["high"]) == (f"{r.gain:+.1f}", f"{r.low:+.1f}", f"{r.high:+.1f}")
    assert r.words == CLEAR  # the README calls it a gain; the interval excludes zero
