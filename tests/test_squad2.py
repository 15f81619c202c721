"""bertlab.experiments.squad2: chapter 13b's reading of the SQuAD 2.0 record (its table, verdict, demo
sentences and summary); the record's maker is tested in lab/tests/test_squad2_maker.py."""

import pytest

from bertlab.experiments import squad2
from bertlab.tasks.squad import best_null_threshold


def record(before_tau=None, before_f1=33.3):
    scores = dict(exact_match=0.0, f1_at_tau_0=10.0, has_answer_f1=0.0, no_answer_abstained=100.0)
    return {
        "settings": dict(eval_questions=300, eval_unanswerable=100, train_questions=900, train_unanswerable=300),
        "untrained_span_layer": {**scores, "f1": before_f1, "tau": before_tau, "abstain_everywhere_f1": 33.3},
        "separation": {
            "untrained_span_layer": {"all": 0.5, "same article": 0.49, "other article": 0.51},
            "fine_tuned": {"all": 0.7, "same article": 0.55, "other article": 0.85},
        },
        "fine_tuned": {
            **scores,
            "f1": 45.0,
            "tau": -1.5,
            "has_answer_f1": 30.2,
            "no_answer_abstained": 71.0,
            "abstain_everywhere_f1": 33.3,
        },
    }


def test_table_and_reading_come_from_the_record():
    table = squad2.scores_table(record()).splitlines()
    assert table[2] == "| F1 at the chosen tau | 33.3 | 45.0 |"
    assert "| tau chosen | none (abstain everywhere) | -1.50 |" in table
    text = squad2.reading(record())
    assert "abstaining on every question already scores an F1 of 33.3" in text
    assert "that best tau abstains everywhere" in text
    assert "it reaches 45.0 (+11.7 over the floor)" in text and "abstains on 71% of those without one" in text
    assert "+2.0 points above that floor" in squad2.reading(record(before_tau=0.5, before_f1=35.3))
    assert "another article's paragraph with a separation of 0.85" in text and "own article with 0.55" in text
    assert "| ... from those beside a paragraph of another article | 0.51 | 0.85 |" in table
    assert text.endswith("It has learned part of when a paragraph does not answer a question.")
    weak = record()
    weak["separation"]["fine_tuned"]["all"] = 0.54
    assert "That is close to chance" in squad2.reading(weak)
    # fine-tuning found no tau that beats abstaining on every question
    weak["fine_tuned"].update(tau=None, f1=33.3, has_answer_f1=0.0, no_answer_abstained=100.0)
    text = squad2.reading(weak)
    assert "it still does best by abstaining everywhere (33.3)" in text and "at its tau" not in text


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
    text = squad2.demo_reading(margins, record(), n_spans=500, cut_word=False)
    assert "margins are -1.60 for the question the paragraph answers and -1.00" in text
    assert "the wrong way round" in text  # the question without an answer has the larger margin
    assert "(-1.50) it abstains on the first and answers the second." in text
    good = squad2.demo_reading({"answerable": 2.0, "no answer": -3.0}, record(), 500, cut_word=True)
    assert "it answers the first and abstains on the second." in good and "cuts a word in two" in good
    assert "wrong way round" not in good
    shy = squad2.demo_reading({"answerable": -2.0, "no answer": -3.0}, record(), 500, cut_word=False)
    assert "it abstains on both." in shy  # the fine-tuned record's own demo: both margins below tau
    keen = squad2.demo_reading({"answerable": 2.0, "no answer": 1.0}, record(), 500, cut_word=False)
    assert "it answers both." in keen
    assert "best served by abstaining everywhere" in squad2.demo_reading(
        margins, record(before_tau=None) | {"fine_tuned": {"tau": None}}, 500, False
    )
    untrained = squad2.demo_reading({"answerable": 0.3, "no answer": -0.2}, None, 5775, False)
    assert "the untrained layer answers one of the two questions" in untrained and "5,775 span scores" in untrained


