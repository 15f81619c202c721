"""Dynamic MLM masking, measured on well over 100k real tokens (Gutenberg books tokenized with
the bert-base-uncased vocabulary)."""

from __future__ import annotations

import pytest
import torch

from bertlab import IGNORE_INDEX, BertConfig, BertForPreTraining
from bertlab.data.corpus import load_corpus
from bertlab.data.masking import (
    MaskedLMCollator,
    NextTokenCollator,
    chosen_mask,
    default_max_predictions,
    mask_tokens,
    next_token_labels,
    word_coverage,
)
from bertlab.data.tokenizer import bert_uncased_tokenizer

T = 128


@pytest.fixture(scope="module")
def tok():
    return bert_uncased_tokenizer()


@pytest.fixture(scope="module")
def real_batch(tok):
    """Real paragraphs as (B, 128) rows, padded: > 150k non-special tokens."""
    books = {d.id: d for d in load_corpus("books", "train")}
    paras = [" ".join(p) for i in ("pg11", "pg35", "pg43", "pg46", "pg16") for p in books[i].paragraphs]
    enc = tok.encode_batch(paras, max_length=T, padding="max_length", return_tensors="pt")
    batch = {"input_ids": enc.input_ids, "token_type_ids": enc.token_type_ids, "attention_mask": enc.attention_mask}
    real = ~torch.isin(enc.input_ids, torch.tensor(tok.special_ids))
    assert int(real.sum()) > 150_000 and (enc.input_ids == tok.pad_id).any()
    return batch


def _check_common(tok, batch, out, P):
    ids, new = batch["input_ids"], out["input_ids"]
    B = ids.shape[0]
    pos, lab = out["mlm_positions"], out["mlm_labels"]
    assert pos.shape == lab.shape == (B, P) and pos.dtype == lab.dtype == torch.long
    used = lab != IGNORE_INDEX
    assert (pos[~used] == 0).all()
    # labels are the original tokens at the chosen positions; positions are distinct
    assert torch.equal(lab[used], ids.gather(1, pos)[used])
    sel = torch.zeros_like(ids, dtype=torch.bool).scatter_(1, torch.where(used, pos, 0), used)
    assert int(sel.sum()) == int(used.sum())
    # [CLS], [SEP], [PAD] are never chosen, and untouched wherever not chosen
    special = torch.isin(ids, torch.tensor(tok.special_ids))
    assert not (sel & special).any()
    assert torch.equal(new[~sel], ids[~sel])
    for key in ("token_type_ids", "attention_mask"):
        assert torch.equal(out[key], batch[key])
    return sel, special


def test_statistics_on_real_tokens(tok, real_batch):
    collate = MaskedLMCollator(tok, seed=0)
    out = collate(real_batch)
    P = default_max_predictions(T)
    sel, special = _check_common(tok, real_batch, out, P)
    ids, new = real_batch["input_ids"], out["input_ids"]
    n_real = (~special).sum(1)
    # exactly round(0.15 n) per row, at least one
    expected = torch.clamp(torch.round(n_real * 0.15).long(), min=1)
    assert torch.equal(sel.sum(1), torch.minimum(expected, n_real))
    frac = sel.sum().item() / n_real.sum().item()
    assert abs(frac - 0.15) < 0.003, frac
    n_sel = sel.sum().item()
    masked = (new == tok.mask_id) & sel
    unchanged = (new == ids) & sel
    randomised = sel & ~masked & ~unchanged
    # a random draw can land on the original token: it then counts as "unchanged"; that has
    # probability ~1/30000, far inside the tolerance
    for name, part, want in (("mask", masked, 0.8), ("random", randomised, 0.1), ("keep", unchanged, 0.1)):
        share = part.sum().item() / n_sel
        assert abs(share - want) < 0.015, (name, share)
    # random replacements are real word pieces: never special, never [unusedN]
    reserved = torch.tensor(tok.reserved_ids)
    assert not torch.isin(new[randomised], reserved).any()
    assert len(torch.unique(new[randomised])) > 1000  # spread over the vocabulary
    print(
        f"\n[masking] {n_real.sum().item():,} real tokens, chosen {frac:.4f}; of those "
        f"[MASK] {masked.sum().item() / n_sel:.4f}, random {randomised.sum().item() / n_sel:.4f}, "
        f"kept {unchanged.sum().item() / n_sel:.4f}"
    )


