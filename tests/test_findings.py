"""The openings chapters 15 and 16 compute from what the page measures, and the readings beside
them: generated from the measured numbers, and saying what they say."""

from __future__ import annotations

import re

import torch

from bertlab.experiments import findings


def test_heads_finding_reads_the_measured_tables():
    L, A = 2, 4
    heads = {k: torch.full((L, A), 0.05) for k in ("cls", "sep", "punct", "prev", "self", "next")}
    heads["sep"][1, 2] = 0.8  # one [SEP] sink
    heads["prev"][0, 1] = 0.9  # one previous-token head
    heads["next"][0, 3] = 0.6  # and one next-token head
    heads["entropy"] = torch.linspace(0.1, 2.0, L * A).reshape(L, A)
    heads["uniform_entropy"] = torch.full((L, A), 3.0)
    text = findings.heads_finding(heads, {"cls": 0.03, "sep": 0.06}, 200)
    assert "over 200 held-out segments" in text and "80%" in text  # the sink, from sink_reading
    assert "at least three times its share" in text  # numbers under ten in words
    assert "Two of its eight heads put more than half of their attention on one fixed neighbour" in text
    assert "from 0.10 to 2.00 nats, against 3.00" in text
    heads["next"][0, 3] = 0.4
    assert "One of its eight heads puts more than half of its attention" in findings.heads_finding(
        heads, {"cls": 0.03, "sep": 0.06}, 200
    )
    assert "the heads of the book's own BERT over 200" in text
    other = findings.heads_finding(heads, {"cls": 0.03, "sep": 0.06}, 200, "all-MiniLM-L6-v2")
    assert "the heads of all-MiniLM-L6-v2 over 200" in other


class FakeStudy:
    """What features_finding and features_reading read of a feature_based.FeatureStudy: each
    difference has the same standard error `se`."""

    def __init__(self, f1, finetuned, se=1.0, n_train=1000, n_dev=500, num_layers=4, ft_epochs=1, tagger_epochs=8):
        self.f1, self.finetuned, self.se = f1, finetuned, se
        self.n_train, self.n_dev, self.num_layers = n_train, n_dev, num_layers
        self.settings = {"finetune": {"epochs": ft_epochs}, "tagger": {"epochs": tagger_epochs}}

    def ranking(self):
        return sorted(self.f1, key=lambda n: -self.f1[n])

    def reading(self, a, b):
        from bertlab.verdict import Reading

        score = {**self.f1, "fine-tuned": self.finetuned}
        return Reading.from_noise(
            score[a] - score[b], self.se, f"two bootstrap standard errors over {self.n_dev} dev sentences"
        )


TABLE7 = {
    "first_layer": 68.8,
    "last_hidden": 71.2,
    "sum_all": 69.9,
    "second_to_last": 73.5,
    "sum_last_four": 69.9,
    "concat_last_four": 71.8,
}


def test_features_finding_reads_the_best_against_the_runner_up_and_fine_tuning():
    text = findings.features_finding(FakeStudy(TABLE7, 53.7, se=1.0), "the book's own BERT")
    assert text.startswith("**In short.** On the frozen hidden states of the book's own BERT")
    assert "trained on 1,000 CoNLL-2003 sentences" in text and "Table 7's six combinations" in text
    assert "73.5 with `second_to_last`, the best" in text and "68.8 with `first_layer`, the worst" in text
    # +1.7 against two standard errors of 1.0: within the noise of the runner-up
    assert "the best is +1.7 points, within the noise of the runner-up, `concat_last_four`" in text
    assert "(two bootstrap standard errors over 500 dev sentences: -0.3 to +3.7)" in text
    assert "reaches 53.7: the best frozen combination is +19.8 points, clear of it" in text
    # frozen ahead of a fine-tuning with fewer passes: the page says it compares budgets
    assert "one pass of the whole encoder" in text and "eight passes of each tagger" in text
    assert "within 0.3 of fine-tuning (96.1 against 96.4, quoted)" in text
    # a clear best, and fine-tuning ahead: no word on budgets
    tight = findings.features_finding(FakeStudy(TABLE7, 80.0, se=0.5, n_train=8), "MiniLM")
    assert "the best is +1.7 points, clear of the runner-up" in tight and "trained on eight CoNLL-2003" in tight
    assert "-6.5 points, below it" in tight and "budget" not in tight
    one = findings.features_finding(FakeStudy(TABLE7, 80.0, n_train=1), "x")
    assert "trained on one CoNLL-2003 sentence reaches" in one


def test_features_reading_groups_the_mixed_combinations_by_their_verdict():
    text = findings.features_reading(FakeStudy(TABLE7, 53.7, se=0.5), "the encoder above")
    assert "the best combination is `second_to_last` (73.5; the paper's is `concat_last_four`, 96.1)" in text
    # against the last layer (71.2): concat +0.6 within, both sums -1.3 below (bands of +-1.0)
    assert (
        "Of the three combinations that mix several layers, one is within the noise of the last layer alone "
        "(`concat_last_four`) and two are below it (`sum_all` and `sum_last_four`); in the paper all three "
        "score above it." in text
    )
    assert "(With four layers, `sum_all` and `sum_last_four` are the same sum.)" in text
    assert "The second-to-last layer is +2.3 points, clear of the last (" in text
    assert "+19.8 points, clear of fine-tuning on the same sentences" in text and "eight passes" in text
    six = findings.features_reading(
        FakeStudy({**TABLE7, "sum_all": 75.0, "sum_last_four": 76.0, "concat_last_four": 77.0}, 80.0, num_layers=6),
        "MiniLM",
    )
    assert "all three are clear of the last layer alone" in six and "same sum" not in six and "budget" not in six
    for text in (text, six):
        assert not re.search(r"\b[2-9] (combinations|passes|of)\b", text)  # numbers under ten in words
