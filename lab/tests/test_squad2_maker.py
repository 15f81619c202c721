"""lab.squad2: unanswerable questions made from SQuAD v1.1, their [CLS] labels, the per-question
margins over several windows, and SQuAD 2.0's scores."""

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
