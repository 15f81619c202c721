"""bertlab.experiments.squad2: the SQuAD 2.0 record's model belongs to the current reference run, and
the sentences under chapter 13b's demo follow its margins; the record's maker and reading are tested
in lab/tests/test_squad2_record.py."""

import pytest

from bertlab.experiments import squad2
from bertlab.tasks.squad import best_null_threshold

TUNED = {"fine_tuned": {"tau": -1.5}}  # what the demo's sentences read of the record: its tau


def test_the_recorded_model_was_fine_tuned_from_the_current_record():
    """data/squad2/ goes stale when the reference run is made again: its vocabulary and size must
    be the record's, and its scores must agree with its own margins."""
    import json

    from bertlab.experiments import reference
    from bertlab.files import sha256_file

    rec, run = squad2.load(), reference.find()
    if rec is None or run is None:
        pytest.skip("no SQuAD 2.0 record or no reference run")
    folder = squad2.model_folder()
    assert sha256_file(folder / "tokenizer.json") == sha256_file(run.path / "tokenizer.json")
    mine, theirs = json.loads((folder / "config.json").read_text()), json.loads((run.path / "config.json").read_text())
    assert {k: mine[k] for k in ("num_layers", "hidden_size", "vocab_size")} == {
        k: theirs[k] for k in ("num_layers", "hidden_size", "vocab_size")
    }
    n = rec["settings"]["eval_questions"]
    assert len(rec["margins"]) == len(rec["has_answer"]) == len(rec["span_f1"]) == len(rec["kind"]) == n
    _, f1 = best_null_threshold(rec["margins"], rec["has_answer"], rec["span_f1"])
    assert f1 == pytest.approx(rec["fine_tuned"]["f1"], abs=0.05)


def test_demo_reading_follows_the_margins_and_the_record():
    margins = {"answerable": -1.6, "no answer": -1.0}
    text = squad2.demo_reading(margins, TUNED, n_spans=500, cut_word=False)
    assert "margins are -1.60 for the question the paragraph answers and -1.00" in text
    assert "the wrong way round" in text  # the question without an answer has the larger margin
    assert "(-1.50) it abstains on the first and answers the second." in text
    good = squad2.demo_reading({"answerable": 2.0, "no answer": -3.0}, TUNED, 500, cut_word=True)
    assert "it answers the first and abstains on the second." in good and "cuts a word in two" in good
    assert "wrong way round" not in good
    shy = squad2.demo_reading({"answerable": -2.0, "no answer": -3.0}, TUNED, 500, cut_word=False)
    assert "it abstains on both." in shy  # the fine-tuned record's own demo: both margins below tau
    keen = squad2.demo_reading({"answerable": 2.0, "no answer": 1.0}, TUNED, 500, cut_word=False)
    assert "it answers both." in keen
    assert "best served by abstaining everywhere" in squad2.demo_reading(
        margins, {"fine_tuned": {"tau": None}}, 500, False
    )
    untrained = squad2.demo_reading({"answerable": 0.3, "no answer": -0.2}, None, 5775, False)
    assert "the untrained layer answers one of the two questions" in untrained and "5,775 span scores" in untrained
