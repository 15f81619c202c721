"""bertlab.tasks.squad on the real SQuAD v1.1 dev set (10,570 questions): windows, labels, the round
trip characters -> tokens -> characters through decoding, decoding's constraints against a brute
force, speed, a forward pass, and bad input."""

import time

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from bertlab import BertConfig
from bertlab.tasks import get_task
from bertlab.tasks.metrics import normalize_answer, squad_scores
from bertlab.tasks.squad import (
    best_spans,
    char_span_to_tokens,
    decode,
    featurize_squad,
    gold_answers,
    locate_answer,
    max_context_windows,
    oracle_logits,
    span_logits,
    split_by_article,
    stack_span_logits,
    window_starts,
)

# Dev answers that start or end inside a word piece ("8" in "20–18", "gold" in "golden"): a span
# of whole tokens cannot reproduce them exactly. 32 of 10,570 with the bert-base-uncased vocabulary.
MAX_INSIDE_TOKENS = 40


@pytest.fixture(scope="module")
def tok(bert_tokenizer):
    return bert_tokenizer


@pytest.fixture(scope="module")
def dev():
    from bertlab.data import download

    try:
        return get_task("squad").load("dev")
    except download.DataUnavailableError as err:
        pytest.skip(f"SQuAD dev not available here: {err}")


@pytest.fixture(scope="module")
def feats(tok, dev):
    t = time.perf_counter()
    f = featurize_squad(dev, tok, max_len=384, doc_stride=128, max_query_len=64)
    f.seconds = time.perf_counter() - t
    return f


@pytest.fixture(scope="module")
def short(tok, dev):
    """Short windows (128, stride 64): most paragraphs need several, so the window logic is
    exercised on thousands of questions."""
    return featurize_squad(dev, tok, max_len=128, doc_stride=64, max_query_len=64)


def test_report(feats, short, dev):
    for f in (feats, short):
        r = f.report
        print({k: v for k, v in r.items() if k != "locations"})
        assert r["examples"] == len(dev) == 10570
        assert r["windows"] == len(f) >= len(dev)
        assert r["answers_not_found"] == 0 and r["answers_moved"] == 0 and r["empty_contexts"] == 0
        assert 0 < r["answers_inside_tokens"] <= MAX_INSIDE_TOKENS
        assert r["questions_truncated"] == 0  # no dev question is longer than 64 pieces
    assert short.report["windows"] > 2 * feats.report["windows"]
    assert short.report["examples_with_several_windows"] > 5000


def test_context_offsets_are_monotonic(tok, dev):
    """char_span_to_tokens binary-searches the offsets: they must be sorted."""
    contexts = list(dict.fromkeys(ex.context for ex in dev))
    for enc in tok.backend.encode_batch(contexts, add_special_tokens=False):
        off = np.array(enc.offsets)
        assert (np.diff(off[:, 0]) >= 0).all() and (np.diff(off[:, 1]) >= 0).all()
        assert (off[:, 0] < off[:, 1]).all()  # no empty token


def _windows_of(f):
    """window indices grouped by example."""
    ex = f.meta["example_index"]
    bounds = np.searchsorted(ex, np.arange(len(f.examples) + 1))
    return [range(bounds[e], bounds[e + 1]) for e in range(len(f.examples))]


@pytest.mark.parametrize("which", ["feats", "short"])
def test_window_layout_and_coverage(which, request, tok):
    f = request.getfixturevalue(which)
    max_len = f.report["max_len"]
    t2c, maxctx = f.meta["token_to_char"], f.meta["max_context"]
    q_pieces = tok.ids_batch([ex.question for ex in f.examples])
    contexts = list(dict.fromkeys(ex.context for ex in f.examples))
    ctx_offsets = {
        c: np.array(e.offsets).reshape(-1, 2)
        for c, e in zip(contexts, tok.backend.encode_batch(contexts, add_special_tokens=False))
    }
    in_ctx_all = t2c[..., 0] >= 0
    assert not (maxctx & ~in_ctx_all).any()  # only context tokens can be max-context
    for e, windows in enumerate(_windows_of(f)):
        gold = ctx_offsets[f.examples[e].context]
        q = q_pieces[e][:64]
        for n in windows:
            ids, seg = f[n]["input_ids"], f[n]["token_type_ids"]
            T = len(ids)
            assert T <= max_len
            # [CLS] question [SEP] context window [SEP], segments 0 then 1
            assert ids[0] == tok.cls_id and ids[len(q) + 1] == tok.sep_id and ids[-1] == tok.sep_id
            assert ids[1 : len(q) + 1].tolist() == q
            assert (seg[: len(q) + 2] == 0).all() and (seg[len(q) + 2 :] == 1).all()
            assert in_ctx_all[n, : len(q) + 2].sum() == 0 and in_ctx_all[n, T - 1 :].sum() == 0
            assert in_ctx_all[n, len(q) + 2 : T - 1].all()
        w = np.array(windows)
        covered = np.unique(t2c[w][in_ctx_all[w]], axis=0)
        assert np.array_equal(covered, gold)  # every context token is in some window ...
        owned = t2c[w][maxctx[w]]
        owned = owned[np.lexsort((owned[:, 1], owned[:, 0]))]
        assert np.array_equal(owned, gold)  # ... and in exactly one max-context window
        for n, m in zip(windows[:-1], windows[1:]):  # consecutive windows overlap (stride < length)
            assert t2c[m, len(q) + 2, 0] < t2c[n, len(f[n]["input_ids"]) - 2, 1]