def test_dynamic_and_deterministic(tok, real_batch):
    a = MaskedLMCollator(tok, seed=7)
    first, second = a(real_batch), a(real_batch)
    assert not torch.equal(first["mlm_positions"], second["mlm_positions"])  # new masks each call
    again = MaskedLMCollator(tok, seed=7)(real_batch)
    for k in first:
        assert torch.equal(first[k], again[k])
    # restoring the generator state replays the next draw
    c = MaskedLMCollator(tok, seed=3)
    state = c.state_dict()
    x = c(real_batch)
    c.load_state_dict(state)
    assert torch.equal(c(real_batch)["input_ids"], x["input_ids"])


def test_whole_word_masking_never_splits_a_word(tok, real_batch):
    collate = MaskedLMCollator(tok, whole_word=True, seed=1)
    out = collate(real_batch)
    P = default_max_predictions(T)
    sel, special = _check_common(tok, real_batch, out, P)
    ids = real_batch["input_ids"]
    cont = tok.is_continuation()[ids] & ~special
    # a "##" piece is chosen exactly when the token before it (its word) is chosen
    prev_sel = torch.nn.functional.pad(sel[:, :-1], (1, 0))
    assert torch.equal(sel[cont], prev_sel[cont])
    assert cont.sum() > 5000 and (sel & cont).sum() > 500  # the check really saw multi-piece words
    frac = sel.sum().item() / (~special).sum().item()
    assert abs(frac - 0.15) < 0.01, frac


def test_word_coverage_by_hand(tok):
    ids = torch.tensor([[tok.cls_id] + tok.encode("unaffable dogs").input_ids[1:-1] + [tok.sep_id, tok.pad_id]])
    assert [tok.id_to_token(i) for i in ids[0]] == ["[CLS]", "una", "##ffa", "##ble", "dogs", "[SEP]", "[PAD]"]
    kw = dict(is_continuation=tok.is_continuation(), special_ids=tok.special_ids)
    half = word_coverage(ids, torch.tensor([[0, 0, 1, 0, 1, 0, 0]]).bool(), **kw)
    assert (half.words, half.multi_piece, half.touched, half.touched_multi_piece, half.partial) == (2, 1, 2, 1, 1)
    assert half.partial_tokens[0].tolist() == [False, True, True, True, False, False, False]
    whole = word_coverage(ids, torch.tensor([[0, 1, 1, 1, 0, 0, 0]]).bool(), **kw)
    assert (whole.touched, whole.partial) == (1, 0) and not whole.partial_tokens.any()


def test_piece_level_masking_splits_words_and_whole_word_does_not(tok, real_batch):
    ids = real_batch["input_ids"]
    kw = dict(is_continuation=tok.is_continuation(), special_ids=tok.special_ids)
    for whole_word in (False, True):
        out = MaskedLMCollator(tok, whole_word=whole_word, seed=2)(real_batch)
        chosen = chosen_mask(out["mlm_positions"], out["mlm_labels"], ids.shape[1])
        assert int(chosen.sum()) == int((out["mlm_labels"] != IGNORE_INDEX).sum())
        cover = word_coverage(ids, chosen, **kw)
        assert cover.multi_piece > 5000 and cover.touched_multi_piece > 500
        if whole_word:
            assert cover.partial == 0 and not cover.partial_tokens.any()
        else:  # a piece chosen alone, next to its visible siblings
            assert cover.partial > 0.5 * cover.touched_multi_piece


