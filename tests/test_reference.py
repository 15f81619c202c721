"""bertlab.experiments.reference: finding, describing and loading the recorded reference run."""

from __future__ import annotations

import json

import pytest
import torch

from bertlab import BertForSequenceClassification, files
from bertlab.data import records
from bertlab.experiments import reference


def test_find_loads_the_recorded_weights(record, tmp_path, monkeypatch):
    out, model = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = reference.find(out)
    assert run is not None and not run.smoke
    label = run.label()
    assert "RECORDED" in label and "H100" in label and "0123456789" in label and "14.0 min" in label
    assert (
        run.short_label() == "(read from the book's recorded run, chapter 10; not computed while this page was built)"
    )
    assert [m["step"] for m in run.metrics()] == [50, 100]
    loaded = run.load()
    ids = torch.randint(5, 1000, (2, 12))
    with torch.no_grad():
        want = model.half().float()(ids).mlm_logits  # the same weights rounded through fp16
        got = loaded(ids).mlm_logits
    assert torch.allclose(got, want, atol=1e-4)
    # a fine-tuning class takes the encoder and a fresh task layer
    clf = run.load(BertForSequenceClassification, num_labels=2)
    assert torch.equal(clf.bert.embeddings.token.weight, loaded.bert.embeddings.token.weight)
    folder = run.model_folder()
    assert folder == run.model_folder()  # written once, reused
    assert json.loads((folder / "config.json").read_text())["num_layers"] == loaded.config.num_layers


