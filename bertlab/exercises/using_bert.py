"""The checks of assignment 04_using_bert: check_span (chapter 13), check_features (chapter 15)."""

from __future__ import annotations

import functools
from typing import Callable

import torch

from bertlab.model import BertModel
from bertlab.notebook import minilm_path

from .framework import (
    Parts,
    bert_tokenizer,
    call_student,
    expect_same,
    sentence_documents,
    squad_dev_examples,
)


@functools.lru_cache(maxsize=1)
def _squad_features():
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks.squad import featurize_squad

    return featurize_squad(squad_dev_examples()[:40], bert_tokenizer(), max_len=128, doc_stride=64, max_query_len=32)


def check_span(best_span: Callable) -> None:
    """best_span(start_logits (T,), end_logits (T,), context_mask (T,) bool, max_answer_length)
    -> (i, j): the pair maximising start_logits[i] + end_logits[j] with i <= j,
    j - i + 1 <= max_answer_length and context_mask[i] and context_mask[j]."""
    __tracebackhide__ = True
    name = "span"
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks.squad import best_spans, oracle_logits

    f = _squad_features()
    in_context = torch.as_tensor(f.meta["token_to_char"][..., 0] >= 0)
    N, T = in_context.shape
    g = torch.Generator().manual_seed(0)
    trials = [
        ("random logits", torch.randn(N, T, generator=g), torch.randn(N, T, generator=g), 30),
        ("random logits, max_answer_length=3", torch.randn(N, T, generator=g), torch.randn(N, T, generator=g), 3),
    ]
    so, eo = oracle_logits(f)
    trials.append(("oracle logits (1 at the gold start / end)", so, eo, 30))
    n_checked = 0
    parts = Parts(name)
    for label, s, e, L in trials:
        scores, starts, ends = best_spans(s, e, in_context, in_context, max_answer_length=L)
        with parts(label):
            for w in range(N):
                if not in_context[w].any():
                    continue
                got = call_student(name, best_span, s[w].clone(), e[w].clone(), in_context[w].clone(), L)
                try:
                    i, j = (int(x) for x in got)
                except Exception:
                    parts.fail(f"return a pair of ints (i, j), got {got!r}")
                what = f"window {w} ({label}, max_answer_length={L})"
                if not (0 <= i < T and 0 <= j < T):
                    parts.fail(f"{what}: ({i}, {j}) is outside the window of {T} tokens")
                if j < i:
                    parts.fail(f"{what}: your span ({i}, {j}) ends before it starts; allow only j >= i")
                if j - i + 1 > L:
                    parts.fail(
                        f"{what}: your span ({i}, {j}) is {j - i + 1} tokens long, more than max_answer_length={L}"
                    )
                for pos, which in ((i, "start"), (j, "end")):
                    if not in_context[w, pos]:
                        parts.fail(
                            f"{what}: the {which} token {pos} is not a context token (it is the question, "
                            "[CLS], [SEP] or padding); allow only positions where context_mask is True"
                        )
                score = (s[w, i] + e[w, j]).item()
                best = scores[w, 0].item()
                if score < best - 1e-5:
                    parts.fail(
                        f"{what}: your span ({i}, {j}) scores {score:.4f}, but ({int(starts[w, 0])}, "
                        f"{int(ends[w, 0])}) scores {best:.4f}; search every allowed (i, j) pair"
                    )
                n_checked += 1
    parts.done(
        f"{n_checked} windows of {len(f.examples)} real SQuAD dev questions (random and oracle "
        "logits, two max_answer_length) against bertlab.tasks.squad.best_spans"
    )


STRATEGIES = ("first_layer", "last_hidden", "sum_all", "second_to_last", "sum_last_four", "concat_last_four")


@functools.lru_cache(maxsize=1)
def minilm_hidden_states():
    model = BertModel.from_hf(minilm_path()).eval()
    sents = [s for d in sentence_documents()[:2] for s in d][:3]
    enc = bert_tokenizer().encode_batch(sents, max_length=32, truncation=True, padding="longest", return_tensors="pt")
    with torch.no_grad():
        out = model(enc.input_ids, attention_mask=enc.attention_mask, output_hidden_states=True)
    return out.hidden_states


def combine_layers_reference(hs, strategy):
    return {
        "first_layer": lambda: hs[0],
        "last_hidden": lambda: hs[-1],
        "sum_all": lambda: torch.stack(hs[1:]).sum(0),
        "second_to_last": lambda: hs[-2],
        "sum_last_four": lambda: torch.stack(hs[-4:]).sum(0),
        "concat_last_four": lambda: torch.cat(hs[-4:], dim=-1),
    }[strategy]()


def check_features(combine_layers: Callable) -> None:
    """combine_layers(hidden_states, strategy) -> (B, T, H) or (B, T, 4H); hidden_states is the
    tuple of L+1 tensors (B, T, H) from output_hidden_states (embeddings first)."""
    __tracebackhide__ = True
    name = "features"
    hs = minilm_hidden_states()
    n = len(hs) - 1
    # Results of the usual mistakes, named by what they actually compute.
    wrong = {f"hidden_states[{k}]": hs[k] for k in range(len(hs))}
    wrong |= {
        "the sum of ALL L+1 entries (embedding output included)": torch.stack(hs).sum(0),
        "the sum of hidden_states[-5:-1] (off by one)": torch.stack(hs[-5:-1]).sum(0),
        "the sum of the FIRST four entries": torch.stack(hs[:4]).sum(0),
        "the sum of hidden_states[-3:] (three layers)": torch.stack(hs[-3:]).sum(0),
        "the MEAN of the last four": torch.stack(hs[-4:]).mean(0),
        "the concatenation of the last four in reverse order": torch.cat(hs[-4:][::-1], dim=-1),
        "the concatenation of hidden_states[-5:-1]": torch.cat(hs[-5:-1], dim=-1),
    }
    parts = Parts(name)
    for strategy in STRATEGIES:
        what = f"strategy {strategy!r} on a real all-MiniLM-L6-v2 forward pass ({n} layers + embeddings)"
        with parts(strategy):
            got = call_student(name, combine_layers, tuple(h.clone() for h in hs), strategy)
            hints = [(v, f"your result equals {k}") for k, v in wrong.items()]
            expect_same(name, got, combine_layers_reference(hs, strategy), what, atol=1e-4, hints=hints)
    parts.done(
        f"all {len(STRATEGIES)} strategies of the paper's table 7 on real MiniLM hidden states "
        f"({n} layers, H={hs[0].shape[-1]})"
    )
