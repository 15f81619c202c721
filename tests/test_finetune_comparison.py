"""The words under chapter 11's live comparison (bertlab.experiments.finetune_comparison) and the
standard error of a difference of two accuracies they lean on."""

import math

import pytest

from bertlab.experiments import finetune_comparison as fc
from bertlab.tasks.metrics import difference_standard_error, standard_error
from bertlab.training.finetune import FinetuneResult, SeedResult


def result(init: str, scores: list[float], losses: list[float], steps: int = 189) -> FinetuneResult:
    runs = [
        SeedResult(
            seed=i,
            metrics={"accuracy": s},
            history=[{"epoch": 1, "train_loss": 0.9}, {"epoch": 2, "train_loss": loss}],
            seconds=1.0,
            step_losses=[0.7] * steps,
        )
        for i, (s, loss) in enumerate(zip(scores, losses))
    ]
    return FinetuneResult(task="sst2", init=init, main_metric="accuracy", runs=runs)


def test_the_difference_of_two_accuracies_has_the_standard_errors_of_both():
    se = difference_standard_error(70.0, 72.0, 872)
    assert se == pytest.approx(math.sqrt(standard_error(70, 872) ** 2 + standard_error(72, 872) ** 2))
    assert se == pytest.approx(2.17, abs=0.01)  # larger than either accuracy's own 1.55 and 1.52
    assert difference_standard_error(70.0, 72.0, 4 * 872) == pytest.approx(se / 2)
    with pytest.raises(ValueError, match="percentage"):
        difference_standard_error(70.0, 172.0, 872)


@pytest.mark.parametrize(
    "pre, scratch, verdict",
    [
        (71.3, 72.8, "cannot tell the two apart"),  # -1.5: what one CPU build of chapter 11 printed
        (73.0, 70.5, "cannot tell the two apart"),  # +2.5, below 2 x 2.2
        (78.0, 70.0, "a gain the dev set's luck alone rarely makes"),
        (64.0, 72.0, "the model from scratch is ahead by more than two standard errors"),
    ],
)
def test_the_gap_is_read_against_its_noise(pre, scratch, verdict):
    words = fc.gap_words(result("pre", [pre], [0.5]), result("scratch", [scratch], [0.6]), 872)
    assert f"In this live run pre-training is worth {pre - scratch:+.1f} points (one seed each;" in words
    reading = fc.live_gain(result("p", [pre], [0.5]), result("s", [scratch], [0.6]), 872)
    expected = {"cannot tell the two apart": "within the noise of", "rarely makes": "clear of"}
    assert reading.words == next((w for k, w in expected.items() if k in verdict), "below")
    assert verdict in words
    assert ("learning curve" in words) == (verdict == "cannot tell the two apart")


def test_medians_of_several_seeds_are_named_as_such():
    pre = result("pre", [75.0, 74.0, 76.0], [0.4, 0.5, 0.45])
    scratch = result("scratch", [70.0, 69.0, 71.0], [0.6, 0.6, 0.6])
    assert "(the median of three seeds each;" in fc.gap_words(pre, scratch, 872)
    assert fc.final_loss(pre) == 0.45  # the median seed's last epoch


def test_the_reading_names_steps_sentences_baselines_and_the_comparison():
    pre, scratch = result("pre", [71.3], [0.41]), result("scratch", [72.8], [0.693])
    minilm = result("minilm", [80.1], [0.3])
    text = fc.reading(pre, scratch, minilm, majority=50.9, n_dev=872, n_train=2000)
    assert text.startswith("189 optimizer steps on 2,000 labelled sentences.")
    assert "reaches 71.3%, 20.4 points above the majority" in text
    assert "its training loss ends below ln 2 (0.410 against 0.693)" in text
    assert "its training loss ends at about ln 2 (0.693 against 0.693)" in text
    assert "In this live run pre-training is worth -1.5 points" in text and "cannot tell the two apart" in text
    assert "One dev sentence is 0.11 points; one standard error of the majority baseline, 1.7." in text
    assert text.endswith("reaches 80.1% on the same sentences, +8.8 points from the book's BERT.")
    assert "MiniLM" not in fc.reading(pre, scratch, None, 50.9, 872, 2000)
    # a page that fell back to another encoder names it, never the book's BERT
    other = fc.reading(pre, scratch, minilm, 50.9, 872, 2000, pretrained_name="all-MiniLM-L6-v2")
    assert "the book's BERT" not in other and "points from all-MiniLM-L6-v2" in other
    near = fc.reading(result("pre", [52.0], [0.69]), scratch, None, 50.9, 872, 2000)
    assert "reaches 52.0%, within two standard errors of the majority class" in near


RTE = {  # chapter 12's recorded RTE row: +3.2 from the majority label, where two standard errors are 6.0
    "task": "rte",
    "metric": "accuracy",
    "pretrained": 55.96,
    "scratch": 55.23,
    "gain": 0.72,
    "pretrained_scores": [49.82, 56.68, 55.96],
    "scratch_scores": [54.87, 55.96, 55.23],
}


def test_a_recorded_pair_task_within_the_noise_is_never_said_to_be_lifted():
    text = fc.record_reading(RTE, 52.71, 277, 2490, "RTE")
    assert "+0.7 points, within the noise of its from-scratch twin" in text
    assert "+3.2 points, within the noise of the majority label (two standard errors of 3.0" in text
    assert "lifts" not in text and "clear" not in text and "2,490 labelled pairs" in text
    clear = {**RTE, "pretrained": 70.0, "gain": 14.8, "pretrained_scores": [69.0, 70.0, 71.0]}
    assert fc.record_reading(clear, 52.71, 277, 2490, "RTE").endswith("Pre-training lifts it clear of both.")
    mrpc = {
        **RTE,
        "metric": "f1",
        "pretrained": 77.5,
        "gain": -1.0,
        "pretrained_scores": [77.1, 77.5, 80.4],
        "scratch_scores": [78.5, 73.9, 81.2],
    }
    twin, floor = fc.record_readings(mrpc, 81.2, 408)
    assert floor.words == "below" and floor.how == "the seeds' range"
    summary = fc.record_summary({"RTE": fc.record_readings(RTE, 52.71, 277), "MRPC": (twin, floor)})
    assert "RTE +0.7 from scratch (within the noise of it) and +3.2 from the majority label (within" in summary
    assert "MRPC" in summary and "clear" not in summary


def test_the_curve_table_labels_the_pipelines_seeds_and_reads_each_gain():
    rows = [
        {**RTE, "train_examples": 2000, "pretrained": 71.3, "scratch": 70.8, "gain": 0.57},
        {**RTE, "train_examples": 500, "pretrained_scores": [66.3, 67.4, 66.6], "scratch_scores": [63.1, 62.7, 64.0]},
    ]
    table = fc.curve_table(rows, {2000: 5, 500: 20}).splitlines()
    assert table[0] == "Medians of the pipeline's three seeds, each gain read against their range:"
    assert table[4] == "| 2,000 | 5 | 71.3 | 70.8 | +0.6 | within the noise of scratch |"
    assert table[5].endswith("| clear of scratch |")
