"""The lab's readings never say more than their numbers (bertlab.verdict's words), and the README's
figures for the book's own BERT are the records'."""

import re
import statistics
from pathlib import Path

import pytest

from bertlab.verdict import CLEAR, WITHIN
from lab import finetune_seeds

ROOT = Path(__file__).resolve().parents[2]


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