def test_the_verdict_says_first_whether_the_model_can_abstain():
    good = record() | {"v1_answerable_only": {"f1": 40.0, "exact_match": 30.0}}
    assert squad2.can_abstain(good)  # a tau that answers, separation 0.7
    text = squad2.verdict(good)
    assert text.startswith("**The book's BERT has learned part of when to abstain.**")
    assert "at 0.70" in text and "scores 45.0 F1 against 33.3" in text and "40.0 F1 on the answerable" in text
    assert f"{squad2.PAPER_SQUAD2_TEST_F1} F1 on SQuAD 2.0's test set" in text
    # margins close to chance, best served by abstaining everywhere: the record of chapter 13b
    weak = record() | {"v1_answerable_only": {"f1": 11.5, "exact_match": 5.1}}
    weak["separation"] = {**weak["separation"], "fine_tuned": {"all": 0.51}}
    weak["fine_tuned"] = {**weak["fine_tuned"], "tau": None, "f1": 33.3, "has_answer_f1": 0.0}
    assert not squad2.can_abstain(weak)
    text = squad2.verdict(weak)
    assert text.startswith("**The book's BERT cannot yet abstain.**")
    assert "at 0.51, where 0.5 is chance" in text and "abstains on every question" in text
    assert "scores 11.5 F1 on the answerable held-out questions" in text and "learned part" not in text
    # a threshold that answers, but margins near chance: still cannot abstain
    near = record() | {"v1_answerable_only": {"f1": 11.5, "exact_match": 5.1}}
    near["separation"] = {**near["separation"], "fine_tuned": {"all": 0.55}}
    assert not squad2.can_abstain(near) and "an F1 of only 30.2" in squad2.verdict(near)


def test_the_settings_the_first_stage_and_the_summary_come_from_the_record():
    plain = record()
    plain["settings"].update(
        epochs=2,
        lr=5e-4,
        batch_size=32,
        max_len=256,
        doc_stride=128,
        unanswerable_fraction=0.5,
        other_article_share=0.5,
    )
    words = squad2.settings_words(plain)
    assert words.startswith("*Fine-tuned for two epochs on the mix, at learning rate 5e-4, batch 32")
    assert "50% of the training questions (50% of the held-out ones)" in words and "SQuAD v1.1" not in words
    assert squad2.first_stage_reading(plain) == "" and "After SQuAD v1.1 alone" not in squad2.reading(plain)
    staged = record()
    staged["settings"].update(plain["settings"], epochs=1, v1_epochs_first=2, unanswerable_fraction=0.2)
    staged["settings"]["eval_unanswerable_fraction"] = 0.5
    staged["after_v1_first"] = {
        "v1_answerable_only": {"f1": 14.2},
        "squad2": {"f1": 36.0, "tau": 2.0, "abstain_everywhere_f1": 33.3},
        "separation": {"all": 0.58},
    }
    words = squad2.settings_words(staged)
    assert "first for two epochs on the training side's questions with an answer alone" in words
    assert "then for one epoch on the mix" in words and "20% of the training questions (50% of the held-out" in words
    text = squad2.reading(staged)
    assert "After SQuAD v1.1 alone (two epochs, answerable questions only), it scores 14.2 F1" in text
    assert "separate them from those without at 0.58, and its best tau there scores 36.0, +2.7 over" in text
    staged["after_v1_first"]["squad2"].update(tau=None, f1=33.3)
    assert "scores 33.3, no more than abstaining everywhere." in squad2.first_stage_reading(staged)
    staged["after_v1_first"]["squad2"].update(tau=2.0, f1=36.0)
    assert squad2.can_abstain(staged) and "has learned part of when to abstain" in squad2.summary(staged)
    staged["separation"]["fine_tuned"]["all"] = 0.52
    assert "cannot yet abstain: its margins separate the two kinds of question at only 0.52" in squad2.summary(staged)