def test_env_var_and_missing_record(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv(reference.ENV_VAR, str(out))
    assert reference.find().path == out.resolve()
    monkeypatch.setenv(reference.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="no reference run at"):
        reference.find()
    monkeypatch.delenv(reference.ENV_VAR)
    monkeypatch.setattr(reference, "_default_places", lambda: [tmp_path / "nowhere"])
    assert reference.find() is None
    assert "could not be fetched" in reference.pending("the curves") and "the curves" in reference.pending("the curves")


def test_incomplete_and_corrupt_records_are_named(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (out / "tokenizer.json").unlink()
    with pytest.raises(reference.IncompleteReferenceRun, match="tokenizer.json"):
        reference.find(out)


def test_corrupt_weights_are_detected(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = bytearray((out / reference.WEIGHTS).read_bytes())
    data[-10] ^= 0xFF
    (out / reference.WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        reference.find(out).load()


def test_stand_in_without_a_record(tmp_path, monkeypatch):
    monkeypatch.delenv(reference.ENV_VAR, raising=False)
    monkeypatch.setattr(reference, "_default_places", lambda: [tmp_path / "nowhere"])
    enc = reference.pretrained_encoder()
    assert not enc.is_reference and enc.name == "all-MiniLM-L6-v2"
    assert (enc.folder / "config.json").exists()
    assert enc.tokenizer().vocab_size == 30522
    # the repository publishes a record that could not be had here: the page says so, not "until recorded"
    assert "could not be fetched here" in enc.description and "stand-in" not in enc.description
    monkeypatch.setattr(records, "manifest", lambda: {"repository": "https://github.com/a/b", "ref": "x", "files": {}})
    assert "is not recorded in this copy" in reference.pretrained_encoder().description


def test_cpu_record_label_and_layer_threshold(record, tmp_path, monkeypatch):
    out, model = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prov = json.loads((out / "provenance.json").read_text())
    prov.update(device="cpu (2 cores)", cpu_model="Intel(R) Xeon(R) Processor @ 2.80GHz", wall_time_s=5400.0)
    (out / "provenance.json").write_text(json.dumps(prov))
    run = reference.find(out)
    assert run.machine() == "a 2-core CPU (Intel(R) Xeon(R) Processor @ 2.80GHz)"
    assert "RECORDED run on a 2-core CPU" in run.label() and "90.0 min" in run.label()
    assert run.fill_mask() is None  # an older record without fill-mask probes
    monkeypatch.setenv(reference.ENV_VAR, str(out))
    own = reference.pretrained_encoder()
    assert own.is_reference and "L=2" in own.description
    # the long banner (machine, commit, time) is chapter 10's alone: the description stays short
    assert run.machine() not in own.description and "commit" not in own.description
    assert max(map(len, own.description.splitlines())) <= 100  # printed in chapters: no sideways scrolling
    # an analysis that needs more layers than the record has falls back to MiniLM, and says why
    deep = reference.pretrained_encoder(min_layers=model.config.num_layers + 1)
    assert not deep.is_reference and deep.name == "all-MiniLM-L6-v2"
    assert "only 2 layers" in deep.description and "at least 3" in deep.description


def test_gains_pairs_every_pretrained_result_with_its_scratch_control(record):
    out, _ = record
    run = reference.find(out)
    assert run.gains() == []  # a record without fine-tuning results

    def res(task, metric, scores, n=None):
        return {
            "task": task,
            "main_metric": metric,
            "median": sorted(scores)[len(scores) // 2],
            "scores": scores,
            "config": {"max_train_examples": n},
        }

    files.write_json(
        out / "sst2_curve.json",
        [
            {
                "train_examples": 500,
                "epochs": 20,
                "pretrained": res("sst2", "accuracy", [60.0, 58.0, 61.0], 500),
                "scratch": res("sst2", "accuracy", [64.0, 65.0, 63.0], 500),
            }
        ],
    )
    files.write_json(
        out / "finetune_results.json",
        {
            "pretrained": res("sst2", "accuracy", [60.0, 58.0, 61.0], 500),
            "scratch": res("sst2", "accuracy", [64.0, 65.0, 63.0], 500),
            "mrpc_pretrained": res("mrpc", "f1", [80.0, 81.0, 79.0]),
            "mrpc_scratch": res("mrpc", "f1", [81.0, 81.0, 81.0]),
            "conll2003": {
                "pretrained": res("conll2003", "f1", [74.0, 75.0, 73.0]),
                "scratch": res("conll2003", "f1", [63.0, 62.0, 64.0]),
            },
        },
    )
    rows = {r["task"]: r for r in run.gains()}
    assert list(rows) == ["sst2", "mrpc", "conll2003"]  # the curve first, the duplicate SST-2 pair skipped
    assert rows["sst2"]["train_examples"] == 500 and rows["sst2"]["gain"] == pytest.approx(60.0 - 64.0)
    assert rows["mrpc"]["metric"] == "f1" and rows["mrpc"]["train_examples"] is None
    assert rows["conll2003"]["gain"] == pytest.approx(74.0 - 63.0)
    assert rows["conll2003"]["scratch_scores"] == [63.0, 62.0, 64.0]


def test_stored_arm_reads_plain_and_paired_tasks():
    pre, scr = {"median": 70.0}, {"median": 60.0}
    results = {"mrpc_pretrained": pre, "mrpc_scratch": scr, "conll2003": {"pretrained": scr, "scratch": pre}}
    assert reference.stored_arm(results, "mrpc", "scratch") is scr
    assert reference.stored_arm(results, "conll2003", "pretrained") is scr  # the pair, not a flat key
    with pytest.raises(ValueError, match="unknown arm 'bert'; choose one of pretrained, scratch"):
        reference.stored_arm(results, "mrpc", "bert")
    with pytest.raises(KeyError):
        reference.stored_arm(results, "rte", "pretrained")  # a task the results do not hold


def test_describe_reads_every_figure_from_the_record(record):
    out, model = record
    prov = json.loads((out / "provenance.json").read_text())
    prov.update(
        device="cpu (2 cores)",
        cpu_model="AMD EPYC",
        precision="bf16",
        settings={"recipe": "cpu", "compile": True},
        pretraining={
            "steps": 4321,
            "tokens": 35_400_000,
            "train_seconds": 2999.0,
            "final_heldout": {"mlm_acc": 0.3456},
        },
    )
    (out / "provenance.json").write_text(json.dumps(prov))
    text = reference.find(out).describe()
    assert text.startswith("BERT-Tiny (L=2, H=128, A=2; ")  # named after Turc et al.'s sizes
    assert f"{model.num_parameters() / 1e6:.1f}M parameters" in text
    assert f"vocabulary of {model.config.vocab_size:,} pieces" in text
    for part in (
        "`cpu` recipe (post-LN layers; 15% of the pieces masked)",
        "for 50 minutes",
        "4,321 steps",
        "35.4M tokens",
        "a 2-core CPU (AMD EPYC)",
        "in bf16, compiled",
        "held-out MLM accuracy 34.6%",
    ):
        assert part in text, (part, text)
    prov["settings"].update(compile=False, mlm_probability=0.3)  # a rate of the run's own
    prov["pretraining"].pop("final_heldout")
    (out / "provenance.json").write_text(json.dumps(prov))
    text = reference.find(out).describe()
    assert "compiled" not in text and "held-out" not in text
    assert "`cpu` recipe (post-LN layers; 30% of the pieces masked)" in text
    # two segments per sequence and sequence-length phases, as the record's settings say
    prov["settings"].update(segment_pairs=True, phases="0.8:64:128,0.2:128:64")
    (out / "provenance.json").write_text(json.dumps(prov))
    text = reference.find(out).describe()
    assert (
        "`cpu` recipe (post-LN layers; 30% of the pieces masked; two segments per sequence, without NSP; 80% of the "
        "steps on 128 sequences of 64 tokens, then 20% on 64 of 128)" in text
    )
    assert reference.find(out).trained_pairs() and not reference.find(out).trained_nsp()
    prov["pretraining"]["phase_plan"] = "time"  # a time budget's phases divide its time
    (out / "provenance.json").write_text(json.dumps(prov))
    assert "80% of the time on 128 sequences of 64 tokens" in reference.find(out).describe()


def test_pages_that_need_pairs_skip_a_record_pretrained_without_nsp(record, tmp_path, monkeypatch):
    out, _ = record
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(reference.ENV_VAR, str(out))
    prov = json.loads((out / "provenance.json").read_text())
    for recipe, has_nsp in (("cpu", False), ("paper", True)):
        prov["settings"] = {"recipe": recipe}
        (out / "provenance.json").write_text(json.dumps(prov))
        assert reference.find(out).trained_nsp() is has_nsp
        enc = reference.pretrained_encoder(needs_pairs=True, needed_for="the pair analysis")
        assert enc.is_reference is has_nsp, recipe
        if not has_nsp:
            assert "without sentence pairs" in enc.description and "the pair analysis" in enc.description
        assert reference.pretrained_encoder().is_reference  # other pages keep the book's own model


def test_stand_in_says_why():
    enc = reference.stand_in("This page needs a long-trained encoder")
    assert enc.name == "all-MiniLM-L6-v2" and not enc.is_reference
    assert enc.description.endswith("This page needs a long-trained encoder")


def test_finetune_result_reads_back_what_it_wrote():
    from bertlab.training.finetune import FinetuneResult, SeedResult

    runs = [SeedResult(seed=s, metrics={"accuracy": 70.0 + s}, history=[], seconds=1.5) for s in (0, 1, 2)]
    r = FinetuneResult(task="sst2", init="scratch", main_metric="accuracy", runs=runs, config={"lr": 1e-4})
    back = FinetuneResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and back.median == 71.0 and back.summary() == r.summary()


def test_floors_of_the_recorded_gains():
    """Each task's floor in its own metric: SST-2's majority label of the first n training
    sentences of its curve, MRPC's all-"paraphrase" F1, CoNLL-2003's 0; SQuAD has none."""
    from bertlab.tasks import trivial_baseline

    run = reference.find()
    if run is None or run.smoke:
        pytest.skip("no recorded reference run here")
    rows, floors = run.gains(), run.floors()
    keys = {(r["task"], r["train_examples"]) for r in rows if r["task"] != "squad"}
    assert set(floors) == keys
    for (task, n), value in floors.items():
        metric = next(r["metric"] for r in rows if (r["task"], r["train_examples"]) == (task, n))
        assert value == trivial_baseline(task, n if task == "sst2" else None)[metric]
    if ("mrpc", None) in floors:
        assert 80 < floors[("mrpc", None)] < 82  # 2p / (p + n) on MRPC dev: 81.2


def test_phases_in_words():
    from bertlab.training.recipes import parse_phases, phases_text

    assert phases_text(parse_phases("1:128:64")) == "100% of the steps on 64 sequences of 128 tokens"
    assert phases_text(parse_phases("1:128:64"), "time") == "100% of the time on 64 sequences of 128 tokens"
    with pytest.raises(ValueError, match="steps or time"):
        phases_text(parse_phases("1:128:64"), "tokens")
    assert phases_text(parse_phases("0.9:128:256,0.1:512:256")) == (
        "90% of the steps on 256 sequences of 128 tokens, then 10% on 256 of 512"
    )
    assert phases_text(parse_phases("0.8:64:128,0.1:128:64,0.1:256:32")).endswith(
        "then 10% on 64 of 128 and 10% on 32 of 256"
    )
    with pytest.raises(ValueError, match="no phases"):
        phases_text([])


def test_confusions_of_the_median_seed_table_and_reading(record):
    out, _ = record
    run = reference.find(out)

    def entry(init, accs_and_matrices):
        runs = [{"seed": i, "metrics": {"accuracy": a}, "confusion": m} for i, (a, m) in enumerate(accs_and_matrices)]
        return {"task": "rte", "init": init, "main_metric": "accuracy", "runs": runs}

    pre = [(60.0, [[100, 31], [80, 66]]), (56.0, [[110, 21], [101, 45]]), (52.0, [[131, 0], [133, 13]])]
    scr = [(52.7, [[0, 131], [0, 146]])] * 3
    files.write_json(
        out / "finetune_results.json", {"rte_pretrained": entry(str(out), pre), "rte_scratch": entry("scratch", scr)}
    )
    conf = run.confusions("rte")
    assert conf["pretrained"] == {"seed": 1, "score": 56.0, "matrix": [[110, 21], [101, 45]]}  # the median seed
    labels = ["entailment", "not_entailment"]
    table = reference.confusion_table(conf, labels)
    assert "| pre-trained (seed 1) | entailment | 110 | 21 |" in table
    assert "| always not_entailment | entailment | 0 | 131 |" in table.splitlines()[-2:]
    text = reference.confusion_reading(conf, labels)
    assert text.startswith("Pre-trained, the median seed labels 110 of the 131 entailment and 45 of the 146")
    assert (
        "Always answering not_entailment gets all 146 not_entailment pairs and none of the 131 entailment ones" in text
    )
    assert text.endswith(
        "The pre-trained model trades between them: it finds 110 entailment pairs, which the majority answer "
        "never does, and gives up 101 not_entailment pairs that it gets."
    )
    conf["pretrained"]["matrix"] = [[0, 131], [0, 146]]
    assert reference.confusion_reading(conf, labels).endswith("it never answers entailment.")
    # a record fine-tuned before the counts were kept
    files.write_json(
        out / "finetune_results.json",
        {
            "rte_pretrained": {**entry(str(out), pre), "runs": [{"seed": 0, "metrics": {"accuracy": 1.0}}]},
            "rte_scratch": entry("scratch", scr),
        },
    )
    assert run.confusions("rte") is None