@pytest.mark.parametrize("which", ["feats", "short"])
def test_labels_point_at_the_answer_or_cls(which, request):
    f = request.getfixturevalue(which)
    t2c = f.meta["token_to_char"]
    at_cls = 0
    for n, item in enumerate(f.items):
        ex = f.examples[f.meta["example_index"][n]]
        text, start = ex.answers[0]
        s, e = item["start_positions"], item["end_positions"]
        if s == 0:
            assert e == 0
            at_cls += 1
            # this window does not hold the whole answer
            chars = t2c[n][t2c[n, :, 0] >= 0]
            assert not (len(chars) and chars[0, 0] <= start and start + len(text) <= chars[-1, 1]), n
            continue
        assert 0 < s <= e and t2c[n, s, 0] >= 0 and t2c[n, e, 0] >= 0
        span = ex.context[t2c[n, s, 0] : t2c[n, e, 1]]
        assert text in span  # equal, or a bit more when the answer ends inside a word piece
        assert t2c[n, s, 0] <= start and start + len(text) <= t2c[n, e, 1]
    assert at_cls == f.report["windows_without_answer"]
    if which == "short":
        assert at_cls > 5000


@pytest.mark.parametrize("which", ["feats", "short"])
def test_oracle_logits_give_back_the_gold_answers(which, request):
    """One-hot logits at the labelled start/end: decoding must recover each first gold answer's
    text, exactly (character for character) except where the answer cuts a word piece."""
    f = request.getfixturevalue(which)
    start, end = oracle_logits(f)
    longest = max(it["end_positions"] - it["start_positions"] + 1 for it in f.items)
    t = time.perf_counter()
    pred = decode(start, end, f, max_answer_length=longest)  # no length limit in effect
    seconds = time.perf_counter() - t
    scores = squad_scores(pred, gold_answers(f))
    first = {ex.id: ex.answers[0][0] for ex in f.examples}
    exact = sum(pred[q] == first[q] for q in first)
    wrong = [(q, first[q], pred[q]) for q in first if normalize_answer(pred[q]) != normalize_answer(first[q])]
    print(
        f"{which}: decode {seconds:.2f}s, EM {scores['exact_match']:.3f} F1 {scores['f1']:.3f}, "
        f"exact text {exact}/{len(first)}, mismatches {len(wrong)}: {wrong[:5]}"
    )
    r = f.report
    assert r["answers_inside_tokens"] <= MAX_INSIDE_TOKENS
    assert r["answers_in_no_window"] + r["answers_start_outside_max_context"] <= 5
    lost = set(
        r["locations"].get("answers_in_no_window", []) + r["locations"].get("answers_start_outside_max_context", [])
    )
    assert len(lost) == r["answers_in_no_window"] + r["answers_start_outside_max_context"]
    assert len(first) - exact <= r["answers_inside_tokens"] + len(lost)
    for q, gold, got in wrong:
        assert gold in got or q in lost  # the smallest whole-token span around the answer
    assert scores["exact_match"] >= 100 * (1 - MAX_INSIDE_TOKENS / len(first))
    assert scores["f1"] > 99.5
    if which == "short":
        return
    # With BERT's max_answer_length of 30 pieces, the gold answers longer than that are lost too.
    labelled = [
        (f.meta["example_index"][n], it["end_positions"] - it["start_positions"] + 1)
        for n, it in enumerate(f.items)
        if it["start_positions"] > 0
    ]
    too_long = {f.examples[e].id for e, k in labelled if k > 30}
    pred30 = decode(start, end, f, max_answer_length=30)
    wrong30 = {q for q in first if pred30[q] != first[q]}
    print(
        f"{which}: first gold answers longer than 30 pieces: {len(too_long)}; "
        f"not reproduced at max_answer_length=30: {len(wrong30)}"
    )
    assert too_long and too_long <= wrong30 and len(wrong30 - too_long) <= MAX_INSIDE_TOKENS


