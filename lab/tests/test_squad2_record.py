"""lab.squad2: unanswerable questions made from SQuAD v1.1, their [CLS] labels, the per-question
margins over several windows, SQuAD 2.0's scores, and what chapter 13b says of the record (its
table, verdict, settings, reading and summary), each from the record's numbers."""

import numpy as np
import pytest
import torch

from bertlab.tasks.squad import best_null_threshold, featurize_squad
from lab import squad2

PARIS = "Paris is the capital of France. It lies on the Seine."
LYON = "Lyon is a city on the Rhone. It is known for its food."
NICE = "Nice is on the coast. The city of Paris is far to the north."
OSLO = "Oslo is the capital of Norway."


def example(qid, title, question, context, answer):
    return {
        "id": qid,
        "title": title,
        "question": question,
        "context": context,
        "answers": [(answer, context.index(answer))],
    }


EXAMPLES = [
    example("q1", "France", "What is the capital of France?", PARIS, "Paris"),
    example("q2", "France", "Which river runs through Lyon?", LYON, "Rhone"),
    example("q3", "France", "Where is Nice?", NICE, "on the coast"),
    example("q4", "Norway", "What is the capital of Norway?", OSLO, "Oslo"),  # its article has one paragraph
]


def test_unanswerable_questions_use_another_paragraph_without_the_answer():
    made = squad2.unanswerable_questions(EXAMPLES, fraction=1.0, seed=0, other_article=0.0)
    by_id = {m["id"]: m for m in made}
    assert set(by_id) == {"q1-unanswerable-same", "q2-unanswerable-same", "q3-unanswerable-same"}  # q4: alone
    assert by_id["q1-unanswerable-same"]["context"] == LYON  # NICE mentions "Paris": never chosen for q1
    assert by_id["q2-unanswerable-same"]["context"] in (PARIS, NICE)
    assert all(m["answers"] == [] and m["title"] == "France" for m in made)
    other = squad2.unanswerable_questions(EXAMPLES, fraction=1.0, seed=0, other_article=1.0)
    assert {m["id"] for m in other} == {f"q{i}-unanswerable-other" for i in (1, 2, 3, 4)}
    assert next(m for m in other if m["id"] == "q4-unanswerable-other")["context"] in (PARIS, LYON, NICE)
    assert next(m for m in other if m["id"] == "q1-unanswerable-other")["context"] == OSLO
    kinds = [squad2.kind_of(e) for e in squad2.with_unanswerable(EXAMPLES, 1.0, other_article=0.5)]
    assert kinds[:4] == ["answerable"] * 4 and set(kinds[4:]) <= {"same article", "other article"}
    assert len(squad2.unanswerable_questions(EXAMPLES * 50, fraction=0.5, seed=1)) < 200 * 0.6
    with pytest.raises(ValueError, match="fraction"):
        squad2.unanswerable_questions(EXAMPLES, fraction=0.0)
    with pytest.raises(ValueError, match="other_article"):
        squad2.unanswerable_questions(EXAMPLES, other_article=1.5)


def test_separation_is_the_chance_that_an_answerable_question_has_the_larger_margin():
    assert squad2.separation([3.0, 2.0, 1.0, 0.0], [True, True, False, False]) == 1.0
    assert squad2.separation([0.0, 1.0, 2.0, 3.0], [True, True, False, False]) == 0.0
    assert squad2.separation([1.0, 1.0], [True, False]) == 0.5  # a tie counts a half
    assert squad2.separation([2.0, 0.0, 1.0], [True, True, False]) == 0.5
    made = squad2.with_unanswerable(EXAMPLES[:3], 1.0, other_article=0.0)  # q1-q3, three of the same kind
    seps = squad2.separations([5.0, 1.0, 3.0, 2.0, 0.0, 4.0], made)
    assert seps == {"all": pytest.approx(6 / 9), "same article": pytest.approx(6 / 9)}  # 5>2,0,4; 1>0; 3>2,0
    with pytest.raises(ValueError, match="both with and without"):
        squad2.separation([1.0], [True])


def test_a_question_without_an_answer_is_labelled_cls_in_every_window(bert_tokenizer):
    made = squad2.with_unanswerable(EXAMPLES, 1.0, other_article=0.0)
    f = featurize_squad(made, bert_tokenizer, max_len=24, doc_stride=4)
    rows = {}
    for item, e in zip(f.items, f.meta["example_index"]):
        rows.setdefault(made[e]["id"], []).append((item["start_positions"], item["end_positions"]))
    assert all(p == (0, 0) for p in rows["q1-unanswerable-same"]) and len(rows["q1-unanswerable-same"]) > 1
    assert any(p != (0, 0) for p in rows["q1"])  # the answerable original points at its answer
    assert f.report["unanswered"] == 3


def test_question_margins_take_the_best_span_and_the_smallest_null_over_windows(bert_tokenizer):
    f = featurize_squad(EXAMPLES[:1], bert_tokenizer, max_len=20, doc_stride=4)
    n_windows, T = len(f.items), f.meta["token_to_char"].shape[1]
    assert n_windows >= 2
    start, end = torch.full((n_windows, T), -5.0), torch.full((n_windows, T), -5.0)
    start[:, 0], end[:, 0] = torch.arange(n_windows) + 1.0, 0.0  # null scores 1, 2, ...: the smallest is 1
    w, i = n_windows - 1, int(np.flatnonzero(f.meta["max_context"][n_windows - 1])[0])
    start[w, i], end[w, i] = 4.0, 3.0  # one span, one token, in the last window: s_hat = 7
    margins, answers = squad2.question_margins(start, end, f)
    assert margins.tolist() == [pytest.approx(7.0 - 1.0)]
    a, b = f.meta["token_to_char"][w, i]
    assert answers["q1"] == PARIS[a:b]


def test_squad2_scores_choose_tau_and_score_both_kinds_of_question():
    made = squad2.with_unanswerable(EXAMPLES[:2], 1.0, other_article=0.0)  # q1, q2 answerable; two without
    margins = np.array([3.0, -1.0, 0.5, -2.0])
    answers = {"q1": "Paris", "q2": "Lyon", "q1-unanswerable-same": "Lyon", "q2-unanswerable-same": "Paris"}
    r = squad2.squad2_scores(margins, answers, made)
    f1 = np.array([1.0, 0.0, 0.0, 0.0])  # q2's best span is wrong
    tau, best = best_null_threshold(margins, [True, True, False, False], f1)
    assert (r["tau"], r["f1"]) == (tau, best)
    assert r["f1"] == pytest.approx(75.0)  # answer q1 only, abstain on the rest: 1 + 0 + 1 + 1
    assert r["exact_match"] == pytest.approx(75.0)
    assert r["f1_at_tau_0"] == pytest.approx(50.0)  # answers q1 (1) and the first unanswerable (0)
    assert r["has_answer_f1"] == pytest.approx(50.0) and r["no_answer_abstained"] == pytest.approx(100.0)
    assert r["abstain_everywhere_f1"] == pytest.approx(50.0) and r["unanswerable"] == 2
    never = squad2.squad2_scores(np.array([-1.0, -2.0, 3.0, 4.0]), answers, made)  # only the wrong ones answer
    assert never["tau"] is None and never["f1"] == never["abstain_everywhere_f1"] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="both with and without"):
        squad2.squad2_scores(margins[:2], answers, made[:2])


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
