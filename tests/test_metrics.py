"""bertlab.tasks.metrics: hand-checked cases, the SQuAD gold answers against themselves, and entity-level
F1 against seqeval (the oracle) on the real CoNLL-2003 dev set with perturbed predictions."""

import random

import pytest
import torch

from bertlab.tasks import metrics
from bertlab.tasks.metrics import (
    accuracy,
    binary_f1,
    entity_f1,
    exact_match,
    get_entities,
    normalize_answer,
    span_f1,
    squad_scores,
)


def _read(reader, split):
    from bertlab.data import download

    try:
        return reader(split)[0]
    except download.DataUnavailableError as err:
        pytest.skip(f"dataset not available here: {err}")


# --- classification --------------------------------------------------------------------------
def test_accuracy_and_binary_f1_by_hand():
    pred = torch.tensor([1, 1, 0, 0, 1, 0])
    gold = torch.tensor([1, 0, 0, 1, 1, 0])
    assert accuracy(pred, gold) == pytest.approx(100 * 4 / 6)
    s = binary_f1(pred, gold)  # tp = 2, fp = 1, fn = 1
    assert s["precision"] == pytest.approx(100 * 2 / 3)
    assert s["recall"] == pytest.approx(100 * 2 / 3)
    assert s["f1"] == pytest.approx(100 * 2 / 3)
    assert binary_f1([0, 0], [1, 1])["f1"] == 0.0  # no true positive: 0, not a division error
    with pytest.raises(ValueError, match="predictions but"):
        accuracy([1, 0], [1])


def test_binary_f1_matches_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        y = torch.randint(0, 2, (200,), generator=g)
        p = torch.randint(0, 2, (200,), generator=g)
        assert binary_f1(p, y)["f1"] == pytest.approx(100 * sk.f1_score(y.numpy(), p.numpy()))
        assert accuracy(p, y) == pytest.approx(100 * sk.accuracy_score(y.numpy(), p.numpy()))


def test_confusion_matrix_by_hand_and_against_sklearn():
    # gold 1 1 1 0 0, predicted 1 0 1 1 0: TP 2, FN 1, FP 1, TN 1
    assert metrics.confusion_matrix([1, 0, 1, 1, 0], [1, 1, 1, 0, 0], 2) == [[1, 1], [1, 2]]
    assert metrics.confusion_matrix([1, 1, 1], [0, 1, 1], 2) == [[0, 1], [0, 2]]  # "always 1" fills one column
    assert metrics.confusion_matrix([2, 0], [0, 0], 3) == [[1, 0, 1], [0, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match="outside 0..1; is num_labels=2 right"):
        metrics.confusion_matrix([2, 0], [0, 0], 2)
    with pytest.raises(ValueError, match="argmax of the logits"):
        metrics.confusion_matrix(torch.tensor([0.3, 0.9]), [0, 1], 2)
    sk = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(1)
    y, p = torch.randint(0, 3, (300,), generator=g), torch.randint(0, 3, (300,), generator=g)
    assert metrics.confusion_matrix(p, y, 3) == sk.confusion_matrix(y.numpy(), p.numpy()).tolist()


# --- SQuAD -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Denver Broncos", "denver broncos"),
        ("  an   apple, a day!", "apple day"),
        ("Theatre of the Absurd", "theatre of absurd"),  # articles only as whole words
        ("A-Team", "ateam"),  # punctuation goes first, so "a" is no longer a word of its own
        ("24–10", "24–10"),  # the en dash is not ASCII punctuation: the official script keeps it
        ("Saint-Étienne's", "saintétiennes"),
        ("\tthe\n", ""),
    ],
)
def test_normalize_answer_by_hand(text, expected):
    assert normalize_answer(text) == expected


def test_exact_match_and_f1_by_hand():
    assert exact_match("the Denver Broncos.", "Denver Broncos") == 1.0
    assert exact_match("Denver", "Denver Broncos") == 0.0
    # prediction [denver, broncos, team], gold [denver, broncos]: P = 2/3, R = 1
    assert span_f1("the Denver Broncos team", "Denver Broncos") == pytest.approx(0.8)
    # bags of tokens: x x y vs x y y share one x and one y: P = R = 2/3
    assert span_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert span_f1("Carolina", "Denver Broncos") == 0.0
    assert span_f1("the", "a") == 0.0  # both normalise to nothing: no common token