def test_static_number_of_predictions(tok, real_batch):
    short = {k: v[:64, :20] for k, v in real_batch.items()}
    out = MaskedLMCollator(tok, max_predictions=22)(short)  # T=20 < P=22: slots still 22
    assert out["mlm_positions"].shape == (64, 22)
    assert ((out["mlm_labels"] != IGNORE_INDEX).sum(1) <= 20).all()
    capped = MaskedLMCollator(tok, max_predictions=5)(real_batch)
    assert ((capped["mlm_labels"] != IGNORE_INDEX).sum(1) <= 5).all()


def test_list_of_examples_and_model(tok, real_batch):
    examples = [{k: v[i] for k, v in real_batch.items()} | {"nsp_label": torch.tensor(i % 2)} for i in range(8)]
    batch = MaskedLMCollator(tok, seed=0)(examples)
    assert batch["nsp_labels"].tolist() == [0, 1] * 4
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tok.vocab_size)).eval()
    with torch.no_grad():
        out = model(**batch)
    assert torch.isfinite(out.loss) and out.nsp_loss is not None
    no_nsp = MaskedLMCollator(tok, whole_word=True)({k: v[:8] for k, v in real_batch.items()})
    assert "nsp_labels" not in no_nsp
    with torch.no_grad():
        assert torch.isfinite(model(**no_nsp).loss)


def test_errors(tok, real_batch):
    ids = real_batch["input_ids"][:2]
    with pytest.raises(ValueError, match="is_continuation"):
        mask_tokens(
            ids, mask_id=103, special_ids=[0], random_ids=torch.arange(999, 2000), max_predictions=20, whole_word=True
        )
    with pytest.raises(ValueError, match="batch, length"):
        mask_tokens(ids[0], mask_id=103, special_ids=[0], random_ids=torch.arange(999, 2000), max_predictions=20)
    with pytest.raises(ValueError, match="needs a tokenizer"):
        MaskedLMCollator()


# --- the left-to-right LM's batches (the paper's "LTR & No NSP" ablation) --------------------------
def test_next_token_labels_by_hand():
    # [CLS] my dog [SEP] [PAD] [PAD] and [CLS] hi [SEP] [PAD] [PAD] [PAD]
    ids = torch.tensor([[101, 2026, 3899, 102, 0, 0], [101, 7632, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    assert next_token_labels(ids, mask).tolist() == [
        [2026, 3899, 102, -100, -100, -100],
        [7632, 102, -100, -100, -100, -100],
    ]


def test_next_token_collator_masks_nothing(tok, real_batch):
    batch = {k: v[:16] for k, v in real_batch.items()}
    out = NextTokenCollator(tok)(batch)
    assert set(out) == {"input_ids", "token_type_ids", "attention_mask", "lm_labels"}
    assert torch.equal(out["input_ids"], batch["input_ids"])  # no [MASK], no random token
    lab, ids, real = out["lm_labels"], batch["input_ids"], batch["attention_mask"].bool()
    has = lab != IGNORE_INDEX
    assert torch.equal(lab[:, :-1][has[:, :-1]], ids[:, 1:][has[:, :-1]])  # label t = token t+1
    # a prediction at every real position but the last real one
    assert torch.equal(has.sum(1), real.sum(1) - 1)
    assert NextTokenCollator(tok).state_dict() == {}
    with pytest.raises(ValueError, match="No NSP"):
        NextTokenCollator(tok)(batch | {"nsp_labels": torch.zeros(16, dtype=torch.long)})


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_gpu_same_statistics(tok, real_batch):
    out = MaskedLMCollator(tok, seed=0, device="cuda")(real_batch)
    sel = torch.zeros_like(real_batch["input_ids"], dtype=torch.bool).scatter_(
        1, out["mlm_positions"], out["mlm_labels"] != IGNORE_INDEX
    )
    special = torch.isin(real_batch["input_ids"], torch.tensor(tok.special_ids))
    assert not (sel & special).any()
    assert abs(sel.sum().item() / (~special).sum().item() - 0.15) < 0.003
