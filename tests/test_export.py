"""The book's BERT leaves the book: `python -m bertlab export-hf` writes a folder that transformers
loads (AutoModelForMaskedLM, AutoTokenizer, the fill-mask pipeline) and that computes what bertlab
computes; `python -m bertlab fill-mask` answers from a model folder. transformers is the oracle."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from bertlab import BertConfig, BertForPreTraining  # noqa: E402
from bertlab import checkpoint as ckpt  # noqa: E402
from bertlab.__main__ import main  # noqa: E402
from bertlab.analysis.fill_mask import fill_mask  # noqa: E402
from bertlab.data.corpus import load_corpus  # noqa: E402
from bertlab.data.tokenizer import WordPieceTokenizer, train_wordpiece  # noqa: E402
from bertlab.export import export_hf  # noqa: E402

TEXTS = [
    "the man went to the [MASK] . he bought a [MASK] of milk .",
    "It was a dark and stormy night; the rain fell in torrents.",
    "Émile's café, 42 rue du Bac — open?",
]


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory):
    docs = load_corpus("books", "train")[:2]
    tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=600)
    return tok.save(tmp_path_factory.mktemp("tok")) / "tokenizer.json"


def model_folder(tmp_path, tokenizer_file, **overrides):
    """A post-LN pretraining model with random weights (and a random MLM bias, so a wrong bias
    would show) saved as bertlab saves a run's final weights."""
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=600,
        num_layers=2,
        hidden_size=64,
        num_heads=4,
        intermediate_size=96,
        max_position_embeddings=128,
        **overrides,
    )
    model = BertForPreTraining(cfg)
    with torch.no_grad():
        model.mlm.bias.normal_(0, 1)
    folder = tmp_path / "final"
    ckpt.save_model(folder, model, tokenizer_file=tokenizer_file)
    return folder, model.eval()


def test_transformers_loads_the_export_and_computes_the_same(tmp_path, tokenizer_file):
    folder, model = model_folder(tmp_path, tokenizer_file)
    out = export_hf(folder, tmp_path / "hf")
    hf_model = transformers.AutoModelForMaskedLM.from_pretrained(out).eval()
    assert type(hf_model).__name__ == "BertForMaskedLM"
    hf_tok = transformers.AutoTokenizer.from_pretrained(out)
    ours_tok = WordPieceTokenizer.load(tokenizer_file)
    for text in TEXTS:  # the same pieces, special tokens included
        assert hf_tok(text)["input_ids"] == list(ours_tok.encode(text).input_ids), text
    assert hf_tok.mask_token_id == ours_tok.mask_id and hf_tok.pad_token_id == ours_tok.pad_id
    # masked-LM logits at every position, on a padded batch of sentence pairs (both segment rows)
    enc = hf_tok([TEXTS[0], TEXTS[1]], [TEXTS[2], TEXTS[0]], padding=True, return_tensors="pt")
    assert (enc["attention_mask"] == 0).any() and (enc["token_type_ids"] == 1).any()
    with torch.no_grad():
        theirs = hf_model(**enc).logits
        positions = torch.arange(enc["input_ids"].shape[1]).expand(enc["input_ids"].shape)
        ours = model(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"], mlm_positions=positions).mlm_logits
    real = enc["attention_mask"].bool()
    assert (ours[real] - theirs[real]).abs().max() < 1e-4
    # the pipeline a reader would use gives bertlab's own top guesses and probabilities
    fill = transformers.pipeline("fill-mask", model=str(out), top_k=3)
    text = "the man went to the [MASK] ."
    got = [(r["token_str"].replace(" ", ""), r["score"]) for r in fill(text)]
    want = fill_mask(model, ours_tok, text, k=3)[0]
    assert [g[0] for g in got] == [w[0] for w in want]
    assert all(abs(g[1] - w[1]) < 1e-4 for g, w in zip(got, want))


def test_what_transformers_cannot_represent_is_refused(tmp_path, tokenizer_file):
    pre, _ = model_folder(tmp_path / "pre", tokenizer_file, norm_position="pre")
    with pytest.raises(ValueError, match="pre-LN.*post-LN"):
        export_hf(pre, tmp_path / "out")
    causal, _ = model_folder(tmp_path / "ltr", tokenizer_file, causal=True)
    with pytest.raises(ValueError, match="left to right"):
        export_hf(causal, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(FileNotFoundError, match="not a bertlab model folder"):
        export_hf(tmp_path, tmp_path / "out")


def test_cli_export_and_fill_mask(tmp_path, tokenizer_file, capsys):
    folder, model = model_folder(tmp_path, tokenizer_file)
    assert main(["export-hf", "--model", str(folder), "--out", str(tmp_path / "hf")]) == 0
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForMaskedLM"]
    capsys.readouterr()
    assert main(["fill-mask", "the man went to the [MASK] .", "--model", str(folder), "--top", "4"]) == 0
    line = capsys.readouterr().out.strip().splitlines()
    want = fill_mask(model, WordPieceTokenizer.load(tokenizer_file), "the man went to the [MASK] .", k=4)[0]
    assert len(line) == 1 and line[0] == "[MASK] 1: " + "  ".join(f"{t} {p:.3f}" for t, p in want)
    assert main(["fill-mask", "no blank here", "--model", str(folder)]) == 2
    assert "no [MASK]" in capsys.readouterr().err
    pre, _ = model_folder(tmp_path / "pre", tokenizer_file, norm_position="pre")
    assert main(["export-hf", "--model", str(pre), "--out", str(tmp_path / "x")]) == 2
    assert "pre-LN" in capsys.readouterr().err


def test_fill_mask_answers_from_the_record_by_default(capsys):
    from bertlab.experiments import reference

    if reference.find() is None:
        pytest.skip("no recorded reference run in this checkout")
    assert main(["fill-mask", "he opened the [MASK] and went in ."]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("[MASK] 1: ") and len(out[0].split("  ")) == 5