def brute_force_best(s, e, start_ok, end_ok, L):
    """The best span of one window by an explicit (T, T) masked score matrix."""
    T = len(s)
    i, j = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    allowed = (j >= i) & (j - i + 1 <= L) & start_ok[:, None] & end_ok[None, :]
    m = np.where(allowed, s[:, None] + e[None, :], -np.inf)
    k = np.argmax(m)
    return m.flat[k], k // T, k % T


def test_band_decoding_equals_brute_force(feats):
    g = torch.Generator().manual_seed(0)
    N, T = feats.meta["max_context"].shape
    rows = torch.randperm(N, generator=g)[:300]
    s, e = torch.randn(300, T, generator=g), torch.randn(300, T, generator=g)
    start_ok = torch.as_tensor(feats.meta["max_context"])[rows]
    end_ok = torch.as_tensor(feats.meta["token_to_char"][..., 0] >= 0)[rows]
    for L in (1, 5, 30):
        scores, starts, ends = best_spans(s, e, start_ok, end_ok, max_answer_length=L, n_best=5, chunk=64)
        assert ((ends >= starts) & (ends - starts + 1 <= L)).all()
        finite = torch.isfinite(scores)
        assert start_ok.gather(1, starts)[finite].all() and end_ok.gather(1, ends)[finite].all()
        assert (scores[:, :-1] >= scores[:, 1:]).all()  # n-best sorted
        s1, i1, j1 = best_spans(s, e, start_ok, end_ok, max_answer_length=L, n_best=1, chunk=64)
        assert torch.equal(s1[:, 0], scores[:, 0])  # the n_best=1 shortcut agrees with the band
        for r in range(0, 300, 7):
            best, i, j = brute_force_best(s[r].numpy(), e[r].numpy(), start_ok[r].numpy(), end_ok[r].numpy(), L)
            assert scores[r, 0].item() == pytest.approx(best, abs=1e-5)
            assert (starts[r, 0].item(), ends[r, 0].item()) == (i, j)
            assert (i1[r, 0].item(), j1[r, 0].item()) == (i, j)


def test_decoding_respects_constraints_on_random_logits(feats, dev):
    g = torch.Generator().manual_seed(1)
    N, T = feats.meta["max_context"].shape
    s, e = torch.randn(N, T, generator=g) * 3, torch.randn(N, T, generator=g) * 3
    t = time.perf_counter()
    nbest = decode(s, e, feats, max_answer_length=30, n_best=3)
    print(f"decode n_best=3 over {N} windows: {time.perf_counter() - t:.2f}s")
    for ex in dev[:2000]:
        cands = nbest[ex.id]
        assert 1 <= len(cands) <= 3
        assert [c["score"] for c in cands] == sorted((c["score"] for c in cands), reverse=True)
        for c in cands:
            assert c["text"] == ex.context[c["start_char"] : c["end_char"]]  # a slice of the context
            assert c["start_char"] < c["end_char"]
    # max_answer_length=1: every answer is the text of exactly one word piece of the context
    from bertlab.data.tokenizer import bert_uncased_tokenizer

    tok = bert_uncased_tokenizer()
    one = decode(s, e, feats, max_answer_length=1)
    for ex in dev[:300]:
        answer = one[ex.id]
        enc = tok.backend.encode(ex.context, add_special_tokens=False)
        assert any(ex.context[a:b] == answer for a, b in enc.offsets), (ex.id, answer)  # one piece


def test_decode_speed_and_task_evaluate(feats, dev):
    """The whole dev set decodes in seconds (measured on a 2-core CPU: about 1 s)."""
    task = get_task("squad")
    start, end = oracle_logits(feats)
    t = time.perf_counter()
    scores = task.evaluate((start, end), feats)
    seconds = time.perf_counter() - t
    print(f"featurize dev at 384/128: {feats.seconds:.2f}s; decode + score: {seconds:.2f}s")
    assert seconds < 30 and feats.seconds < 60
    assert set(scores) == {"f1", "exact_match"} and scores["exact_match"] > 99.5


