"""Span question answering (SQuAD v1.1): questions and paragraphs in, answer spans out.

BERT points into the paragraph (Devlin et al., 2018, section 4.2): with the question as sentence
A and the paragraph as B, learned vectors S and E score each paragraph token T_i as the answer's
start (S . T_i) and end (E . T_j), and the answer is the span maximising S . T_i + E . T_j, i <= j.
A long paragraph is read through overlapping windows [CLS] question [SEP] window [SEP], a token
being scored only in its "max-context" window, as in BERT's released code. The gold answer, given
in characters, becomes tokens through the tokenizer's offsets; a window without it points at [CLS].
SQuAD 2.0 (section 4.3): `answer_or_null` compares the best span with the null score at [CLS],
and `best_null_threshold` picks the margin tau on dev.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from bertlab.tasks.inputs import (
    Features,
    SpecialIds,
    Tally,
    detach_cpu,
    encode_texts,
    example_field,
    fast_tokenizer,
    predict_batches,
    stack_ragged,
)
from bertlab.tasks.metrics import squad_scores


def _answers(example: Any) -> list[tuple[str, int]]:
    """[(text, answer_start), ...] from tuples, dicts or objects."""
    out = []
    for a in example_field(example, "answers"):
        if isinstance(a, (tuple, list)):
            out.append((a[0], int(a[1])))
        else:
            out.append((example_field(a, "text"), int(example_field(a, "answer_start"))))
    return out


def locate_answer(context: str, text: str, answer_start: int) -> tuple[int, int] | None:
    """Character span [start, end) of the answer: at answer_start if the text is there, else its
    nearest occurrence; None if the text does not occur."""
    if not text.strip():
        return None
    if context[answer_start : answer_start + len(text)] == text:
        return answer_start, answer_start + len(text)
    hits, i = [], context.find(text)
    while i != -1:
        hits.append(i)
        i = context.find(text, i + 1)
    if not hits:
        return None
    best = min(hits, key=lambda h: abs(h - answer_start))
    return best, best + len(text)


def char_span_to_tokens(offsets: np.ndarray, start_char: int, end_char: int) -> tuple[int, int] | None:
    """The first and last token (inclusive) covering characters [start_char, end_char), from the
    (n, 2) token offsets; None if no token overlaps the span."""
    first = int(np.searchsorted(offsets[:, 1], start_char, side="right"))  # first token ending after start
    last = int(np.searchsorted(offsets[:, 0], end_char, side="left")) - 1  # last token starting before end
    if first >= len(offsets) or last < first:
        return None
    return first, last


def gold_token_span(
    context: str, offsets: np.ndarray, text: str, answer_start: int
) -> tuple[tuple[int, int] | None, list[str]]:
    """The first and last context token of a gold answer, and the report keys it earns:
    answers_moved, answers_not_found, answers_inside_tokens (tokens cover a little more)."""
    span = locate_answer(context, text, answer_start)
    if span is None:
        return None, ["answers_not_found"]
    problems = ["answers_moved"] if span[0] != answer_start else []
    tokens = char_span_to_tokens(offsets, *span) if len(offsets) else None
    if tokens is None:
        return None, problems + ["answers_not_found"]
    first, last = tokens
    if offsets[first, 0] != span[0] or offsets[last, 1] != span[1]:
        problems.append("answers_inside_tokens")  # e.g. "gold" inside "golden"
    return tokens, problems


def window_starts(n_tokens: int, window_len: int, doc_stride: int) -> list[tuple[int, int]]:
    """(start, length) of the windows over n_tokens: up to window_len tokens each, each starting
    doc_stride (at most a window) after the previous, the last reaching the end."""
    spans, start = [], 0
    while True:
        length = min(window_len, n_tokens - start)
        spans.append((start, length))
        if start + length >= n_tokens:
            return spans
        start += min(length, doc_stride)


def max_context_windows(n_tokens: int, spans: Sequence[tuple[int, int]]) -> np.ndarray:
    """For each context token, the window where it has the most context: token k in window
    (s, L) scores min(k - s, s + L - 1 - k) + 0.01 L; ties go to the earlier window."""
    best = np.full(n_tokens, -np.inf)
    owner = np.full(n_tokens, -1, dtype=np.int64)
    for w, (s, L) in enumerate(spans):
        pos = np.arange(L)
        score = np.minimum(pos, L - 1 - pos) + 0.01 * L
        better = score > best[s : s + L]
        best[s : s + L][better] = score[better]
        owner[s : s + L][better] = w
    return owner


def featurize_squad(
    examples: Sequence[Any], tokenizer: Any, max_len: int = 384, doc_stride: int = 128, max_query_len: int = 64
) -> Features:
    """SQuAD examples (id, question, context, answers) -> one item per window: input_ids,
    token_type_ids, start_positions / end_positions of the first gold answer (0, [CLS], where the
    window lacks it or the question has none).

    `features.meta`, one row per window: example_index (N,), token_to_char (N, T, 2) (each
    token's character span in the context, -1 outside it) and max_context (N, T) (a context
    token whose max-context window is this one)."""
    if max_len < 8:
        raise ValueError(f"max_len={max_len} is too short for a question and a context window")
    backend = fast_tokenizer(tokenizer)
    special = SpecialIds.of(backend)
    questions = [example_field(ex, "question") for ex in examples]
    contexts = [example_field(ex, "context") for ex in examples]
    for i, (q, c) in enumerate(zip(questions, contexts)):
        if not isinstance(q, str) or not isinstance(c, str):
            raise TypeError(
                f"SQuAD example {i} (id {example_field(examples[i], 'id')!r}): question and context must be str"
            )
    q_enc = encode_texts(backend, questions)
    unique = list(dict.fromkeys(contexts))  # a paragraph has ~5 questions: tokenize it once
    c_enc = dict(zip(unique, encode_texts(backend, unique)))
    c_offsets = {c: np.array(e.offsets, dtype=np.int64).reshape(-1, 2) for c, e in c_enc.items()}

    tally = Tally()
    items, example_index, context_rows = [], [], []  # context_rows: (c0, offsets, max-context flags)
    for e, ex in enumerate(examples):
        qid, context = example_field(ex, "id"), contexts[e]
        q_ids = q_enc[e].ids
        if not q_ids:
            tally.note("empty_questions", qid)
        if len(q_ids) > max_query_len:
            tally.note("questions_truncated", qid)
            q_ids = q_ids[:max_query_len]
        budget = max_len - len(q_ids) - 3  # [CLS] q [SEP] window [SEP]
        if budget < 1:
            raise ValueError(
                f"max_len={max_len} leaves no room for the context after a question of "
                f"{len(q_ids)} tokens; raise max_len or lower max_query_len={max_query_len}"
            )
        ctx_ids, offsets = c_enc[context].ids, c_offsets[context]
        if not ctx_ids:
            tally.note("empty_contexts", qid)

        answer_tokens = None
        answers = _answers(ex)
        if answers:
            answer_tokens, problems = gold_token_span(context, offsets, *answers[0])
            for problem in problems:
                tally.note(problem, qid)
        else:
            tally.note("unanswered", qid)

        spans = window_starts(len(ctx_ids), budget, doc_stride)
        owner = max_context_windows(len(ctx_ids), spans)
        tally["windows"] += len(spans)
        if len(spans) > 1:
            tally["examples_with_several_windows"] += 1
        c0 = len(q_ids) + 2  # where the context starts in the window
        holding = []  # the windows that hold the whole answer
        if answer_tokens is not None:
            first, last = answer_tokens
            holding = [w for w, (s, L) in enumerate(spans) if s <= first and last < s + L]
            if not holding:
                tally.note("answers_in_no_window", qid)  # longer than a window: every window says [CLS]
            elif owner[first] not in holding:
                # decoding starts spans at max-context tokens only: it cannot return this span
                tally.note("answers_start_outside_max_context", qid)
        for w, (s, L) in enumerate(spans):
            input_ids = [special.cls, *q_ids, special.sep, *ctx_ids[s : s + L], special.sep]
            item = {
                "input_ids": np.array(input_ids, dtype=np.int64),
                "token_type_ids": np.array([0] * c0 + [1] * (L + 1), dtype=np.int64),
                "start_positions": 0,  # [CLS]: no answer in this window (SQuAD 2.0's rule for none at all)
                "end_positions": 0,
            }
            if w in holding:
                item["start_positions"], item["end_positions"] = c0 + first - s, c0 + last - s
            elif answers:
                tally["windows_without_answer"] += 1
            items.append(item)
            example_index.append(e)
            context_rows.append((c0, offsets[s : s + L], owner[s : s + L] == w))

    N, T = len(items), max((len(it["input_ids"]) for it in items), default=0)
    token_to_char = np.full((N, T, 2), -1, dtype=np.int32)
    max_context = np.zeros((N, T), dtype=bool)
    for n, (c0, chars, owned) in enumerate(context_rows):
        token_to_char[n, c0 : c0 + len(chars)] = chars
        max_context[n, c0 : c0 + len(owned)] = owned
    head = dict(examples=len(examples), max_len=max_len, doc_stride=doc_stride, max_query_len=max_query_len)
    # fmt: off
    counted = (
        "windows", "windows_without_answer", "examples_with_several_windows", "questions_truncated",
        "empty_questions", "empty_contexts", "answers_moved", "answers_not_found", "answers_inside_tokens",
        "answers_in_no_window", "answers_start_outside_max_context", "unanswered",
    )
    # fmt: on
    meta = {
        "example_index": np.array(example_index, dtype=np.int64),
        "token_to_char": token_to_char,
        "max_context": max_context,
        "pad_id": special.pad,
    }
    return Features("squad", items, examples, tally.report(head, counted), meta)


# --- Held-out articles ---
def split_by_article(examples: Sequence[Any], eval_fraction: float = 0.2, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """(train, held_out): the questions of a random eval_fraction of the articles (titles) are
    held out, so that no paragraph is read on both sides. Examples keep their order; at least one
    article goes to each side."""
    titles = list(dict.fromkeys(example_field(ex, "title") for ex in examples))  # in order of appearance
    if len(titles) < 2:
        raise ValueError(f"splitting by article needs at least 2 articles, got {len(titles)}")
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be between 0 and 1, got {eval_fraction}")
    n_eval = min(max(1, round(eval_fraction * len(titles))), len(titles) - 1)
    order = np.random.default_rng(seed).permutation(len(titles))
    held = {titles[i] for i in order[:n_eval]}
    train = [ex for ex in examples if example_field(ex, "title") not in held]
    held_out = [ex for ex in examples if example_field(ex, "title") in held]
    return train, held_out


# --- Decoding: best span per question ---
def best_spans(
    start_logits: torch.Tensor,
    end_logits: torch.Tensor,
    start_ok: torch.Tensor,
    end_ok: torch.Tensor,
    max_answer_length: int = 30,
    n_best: int = 1,
    chunk: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The n_best spans of every window: (scores, starts, ends), each (N, n_best).

    Span (i, j) scores start_logits[i] + end_logits[j], allowed where start_ok[i], end_ok[j] and
    i <= j < i + max_answer_length. The candidates of a window form a (T, L) band s_i + e_{i+d}:
    O(T L), not a (T, T) matrix. Missing candidates score -inf."""
    if start_logits.shape != end_logits.shape or start_logits.shape != start_ok.shape:
        raise ValueError(
            f"start_logits {tuple(start_logits.shape)}, end_logits {tuple(end_logits.shape)} "
            f"and the masks {tuple(start_ok.shape)} must have one shape (windows, T)"
        )
    if max_answer_length < 1:
        raise ValueError(f"max_answer_length must be at least 1, got {max_answer_length}")
    N, T = start_logits.shape
    L = min(max_answer_length, T)
    neg = torch.tensor(float("-inf"))
    scores, starts, ends = [], [], []
    for lo in range(0, N, chunk):
        s = torch.where(start_ok[lo : lo + chunk], start_logits[lo : lo + chunk].float(), neg)  # (n, T)
        e = torch.where(end_ok[lo : lo + chunk], end_logits[lo : lo + chunk].float(), neg)
        e = torch.cat([e, torch.full((e.size(0), L - 1), float("-inf"))], dim=1)  # (n, T + L - 1)
        ahead = e.unfold(1, L, 1)  # (n, T, L) strided view, no copy: ahead[w, i, d] = e_{i+d}
        if n_best == 1:
            # the best end for start i does not depend on s_i: no (n, T, L) sum needed
            best_end, d = ahead.max(dim=2)  # (n, T)
            top, i = (s + best_end).max(dim=1, keepdim=True)  # (n, 1)
            scores.append(top)
            starts.append(i)
            ends.append(i + d.gather(1, i))
            continue
        band = s[:, :, None] + ahead  # (n, T, L): band[w, i, d] = s_i + e_{i+d}
        k = min(n_best, T * L)
        top, idx = band.flatten(1).topk(k, dim=1)  # (n, k)
        scores.append(top)
        starts.append(idx // L)
        ends.append(idx // L + idx % L)
    if not scores:
        empty = torch.empty(0, n_best)
        return empty, empty.long(), empty.long()
    return torch.cat(scores), torch.cat(starts), torch.cat(ends)


def decode(
    start_logits: Any, end_logits: Any, features: Features, max_answer_length: int = 30, n_best: int = 1
) -> dict[str, Any]:
    """Answers for every question: {id: text}, or with n_best > 1 {id: [candidates]}, each
    {"text", "score", "start_char", "end_char"}, best first. Logits (N, T' >= T), windows in
    order; a question with no allowed span gets ""."""
    meta = features.meta
    token_to_char = torch.as_tensor(meta["token_to_char"])  # (N, T, 2)
    max_context = torch.as_tensor(meta["max_context"])  # (N, T)
    start_logits = torch.as_tensor(start_logits).detach().float().cpu()
    end_logits = torch.as_tensor(end_logits).detach().float().cpu()
    N, T = max_context.shape
    if start_logits.dim() != 2 or start_logits.shape[0] != N or start_logits.shape[1] < T:
        raise ValueError(
            f"expected start/end logits of shape ({N}, >= {T}) for {N} windows, got "
            f"{tuple(start_logits.shape)}; pass the outputs of the whole split in order"
        )
    start_logits, end_logits = start_logits[:, :T], end_logits[:, :T]
    in_context = token_to_char[..., 0] >= 0
    scores, starts, ends = best_spans(start_logits, end_logits, max_context, in_context, max_answer_length, n_best)
    k = scores.shape[1]
    # every (window, candidate), sorted by question, then score
    ex = np.repeat(meta["example_index"], k)
    window = np.repeat(np.arange(N), k)
    flat_scores = scores.reshape(-1).numpy()
    flat_starts, flat_ends = starts.reshape(-1).numpy(), ends.reshape(-1).numpy()
    order = np.lexsort((-flat_scores, ex))
    chars = meta["token_to_char"]
    answers: dict[str, Any] = {}
    first = np.searchsorted(ex[order], np.arange(len(features.examples)), side="left")
    last = np.searchsorted(ex[order], np.arange(len(features.examples)), side="right")
    for e, example in enumerate(features.examples):
        context = example_field(example, "context")
        candidates = []
        for r in order[first[e] : min(last[e], first[e] + n_best)]:
            if not np.isfinite(flat_scores[r]):
                break
            w = window[r]
            a, b = chars[w, flat_starts[r], 0], chars[w, flat_ends[r], 1]
            candidates.append(
                {"text": context[a:b], "score": float(flat_scores[r]), "start_char": int(a), "end_char": int(b)}
            )
        qid = example_field(example, "id")
        answers[qid] = candidates if n_best > 1 else (candidates[0]["text"] if candidates else "")
    return answers


def gather_span_logits(output: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(start_logits, end_logits) (B, T) of one batch's output, on the CPU."""
    return detach_cpu(output.start_logits), detach_cpu(output.end_logits)


def stack_span_logits(outputs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """All windows' start and end logits, (N, T) each, -inf padded, from per-batch outputs."""
    if isinstance(outputs, tuple) and len(outputs) == 2 and isinstance(outputs[0], (torch.Tensor, np.ndarray)):
        return detach_cpu(torch.as_tensor(outputs[0])), detach_cpu(torch.as_tensor(outputs[1]))
    pairs = [
        gather_span_logits(o) if hasattr(o, "start_logits") else tuple(detach_cpu(torch.as_tensor(x)) for x in o)
        for o in outputs
    ]
    return stack_ragged([p[0] for p in pairs], float("-inf")), stack_ragged([p[1] for p in pairs], float("-inf"))


def span_logits(model: torch.nn.Module, features: Features, batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """A span model's start and end logits (N, T) for every window, -inf past its end, for
    `decode` or `evaluate_squad` (eval mode, the model's mode restored)."""
    if not len(features):
        return torch.empty(0, 0), torch.empty(0, 0)
    outputs = predict_batches(model, features, gather_span_logits, batch_size)
    start, end = stack_span_logits(outputs)  # (N, T) each
    past_end = torch.arange(start.shape[1]) >= torch.as_tensor(features.lengths())[:, None]
    return start.float().masked_fill(past_end, float("-inf")), end.float().masked_fill(past_end, float("-inf"))


def gold_answers(features: Features) -> dict[str, list[str]]:
    """{id: [gold answer texts]} of the examples behind `features`."""
    return {example_field(ex, "id"): [t for t, _ in _answers(ex)] for ex in features.examples}


def evaluate_squad(
    start_logits: Any, end_logits: Any, features: Features, max_answer_length: int = 30
) -> dict[str, float]:
    """The official SQuAD v1.1 exact match and F1 (percentages) of the decoded answers."""
    predictions = decode(start_logits, end_logits, features, max_answer_length)
    scores = squad_scores(predictions, gold_answers(features))
    return {"f1": scores["f1"], "exact_match": scores["exact_match"]}


def oracle_logits(features: Features) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits 1 at each window's labelled start / end and 0 elsewhere: decoded, they give back the
    gold answers (a check of characters -> tokens -> windows -> characters)."""
    N, T = features.meta["max_context"].shape
    start, end = torch.zeros(N, T), torch.zeros(N, T)
    rows = torch.arange(N)
    start[rows, torch.tensor([it["start_positions"] for it in features.items])] = 1.0
    end[rows, torch.tensor([it["end_positions"] for it in features.items])] = 1.0
    return start, end


# --- SQuAD 2.0: answer, or say there is no answer ---
# Section 4.3: no answer points at [CLS]; a span is answered only when its score s_hat beats the
# null score s_null = S.C + E.C by more than tau, tau chosen on dev to maximise F1.
def null_and_best_span(
    start_logits: Any, end_logits: Any, max_answer_length: int = 30, start_ok: Any = None, end_ok: Any = None
) -> tuple[float, float, tuple[int, int] | None]:
    """One window's SQuAD 2.0 scores (s_null, s_hat, span) from logits (T,), [CLS] at 0.

    s_hat is the score of the best allowed span (i, j), as in `best_spans` (start_ok / end_ok
    default to every position); position 0, the null answer, is never in a span."""
    s = torch.as_tensor(start_logits).detach().float().cpu()
    e = torch.as_tensor(end_logits).detach().float().cpu()
    if s.dim() != 1 or s.shape != e.shape or not len(s):
        raise ValueError(
            f"expected the start and end logits of one window, two tensors of shape "
            f"(T,), got {tuple(s.shape)} and {tuple(e.shape)}"
        )
    masks = []
    for name, ok in (("start_ok", start_ok), ("end_ok", end_ok)):
        m = torch.ones(len(s), dtype=torch.bool) if ok is None else torch.as_tensor(ok, dtype=torch.bool).clone()
        if m.shape != s.shape:
            raise ValueError(f"{name} has shape {tuple(m.shape)}, the logits {tuple(s.shape)}")
        m[0] = False  # [CLS] is the null answer, never part of a span
        masks.append(m[None])
    scores, starts, ends = best_spans(s[None], e[None], *masks, max_answer_length=max_answer_length)
    s_hat = float(scores[0, 0])
    span = (int(starts[0, 0]), int(ends[0, 0])) if s_hat > float("-inf") else None
    return float(s[0] + e[0]), s_hat, span


def answer_or_null(
    start_logits: Any,
    end_logits: Any,
    tau: float = 0.0,
    max_answer_length: int = 30,
    start_ok: Any = None,
    end_ok: Any = None,
) -> tuple[int, int] | None:
    """The best span (i, j) if s_hat > s_null + tau, else None (see `null_and_best_span`)."""
    s_null, s_hat, span = null_and_best_span(start_logits, end_logits, max_answer_length, start_ok, end_ok)
    return span if span is not None and s_hat > s_null + tau else None


def null_threshold_sweep(
    margins: Any, has_answer: Any, answer_scores: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every split of the questions that a threshold tau can make: (taus, scores, answered).

    margins (n,): s_hat - s_null; a question is answered when margin > tau (never at -inf).
    has_answer (n,): whether it has a gold answer. answer_scores (n,) in [0, 1]: what answering an
    answerable question scores (its EM or F1; default 1). Abstaining scores 1 without a gold
    answer, 0 with one. taus run from +inf through the midpoints of the distinct margins to -inf;
    scores is the mean over the n questions (percent), answered how many each tau answers."""
    m = np.asarray(margins, dtype=np.float64).reshape(-1)
    has = np.asarray(has_answer, dtype=bool).reshape(-1)
    if m.shape != has.shape or not len(m):
        raise ValueError(f"{len(m)} margins but {len(has)} has_answer flags; give one of each per question")
    if np.isnan(m).any() or (m == np.inf).any():
        raise ValueError("margins must be finite numbers (or -inf for a question without any span)")
    scores = np.ones(len(m)) if answer_scores is None else np.asarray(answer_scores, dtype=np.float64).reshape(-1)
    if scores.shape != m.shape:
        raise ValueError(f"{len(scores)} answer_scores for {len(m)} questions")
    if ((scores < 0) | (scores > 1)).any():
        raise ValueError("answer_scores are per-question exact match or F1, between 0 and 1")
    finite = np.isfinite(m)
    values, group = np.unique(m[finite], return_inverse=True)  # ascending distinct margins
    gain = np.where(has, scores, 0.0)[finite] - (~has[finite])  # answering instead of abstaining
    group_gain = np.bincount(group, weights=gain, minlength=len(values))[::-1]  # largest margin first
    group_size = np.bincount(group, minlength=len(values))[::-1]
    down = values[::-1]
    taus = np.concatenate([[np.inf], (down[:-1] + down[1:]) / 2, [-np.inf]]) if len(down) else np.array([np.inf])
    totals = (~has).sum() + np.concatenate([[0.0], np.cumsum(group_gain)])
    answered = np.concatenate([[0], np.cumsum(group_size)]).astype(np.int64)
    return taus, 100.0 * totals / len(m), answered


def best_null_threshold(margins: Any, has_answer: Any, answer_scores: Any = None) -> tuple[float, float]:
    """(tau, score): the threshold of `null_threshold_sweep` with the best score, the largest of
    equally good ones (the paper maximises F1: pass each question's F1 as answer_scores)."""
    taus, scores, _ = null_threshold_sweep(margins, has_answer, answer_scores)
    k = int(np.argmax(scores))  # the first maximum: the largest tau
    return float(taus[k]), float(scores[k])
