"""The openings the lab publishes for chapters 10 to 14 and 17 (lab.findings): generated from the
record's and the studies' numbers, and saying what they say."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pytest

from lab import findings


@dataclass
class Lever:
    label: str
    points: float
    tokens: int = 10_240_000


class FakeRun:
    """What the findings read of a reference.ReferenceRun."""

    def __init__(self, gains, acc=0.376, seconds=3012.0):
        self._gains = gains
        self.provenance = {"pretraining": {"final_heldout": {"mlm_acc": acc}, "train_seconds": seconds}}

    def gains(self):
        return self._gains

    def machine(self):
        return "a 2-core CPU (test)"

    def config(self):
        from bertlab import BertConfig

        return BertConfig.preset("tiny", vocab_size=100)


def row(task, pre, scr, seeds=(0,), n=None):
    return dict(
        task=task,
        train_examples=n,
        pretrained=pre,
        scratch=scr,
        gain=pre - scr,
        pretrained_seeds=list(seeds),
        scratch_seeds=list(seeds),
    )


def test_pretraining_finding_names_each_lever_with_its_points():
    levers = [Lever("mask-30", 8.1), Lever("pairs", 4.4), Lever("phases-64-128", 2.9), Lever("nsp", -4.2)]
    text = findings.pretraining_finding(FakeRun([]), levers)
    assert "37.6%" in text and "50 minutes" in text and "a 2-core CPU (test)" in text
    for x in levers[:3]:
        assert f"({x.points:+.1f})" in text
    assert "NSP loss cost 4.2 points" in text
    assert "NSP loss added 1.0" in findings.pretraining_finding(FakeRun([]), [*levers[:3], Lever("nsp", 1.0)])
    with pytest.raises(ValueError, match="no lever"):
        findings.pretraining_finding(FakeRun([]), levers[:2])


def test_norm_position_reading_says_behind_only_when_the_numbers_do():
    def run(accs, steps):
        return {
            "name": "r",
            "minutes": 50,
            "heldout": [
                {"tokens": 1_000_000 * (i + 1), "mlm_acc": a, "step": s} for i, (a, s) in enumerate(zip(accs, steps))
            ],
        }

    single = Lever("post-ln", -1.4)
    ahead = findings.norm_position_reading(single, run([0.25, 0.38], [10, 20]), run([0.25, 0.36], [10, 18]))
    assert "1.4 points behind" in ahead and "did not fall behind" in ahead and "38.0% against pre-LN's 36.0%" in ahead
    behind = findings.norm_position_reading(single, run([0.25, 0.33], [10, 20]), run([0.25, 0.36], [10, 18]))
    assert "ended behind" in behind and "did not fall behind" not in behind
    assert "38.0% and 36.0% after 2.0M tokens" in ahead  # the last count both reached (no phases here)
    apart = {"name": "x", "minutes": 50, "heldout": [{"tokens": 7, "mlm_acc": 0.1, "step": 1}]}
    with pytest.raises(ValueError, match="never scored"):
        findings.norm_position_reading(single, run([0.25], [10]), apart)


def test_squad_finding_prefers_the_seed_medians():
    from lab.finetune_seeds import SeedGains

    run = FakeRun([row("squad", 12.4, 8.3)])
    assert "12.4, against 8.3" in findings.squad_finding(run) and "one seed per arm" in findings.squad_finding(run)
    seeds = SeedGains("squad", None, 5e-4, (0, 1, 2), (12.4, 14.8, 13.3), (8.3, 8.0, 8.3))
    text = findings.squad_finding(run, seeds)
    assert "13.3, against 8.3" in text and "medians of three seeds" in text and "+5.0 points" in text
    with pytest.raises(ValueError, match="no squad results"):
        findings.squad_finding(FakeRun([]))


def test_sst2_finding_reads_each_size_by_its_seeds_largest_first():
    from lab.finetune_seeds import SeedGains

    def sst2(n, pre, scr):
        return dict(row("sst2", statistics.median(pre), statistics.median(scr), seeds=(0, 1, 2), n=n),
                    pretrained_scores=pre, scratch_scores=scr)  # fmt: skip

    run = FakeRun(
        [sst2(500, [66.3, 67.4, 66.6], [63.1, 62.7, 64.0]), sst2(2000, [72.5, 70.3, 71.3], [70.8, 71.9, 70.4])]
    )
    text = findings.sst2_finding(run)
    assert text.index("With 2,000") < text.index("with 500")  # the largest size leads
    assert "+0.5 points, within the noise of scratch (the three seeds' range: -1.6 to +2.1)" in text
    assert "+3.5 points, clear of scratch (the three seeds' range: +2.3 to +4.7)" in text
    ten = SeedGains("sst2", 2000, 5e-4, tuple(range(10)), tuple([72.0] * 10), tuple([70.0] * 10))
    assert "+2.0 points, clear of scratch (90% of bootstrap draws over 10 seeds" in findings.sst2_finding(run, ten)
    with pytest.raises(ValueError, match="no SST-2 results"):
        findings.sst2_finding(FakeRun([]))


def test_ablations_finding_states_the_three_results_with_the_records_measured_gain():
    from bertlab.experiments import reference
    from lab import ablations_reading as ablations

    rec, run = ablations.load(), reference.find()
    if rec is None or run is None:
        pytest.skip("the ablation study or the book's record is not in this copy")
    text = findings.ablations_finding(rec, run)
    for question in ("Table 5's question", "Table 6's question", "against the scratch control"):
        assert question in text
    many = findings.sst2_seeds(ablations.beside_reference(rec, run).train_examples)
    assert many.reading().phrase("scratch") in text  # the one number for SST-2, as chapter 11 gives it


def test_ner_finding_ranks_the_gain_among_the_tasks():
    gains = [row("sst2", 79.5, 76.0, n=8000), row("conll2003", 81.2, 64.7), row("squad", 12.4, 8.3)]
    text = findings.ner_finding(FakeRun(gains))
    assert "81.2" in text and "64.7" in text and "+16.5 points" in text and "one seed per arm" in text
    assert "the largest gain of any task" in text
    gains[0] = row("sst2", 99.0, 70.0, n=8000)
    assert "behind SST-2 among the tasks" in findings.ner_finding(FakeRun(gains))


def test_the_book_record_gives_its_findings():
    from bertlab.experiments import reference

    run = reference.find()
    if run is None:
        pytest.skip("the book's record is not in this copy")
    text = findings.ner_finding(run)
    ner = next(g for g in run.gains() if g["task"] == "conll2003")
    assert f"{ner['pretrained']:.1f}" in text and f"{ner['gain']:+.1f}" in text


def test_pairs_finding_says_the_model_is_too_small_only_when_no_task_separates():
    class Ex:
        def __init__(self, label):
            self.label = label

    dev = {"rte": [Ex(1)] * 52 + [Ex(0)] * 48}  # the majority label scores 52.0

    def rte(pre, scr):
        return dict(row("rte", statistics.median(pre), statistics.median(scr), seeds=(0, 1, 2)), metric="accuracy",
                    pretrained_scores=pre, scratch_scores=scr)  # fmt: skip

    near = findings.pairs_finding(FakeRun([rte([56.0, 49.8, 56.7], [55.2, 54.9, 56.0])]), dev)
    assert "does not separate" in near and "too small to show the paper's effect" in near
    assert "+4.0 from always answering the majority label (within the noise of it)" in near  # 2 SE on 100: 10.0
    far = findings.pairs_finding(FakeRun([rte([70.0, 71.0, 72.0], [55.0, 56.0, 57.0])]), dev)
    assert "separates the book's own BERT from its twin from scratch on one task" in far
    assert "too small" not in far and "clear of it" in far