def test_squad_scores_max_over_gold_and_missing():
    gold = {"q1": ["Denver Broncos", "the Broncos"], "q2": ["1996"], "q3": ["Paris"]}
    pred = {"q1": "Broncos", "q2": "in 1996"}  # q3 has no prediction
    s = squad_scores(pred, gold)
    # q1: "Broncos" vs "the Broncos" -> both "broncos": EM 1, F1 1 (vs "Denver Broncos" only 2/3)
    # q2: EM 0; F1: pred [in, 1996], gold [1996]: P = 1/2, R = 1 -> 2/3;  q3: 0
    assert s["exact_match"] == pytest.approx(100 * 1 / 3)
    assert s["f1"] == pytest.approx(100 * (1 + 2 / 3 + 0) / 3)
    assert s["missing"] == 1 and s["questions"] == 3


def test_squad_gold_answers_score_100_against_themselves():
    from bertlab.data import task_data

    examples = _read(task_data.read_squad, "dev")
    assert len(examples) == 10570
    gold = {ex.id: [t for t, _ in ex.answers] for ex in examples}
    for k in range(3):  # each annotator's answer (where there are 3) against all of them
        pred = {ex.id: ex.answers[min(k, len(ex.answers) - 1)][0] for ex in examples}
        s = squad_scores(pred, gold)
        assert s["exact_match"] == 100.0
        # The official F1 is 0 when no token is common, even for two empty answers: three dev
        # questions have an annotator answer "." that normalises to nothing.
        empty = sum(not normalize_answer(a) for a in pred.values())
        assert empty <= 3
        assert s["f1"] == pytest.approx(100.0 * (len(pred) - empty) / len(pred))
    # and scoring is not trivially 100: the context's first word is a poor answer
    poor = squad_scores({ex.id: ex.context.split()[0] for ex in examples}, gold)
    assert poor["exact_match"] < 5 and poor["f1"] < 10


# --- entities --------------------------------------------------------------------------------
def test_get_entities_by_hand():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-ORG", "B-ORG", "I-ORG", "B-ORG", "I-MISC"]
    assert get_entities(tags) == [
        ("PER", 0, 1),
        ("LOC", 3, 3),
        ("ORG", 4, 4),
        ("ORG", 5, 6),
        ("ORG", 7, 7),
        ("MISC", 8, 8),
    ]
    assert get_entities([]) == []
    assert get_entities(["O", "O"]) == []
    with pytest.raises(ValueError, match="not IOB2"):
        get_entities(["B-PER", "X-PER"])


def _seqeval():
    return pytest.importorskip("seqeval.metrics")