def test_forward_and_evaluate_with_a_tiny_model(tok, dev):
    task = get_task("squad")
    sub = featurize_squad(dev[:48], tok, max_len=128, doc_stride=64)
    torch.manual_seed(0)
    model = task.build_model(BertConfig.preset("tiny", vocab_size=tok.vocab_size))
    loader = DataLoader(sub, batch_size=16, collate_fn=task.collate)
    batch = next(iter(loader))
    out = model(**batch)
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions"}
    assert torch.isfinite(out.loss) and out.start_logits.shape == batch["input_ids"].shape
    out.loss.backward()
    model.eval()
    with torch.no_grad():
        outs = [task.gather(model(**b)) for b in loader]  # ragged T across batches
    scores = task.evaluate(outs, sub, max_answer_length=10)
    assert 0 <= scores["exact_match"] <= scores["f1"] <= 100
    preds = decode(*stack_span_logits(outs), sub, max_answer_length=10)
    for ex in dev[:48]:
        assert preds[ex.id] in ex.context and len(tok.tokenize(preds[ex.id])) <= 10
    # span_logits runs the model over every window itself: the same logits, the same answers
    model.train()
    start, end = span_logits(model, sub, batch_size=7)
    assert model.training and start.shape == (len(sub), max(sub.lengths()))
    ref_start, ref_end = stack_span_logits(outs)
    real = torch.isfinite(start)
    assert real.sum(1).tolist() == sub.lengths().tolist()  # -inf exactly past each window's end
    assert torch.allclose(start[real], ref_start[real], atol=1e-5)
    assert torch.allclose(end[real], ref_end[real], atol=1e-5)
    assert decode(start, end, sub, max_answer_length=10) == preds


