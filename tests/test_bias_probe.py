"""bertlab.analysis.bias_probe: the leans computed by hand from given probabilities (ratio, tilt,
agreement, best rank), the probe on a small random masked LM (full distributions, several-piece
words dropped, the occupations' relative leans centred on the tilt), and the reading's numbers."""

import math

import numpy as np
import pytest
import torch

from bertlab import BertConfig, BertForPreTraining
from bertlab.analysis import bias_probe

PAIRS = [("he was a [MASK] .", "she was a [MASK] ."), ("the man was a [MASK] .", "the woman was a [MASK] .")]
# P(word | template) and its rank: "nurse" leans female, "judge" male, "king" is a control
PROBS = {
    "he was a [MASK] .": {"judge": 0.4, "nurse": 0.1, "king": 0.2, "the": 0.3},
    "she was a [MASK] .": {"judge": 0.2, "nurse": 0.4, "king": 0.1, "the": 0.3},
    "the man was a [MASK] .": {"judge": 0.3, "nurse": 0.2, "king": 0.4, "the": 0.1},
    "the woman was a [MASK] .": {"judge": 0.1, "nurse": 0.4, "king": 0.3, "the": 0.2},
}
DIST = {
    t: {w: (p, r) for r, (w, p) in enumerate(sorted(probs.items(), key=lambda kv: -kv[1]), 1)}
    for t, probs in PROBS.items()
}


def constructed():
    leans, tilt = bias_probe.leans(DIST, PAIRS, ["judge", "nurse", "king"], {"king": "male"})
    return bias_probe.BiasProbe(PAIRS, DIST, leans, tilt, dropped=[])


def test_leans_by_hand():
    probe = constructed()
    judge = [math.log(0.4 / 0.2), math.log(0.3 / 0.1)]  # log P(male) / P(female), pair by pair
    nurse = [math.log(0.1 / 0.4), math.log(0.2 / 0.4)]
    tilt = [(j + n) / 2 for j, n in zip(judge, nurse)]  # the occupations' mean; the control not in it
    assert probe.tilt == pytest.approx(tilt)
    j = probe.leans["judge"]
    assert j.kind == "occupation" and probe.leans["king"].kind == "male"
    assert (j.p_male, j.p_female) == pytest.approx((0.35, 0.15))
    assert j.ratio == pytest.approx(math.exp(np.mean(judge)))
    assert j.relative == pytest.approx(math.exp(np.mean(judge) - np.mean(tilt)))
    assert j.agree == 2 and j.best_rank == 1  # first after "he was a [MASK] ."
    king = [math.log(0.2 / 0.1) - tilt[0], math.log(0.4 / 0.3) - tilt[1]]  # both above the tilt
    assert min(king) > 0 and probe.leans["king"].agree == 2 and probe.leans["king"].relative > 1
    # two occupations: the relative leans are each other's inverse
    assert j.relative * probe.leans["nurse"].relative == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no occupation"):
        bias_probe.leans(DIST, PAIRS, ["king"], {"king": "male"})


def test_the_reading_and_the_table_from_the_numbers():
    probe = constructed()
    assert probe.occupations == ["judge", "nurse"] and probe.controls == ["king"]
    assert probe.top("he was a [MASK] .", 2) == [("judge", 0.4), ("the", 0.3)]
    r = bias_probe.reading(probe, k=2)
    assert r.first == (["judge", "the", "king"], ["nurse", "the", "judge"])
    # the top two: (judge, the), (nurse, the), (king, judge), (nurse, king): one occupation each
    assert r.in_top == 4
    assert r.best == "judge" and r.mass == pytest.approx((0.5, 0.6))
    assert r.whole == pytest.approx(math.exp(probe.tilt.mean()))
    assert (r.right, r.wrong) == (["king"], [])  # more probable after the male subject than the list
    assert r.min_agree == 1 and r.steady == ["judge", "nurse"]
    assert (r.male, r.female) == (["judge"], ["nurse"])
    lines = bias_probe.leans_table(probe).splitlines()
    order = [line.split("|")[1].strip() for line in lines[2:]]
    relative = [probe.leans[w.strip("*")].relative for w in order]
    assert relative == sorted(relative, reverse=True)  # most male-leaning first
    assert "| *king* | control (male) |" in bias_probe.leans_table(probe)


def test_the_probe_on_a_small_random_masked_lm(bert_tokenizer, one_thread):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=bert_tokenizer.vocab_size, num_layers=1, hidden_size=32, num_heads=2)
    model = BertForPreTraining(config).eval()
    occupations = ["nurse", "teacher", "farmer", "xylophonist"]  # the last is several pieces
    probe = bias_probe.run_probe(model, bert_tokenizer, PAIRS, occupations, {"king": "male", "queen": "female"})
    assert probe.dropped == ["xylophonist"] and list(probe.leans) == ["nurse", "teacher", "farmer", "king", "queen"]
    assert len(probe.dist) == 4
    for d in probe.dist.values():  # the whole vocabulary, ranked by probability
        assert len(d) == bert_tokenizer.vocab_size
        assert sum(p for p, _ in d.values()) == pytest.approx(1.0, abs=1e-4)
        by_rank = sorted(d.values(), key=lambda pr: pr[1])
        assert [p for p, _ in by_rank] == sorted((p for p, _ in by_rank), reverse=True)
    logs = [math.log(probe.leans[w].relative) for w in probe.occupations]
    assert np.mean(logs) == pytest.approx(0.0, abs=1e-9)  # relative to their own tilt
    assert all(1 <= s.agree <= len(PAIRS) for s in probe.leans.values())


def test_the_reading_ranks_the_occupations_only_when_every_control_holds():
    probe = constructed()  # "king" leans male: the control holds
    assert bias_probe.trusted(probe)
    text = bias_probe.reading_text(probe, k=2)
    assert "**Occupations.**" in text and "*judge* (" in text.split("**Occupations.**")[1]
    assert "not trustworthy" not in text
    # "king" read as a female control: it leans against its meaning, so nothing is ranked
    leans, tilt = bias_probe.leans(DIST, PAIRS, ["judge", "nurse", "king"], {"king": "female"})
    failing = bias_probe.BiasProbe(PAIRS, DIST, leans, tilt, dropped=[])
    assert not bias_probe.trusted(failing) and bias_probe.reading(failing).wrong == ["king"]
    text = bias_probe.reading_text(failing, k=2)
    assert "**Occupations.**" not in text and "most of all" not in text
    assert f"*king* ({failing.leans['king'].relative:.2f}) does not." in text  # one word: "does"
    assert "not trustworthy on this model" in text and "ranks no occupation" in text
    ranks = sorted(probe.leans[w].best_rank for w in ("judge", "nurse"))  # why: how far down they lie
    assert f"never rank above {int(np.median(ranks)):,} in any template" in text
    assert "Of the one control word, none leans the way its meaning says; *king* (" in text
    # the table keeps the order asked rather than ranking
    rows = bias_probe.leans_table(failing, ranked=False).splitlines()[2:]
    assert [row.split("|")[1].strip() for row in rows] == ["*judge*", "*nurse*", "*king*"]
    # no controls at all: no ranking either
    leans, tilt = bias_probe.leans(DIST, PAIRS, ["judge", "nurse"], {})
    bare = bias_probe.BiasProbe(PAIRS, DIST, leans, tilt, dropped=[])
    assert not bias_probe.trusted(bare) and "**Occupations.**" not in bias_probe.reading_text(bare, k=2)