def test_get_entities_matches_seqeval_on_random_sequences():
    _seqeval()
    from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

    rng = random.Random(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    for _ in range(2000):
        seq = [rng.choice(tags) for _ in range(rng.randint(0, 12))]
        ours = [(t, a, b) for t, a, b in get_entities(seq)]
        assert ours == seqeval_entities(seq), seq


def perturb(gold_sentences, rng, rate):
    """Predictions with realistic errors: wrong type, boundary shifted, B- turned into I-,
    entity dropped, spurious entity, random tag."""
    kinds = ["PER", "ORG", "LOC", "MISC"]
    out = []
    for tags in gold_sentences:
        tags = list(tags)
        for i in range(len(tags)):
            if rng.random() >= rate:
                continue
            r = rng.random()
            if r < 0.2 and tags[i] != "O":
                tags[i] = tags[i][:2] + rng.choice(kinds)  # wrong type
            elif r < 0.4 and tags[i].startswith("B-"):
                tags[i] = "I-" + tags[i][2:]  # invalid IOB2 start
            elif r < 0.6 and tags[i].startswith("I-"):
                tags[i] = "O"  # entity cut short / split
            elif r < 0.8 and tags[i] == "O":
                tags[i] = rng.choice(["B-", "I-"]) + rng.choice(kinds)  # spurious or extended
            else:
                tags[i] = rng.choice(["O"] + [p + k for p in ("B-", "I-") for k in kinds])
        out.append(tags)
    return out


@pytest.mark.parametrize("rate", [0.0, 0.02, 0.1, 0.3])
def test_entity_f1_equals_seqeval_on_conll_dev(rate):
    sm = _seqeval()
    from bertlab.data import task_data

    gold = [s.tags for s in _read(task_data.read_conll2003, "valid")]
    assert len(gold) == 3250
    pred = perturb(gold, random.Random(rate), rate)
    ours = entity_f1(gold, pred, by_type=True)
    assert ours["precision"] == pytest.approx(100 * sm.precision_score(gold, pred), abs=1e-9)
    assert ours["recall"] == pytest.approx(100 * sm.recall_score(gold, pred), abs=1e-9)
    assert ours["f1"] == pytest.approx(100 * sm.f1_score(gold, pred), abs=1e-9)
    assert ours["gold_entities"] == 5942  # CoNLL-2003 dev: 5,942 entities
    if rate == 0.0:
        assert ours["f1"] == 100.0
    else:
        assert ours["f1"] < 100.0
    from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

    p, r, f, support = precision_recall_fscore_support(gold, pred, average=None)
    from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

    types = sorted({t for t, _, _ in seqeval_entities(gold)} | {t for t, _, _ in seqeval_entities(pred)})
    for t, pt, rt, ft, st in zip(types, p, r, f, support):
        assert ours["types"][t]["f1"] == pytest.approx(100 * ft, abs=1e-9), t
        assert ours["types"][t]["support"] == st


def test_entity_f1_rejects_misaligned_input():
    with pytest.raises(ValueError, match="sentence 0"):
        entity_f1([["O", "B-PER"]], [["O"]])
    with pytest.raises(ValueError):
        entity_f1([["O"], ["O"]], [["O"]])


def test_all_scores_are_percentages():
    assert metrics.accuracy([1], [1]) == 100.0
    assert entity_f1([["B-PER"]], [["B-PER"]])["f1"] == 100.0


def test_entity_errors_by_hand():
    from bertlab.tasks.metrics import entity_errors

    gold = ["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "O", "B-MISC", "O", "O"]
    pred = ["B-PER", "I-PER", "O", "B-ORG", "O", "B-ORG", "I-ORG", "O", "O", "B-LOC"]
    # PER right; LOC called ORG (same word); ORG one word too long; MISC not found; LOC invented
    assert entity_errors([gold], [pred]) == {
        "correct": 1,
        "wrong_type": 1,
        "wrong_span": 1,
        "wrong_type_and_span": 0,
        "spurious": 1,
        "missed": 1,
    }
    pred = ["O", "B-LOC", "I-LOC", "O", "O", "O", "O", "O", "O", "O"]
    # LOC over words 1-2 overlaps only the PER entity: wrong type and boundaries; nothing else found
    assert entity_errors([gold], [pred]) == {
        "correct": 0,
        "wrong_type": 0,
        "wrong_span": 0,
        "wrong_type_and_span": 1,
        "spurious": 0,
        "missed": 3,
    }
    with pytest.raises(ValueError, match="sentence 0"):
        entity_errors([["O"]], [["O", "O"]])


@pytest.mark.parametrize("rate", [0.02, 0.2])
def test_entity_errors_add_up_to_entity_f1_counts_on_conll_dev(rate):
    from bertlab.data import task_data
    from bertlab.tasks.metrics import ERROR_KINDS, entity_errors

    gold = [s.tags for s in _read(task_data.read_conll2003, "valid")]
    pred = perturb(gold, random.Random(rate), rate)
    e = entity_errors(gold, pred)
    s = entity_f1(gold, pred)
    assert sum(e[k] for k in ERROR_KINDS[:5]) == s["predicted_entities"]
    assert e["correct"] == round(s["precision"] / 100 * s["predicted_entities"])
    assert e["correct"] == round(s["recall"] / 100 * s["gold_entities"])
    assert 0 < e["missed"] <= s["gold_entities"] - e["correct"]
    assert all(e[k] > 0 for k in ERROR_KINDS)


# --- CoLA and STS-B: Matthews correlation, Pearson, Spearman -----------------------------------
from bertlab.tasks.metrics import average_ranks, matthews_corrcoef, pearson, spearman  # noqa: E402


def test_matthews_by_hand():
    pred = [1, 1, 0, 0, 1, 0]
    gold = [1, 0, 0, 1, 1, 0]  # TP 2, TN 2, FP 1, FN 1: (4 - 1) / sqrt(3 * 3 * 3 * 3) = 1/3
    assert matthews_corrcoef(pred, gold) == pytest.approx(100 / 3)
    assert matthews_corrcoef(gold, gold) == pytest.approx(100.0)
    assert matthews_corrcoef([1 - g for g in gold], gold) == pytest.approx(-100.0)
    # imbalanced: 9 acceptable, 1 not. Always "acceptable": accuracy 90%, MCC 0 (by definition)
    gold = [1] * 9 + [0]
    assert accuracy([1] * 10, gold) == pytest.approx(90.0)
    assert matthews_corrcoef([1] * 10, gold) == 0.0
    # one mistake each way on the same set: TP 8, TN 0, FP 1, FN 1 -> (0 - 1) / sqrt(9 * 9 * 1 * 1)
    assert matthews_corrcoef([1] * 8 + [0, 1], gold) == pytest.approx(-100 / 9)
    # three classes, by Gorodkin's formula: c = 4, s = 6, p = (2, 2, 2), t = (2, 2, 2)
    assert matthews_corrcoef([0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 0, 2]) == pytest.approx(100 * (4 * 6 - 12) / (36 - 12))


def test_matthews_edge_cases():
    assert matthews_corrcoef([0, 0, 0], [0, 1, 1]) == 0.0  # constant predictions
    assert matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0  # constant gold labels
    assert matthews_corrcoef([1, 1], [1, 1]) == 0.0  # both constant: still no evidence
    with pytest.raises(ValueError, match="predictions but"):
        matthews_corrcoef([1, 0], [1])
    with pytest.raises(ValueError, match="empty"):
        matthews_corrcoef([], [])
    with pytest.raises(ValueError, match="class labels"):
        matthews_corrcoef([0.2, 0.9], [0, 1])


def test_matthews_matches_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    g = torch.Generator().manual_seed(1)
    for k in (2, 2, 2, 3, 5):
        y = torch.randint(0, k, (150,), generator=g)
        p = torch.where(torch.rand(150, generator=g) < 0.6, y, torch.randint(0, k, (150,), generator=g))
        assert matthews_corrcoef(p, y) == pytest.approx(100 * sk.matthews_corrcoef(y.numpy(), p.numpy()), abs=1e-9)
    y = torch.randint(0, 2, (50,), generator=g)
    assert (
        matthews_corrcoef(torch.ones(50, dtype=torch.long), y)
        == 100 * sk.matthews_corrcoef(y.numpy(), torch.ones(50, dtype=torch.long).numpy())
        == 0.0
    )


def test_pearson_and_spearman_by_hand():
    x = [1.0, 2.0, 3.0, 4.0]
    y = [1.0, 4.0, 9.0, 16.0]  # monotone, not linear
    # x - 2.5 = (-1.5, -.5, .5, 1.5); y - 7.5 = (-6.5, -3.5, 1.5, 8.5)
    # sum of products 25, sum x^2 5, sum y^2 129: r = 25 / sqrt(5 * 129)
    assert pearson(x, y) == pytest.approx(100 * 25 / 645**0.5)
    assert spearman(x, y) == pytest.approx(100.0)  # ranks are equal
    assert pearson(x, [-v for v in y]) == pytest.approx(-100 * 25 / 645**0.5)
    assert average_ranks([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert average_ranks([3, 1, 3, 3, 2]).tolist() == [4.0, 1.0, 4.0, 4.0, 2.0]
    # ties: ranks of (1, 2, 2, 3) are (1, 2.5, 2.5, 4); against (1, 2, 3, 4) their Pearson is
    # (-1.5*-1.5 + 0 + 0 + 1.5*1.5) / sqrt(4.5 * 5) = 4.5 / sqrt(22.5)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(100 * 4.5 / 22.5**0.5)


def test_correlation_of_a_constant_raises():
    with pytest.raises(ValueError, match="predictions are constant.*undefined"):
        pearson([3.0, 3.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="labels are constant.*undefined"):
        pearson([1.0, 2.0, 3.0], [5, 5, 5])
    with pytest.raises(ValueError, match="predictions are constant.*undefined"):
        spearman([0.5] * 4, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="at least 2"):
        pearson([1.0], [2.0])
    with pytest.raises(ValueError, match="predictions but"):
        spearman([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        pearson([1.0, float("nan")], [1.0, 2.0])


def test_pearson_and_spearman_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    g = torch.Generator().manual_seed(2)
    for _ in range(10):
        gold = torch.randint(0, 11, (200,), generator=g).double() / 2  # STS-B-like 0..5, many ties
        pred = gold + torch.randn(200, generator=g, dtype=torch.float64)
        pred[:20] = pred[:20].round()  # ties among the predictions too
        assert pearson(pred, gold) == pytest.approx(100 * stats.pearsonr(pred, gold)[0], abs=1e-9)
        assert spearman(pred, gold) == pytest.approx(100 * stats.spearmanr(pred, gold)[0], abs=1e-9)
        assert average_ranks(pred).tolist() == pytest.approx(stats.rankdata(pred).tolist())


def test_standard_error_and_clears():
    # 50% on 872 sentences (SST-2 dev): sqrt(0.25 / 872) = 1.693 points
    assert metrics.standard_error(50.0, 872) == pytest.approx(100 * (0.25 / 872) ** 0.5)
    assert metrics.standard_error(50.0, 872) == pytest.approx(1.693, abs=1e-3)
    # a certain outcome has no spread; more examples, less spread
    assert metrics.standard_error(100.0, 10) == 0.0
    assert metrics.standard_error(70.0, 400) < metrics.standard_error(70.0, 100)
    se = metrics.standard_error(60.0, 277)  # RTE dev
    assert metrics.clears(60.0 + 2 * se + 0.01, 60.0, 277)
    assert not metrics.clears(60.0 + 2 * se - 0.01, 60.0, 277)
    assert metrics.clears(60.0 + 1.5 * se, 60.0, 277, sigmas=1.0)
    with pytest.raises(ValueError, match="at least one example"):
        metrics.standard_error(50.0, 0)
    with pytest.raises(ValueError, match="percentage"):
        metrics.standard_error(170.0, 10)