# --- pieces and bad input --------------------------------------------------------------------
def test_window_starts_and_max_context_by_hand():
    assert window_starts(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert window_starts(10, 4, 9) == [(0, 4), (4, 4), (8, 2)]  # stride > window: no token skipped
    assert window_starts(3, 4, 2) == [(0, 3)]
    assert window_starts(0, 4, 2) == [(0, 0)]
    # tokens 0..9, windows (0,4) (2,4) (4,4) (6,4): token 3 sits at the edge of window 0 and in
    # the middle of window 1 -> 1; token 2: window 0 score 1.04, window 1 score 0.04 -> window 0
    owner = max_context_windows(10, [(0, 4), (2, 4), (4, 4), (6, 4)])
    assert owner.tolist() == [0, 0, 0, 1, 1, 2, 2, 3, 3, 3]


def test_locate_answer_and_char_spans():
    ctx = "The cat sat on the mat."
    assert locate_answer(ctx, "cat", 4) == (4, 7)
    assert locate_answer(ctx, "the", 0) == (15, 18)  # wrong start: nearest occurrence
    assert locate_answer(ctx, "dog", 4) is None and locate_answer(ctx, "  ", 3) is None
    off = np.array([(0, 3), (4, 7), (8, 11), (12, 14), (15, 18), (19, 22), (22, 23)])
    assert char_span_to_tokens(off, 4, 11) == (1, 2)
    assert char_span_to_tokens(off, 5, 6) == (1, 1)  # inside one token
    assert char_span_to_tokens(off, 3, 4) is None  # only a space


def test_bad_input_is_counted_with_its_location(tok):
    examples = [
        {"id": "ok", "question": "Where?", "context": "In Paris, France.", "answers": [("Paris", 3)]},
        {"id": "moved", "question": "Where?", "context": "In Paris, France.", "answers": [("France", 0)]},
        {"id": "absent", "question": "Who?", "context": "In Paris, France.", "answers": [("Berlin", 3)]},
        {"id": "empty", "question": "Who?", "context": "", "answers": [("x", 0)]},
        {"id": "long-q", "question": "why " * 100, "context": "Because.", "answers": [("Because", 0)]},
        {"id": "no-q", "question": "", "context": "Because.", "answers": [{"text": "Because", "answer_start": 0}]},
    ]
    f = featurize_squad(examples, tok, max_len=96, doc_stride=32, max_query_len=16)
    r = f.report
    assert r["answers_moved"] == 1 and r["locations"]["answers_moved"] == ["moved"]
    assert r["answers_not_found"] == 2 and r["locations"]["answers_not_found"] == ["absent", "empty"]
    assert r["empty_contexts"] == 1 and r["questions_truncated"] == 1 and r["empty_questions"] == 1
    assert len(f) == 6  # an empty context still has one (empty) window
    start, end = oracle_logits(f)
    pred = decode(start, end, f)
    assert pred["ok"] == "Paris" and pred["moved"] == "France" and pred["empty"] == ""
    assert pred["long-q"] == "Because" and pred["no-q"] == "Because"
    with pytest.raises(ValueError, match="leaves no room for the context"):
        featurize_squad([examples[4]], tok, max_len=18, max_query_len=16)
    with pytest.raises(ValueError, match=r"expected start/end logits of shape \(6"):
        decode(start[:3], end[:3], f)


def test_split_by_article_never_shares_an_article(dev):
    train, held = split_by_article(dev, eval_fraction=0.25, seed=0)
    titles_train = {ex.title for ex in train}
    titles_held = {ex.title for ex in held}
    assert not titles_train & titles_held  # no article on both sides
    assert not {ex.context for ex in train} & {ex.context for ex in held}  # hence no paragraph
    assert len(train) + len(held) == len(dev)
    assert len(titles_held) == round(0.25 * 48) and len(titles_train) == 48 - len(titles_held)
    ids = [ex.id for ex in dev]
    assert [ex.id for ex in train] == [i for i in ids if i in {ex.id for ex in train}]  # order kept
    again, _ = split_by_article(dev, eval_fraction=0.25, seed=0)
    other, _ = split_by_article(dev, eval_fraction=0.25, seed=1)
    assert [ex.id for ex in again] == [ex.id for ex in train]
    assert {ex.title for ex in other} != titles_train
    two = [{"title": t, "id": t} for t in "ab"]
    assert [len(x) for x in split_by_article(two, eval_fraction=0.01)] == [1, 1]
    with pytest.raises(ValueError, match="at least 2 articles"):
        split_by_article(two[:1])
    with pytest.raises(ValueError, match="eval_fraction"):
        split_by_article(two, eval_fraction=1.0)


# --- SQuAD 2.0: the no-answer rule -------------------------------------------------------------
from bertlab.tasks.squad import (  # noqa: E402
    answer_or_null,
    best_null_threshold,
    null_and_best_span,
    null_threshold_sweep,
)


def test_null_wins_by_hand():
    # position 0 is [CLS]: s_null = 3 + 3 = 6; best span: start 2 (2.0) + end 3 (1.0) = 3
    start = torch.tensor([3.0, 0.0, 2.0, 0.0, -1.0, 0.0])
    end = torch.tensor([3.0, 0.0, 0.0, 1.0, 0.0, -1.0])
    assert null_and_best_span(start, end) == (6.0, 3.0, (2, 3))
    assert answer_or_null(start, end, tau=0.0) is None  # 3 > 6 + 0 is false: no answer
    assert answer_or_null(start, end, tau=-2.9) is None  # 3 > 3.1 is false ...
    assert answer_or_null(start, end, tau=-3.5) == (2, 3)  # ... 3 > 2.5 is true
    assert answer_or_null(start, end, tau=-3.0) is None  # strictly greater: 3 > 3 is false


def test_span_wins_by_hand():
    start = torch.tensor([0.5, 1.0, 4.0, 0.0, 0.0])
    end = torch.tensor([0.5, 0.0, 0.0, 0.0, 3.0])
    # s_null = 1; spans: (2, 4) = 7 is the best (j >= i), longer than 2 tokens
    assert null_and_best_span(start, end) == (1.0, 7.0, (2, 4))
    assert answer_or_null(start, end) == (2, 4)
    assert answer_or_null(start, end, tau=5.9) == (2, 4)
    assert answer_or_null(start, end, tau=6.0) is None
    # at most 2 tokens: (2, 4) is too long; the best is then (2, 2) or (2, 3) = 4
    s_null, s_hat, span = null_and_best_span(start, end, max_answer_length=2)
    assert s_hat == 4.0 and span in {(2, 2), (2, 3)}
    # the end may not come before the start: end 4 is the only good end, start 2 the only good start
    start_ok = torch.tensor([True, True, False, True, True])
    assert null_and_best_span(start, end, start_ok=start_ok) == (1.0, 4.0, (1, 4))
    # spans restricted to nothing: no answer possible
    none = torch.zeros(5, dtype=torch.bool)
    assert null_and_best_span(start, end, start_ok=none) == (1.0, float("-inf"), None)
    assert answer_or_null(start, end, tau=-100.0, start_ok=none) is None


def test_null_and_best_span_against_brute_force():
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        T = int(torch.randint(2, 12, (1,), generator=g))
        L = int(torch.randint(1, 6, (1,), generator=g))
        s, e = torch.randn(T, generator=g), torch.randn(T, generator=g)
        ok = torch.rand(T, generator=g) < 0.8
        best = max(
            (float(s[i] + e[j]) for i in range(1, T) for j in range(i, min(i + L, T)) if ok[i] and ok[j]),
            default=float("-inf"),
        )
        s_null, s_hat, span = null_and_best_span(s, e, L, start_ok=ok, end_ok=ok)
        assert s_null == pytest.approx(float(s[0] + e[0]))
        assert s_hat == pytest.approx(best)
        if span is not None:
            i, j = span
            assert 1 <= i <= j < i + L and ok[i] and ok[j]


def test_null_rule_bad_input():
    with pytest.raises(ValueError, match=r"one window.*\(T,\)"):
        null_and_best_span(torch.zeros(2, 5), torch.zeros(2, 5))
    with pytest.raises(ValueError, match="start_ok has shape"):
        null_and_best_span(torch.zeros(5), torch.zeros(5), start_ok=torch.ones(4, dtype=torch.bool))


def test_threshold_sweep_by_hand():
    # margins s_hat - s_null of five questions; the first two have an answer
    margins = [3.0, 1.0, -1.0, -2.0, 0.5]
    has = [True, True, False, False, False]
    taus, scores, answered = null_threshold_sweep(margins, has)
    # sorted margins 3 > 1 > 0.5 > -1 > -2: tau +inf, midpoints 2, 0.75, -0.25, -1.5, then -inf
    assert taus.tolist() == [np.inf, 2.0, 0.75, -0.25, -1.5, -np.inf]
    assert answered.tolist() == [0, 1, 2, 3, 4, 5]
    # abstain on all: the 3 unanswerable right (60%); answer the 2 answerable only: 100%
    assert scores.tolist() == pytest.approx([60.0, 80.0, 100.0, 80.0, 60.0, 40.0])
    assert best_null_threshold(margins, has) == (0.75, 100.0)
    tau, _ = best_null_threshold(margins, has)
    answered_now = [answer_or_null(torch.tensor([0.0, m]), torch.tensor([0.0, 0.0]), tau) is not None for m in margins]
    assert answered_now == has  # the rule with this tau answers exactly the answerable questions
    # the naive tau = 0 would also answer question 5 (margin 0.5): 80%
    assert scores[answered == sum(np.array(margins) > 0)].item() == pytest.approx(80.0)

    # with F1 of each answerable question's span: question 2's span is poor (F1 0.2)
    f1 = [1.0, 0.2, 0.0, 0.0, 0.0]
    taus, scores, _ = null_threshold_sweep(margins, has, f1)
    # answer none 3/5; answer q1: (1 + 3)/5; q1, q2: (1.2 + 3)/5; + q5: (1.2 + 2)/5 ...
    assert scores.tolist() == pytest.approx([60.0, 80.0, 84.0, 64.0, 44.0, 24.0])
    assert best_null_threshold(margins, has, f1) == (0.75, pytest.approx(84.0))
    # when q2's answer is worthless, answering it costs nothing and gains nothing: ties go to
    # the larger tau, the one that abstains more
    assert best_null_threshold(margins, has, [1.0, 0.0, 0.0, 0.0, 0.0]) == (2.0, 80.0)


def test_threshold_sweep_edge_cases():
    # ties in the margins move together; -inf (no span) is never answered
    taus, scores, answered = null_threshold_sweep([1.0, 1.0, float("-inf")], [True, False, False])
    assert taus.tolist() == [np.inf, -np.inf] and answered.tolist() == [0, 2]
    assert scores.tolist() == pytest.approx([200 / 3, 200 / 3])
    with pytest.raises(ValueError, match="margins but"):
        null_threshold_sweep([1.0, 2.0], [True])
    with pytest.raises(ValueError, match="finite"):
        null_threshold_sweep([float("nan")], [True])
    with pytest.raises(ValueError, match="between 0 and 1"):
        null_threshold_sweep([1.0], [True], [80.0])
