"""bertlab.experiments.reference: finding, describing and loading the recorded reference run."""

from __future__ import annotations

import json

import pytest
import torch

from bertlab import BertConfig, BertForPreTraining, BertForSequenceClassification, files
from bertlab import checkpoint as ckpt
from bertlab.data import records
from bertlab.experiments import pilots, reference, reference_run


@pytest.fixture
def record(tmp_path, bert_tokenizer):
    """A reference-run folder as reference_run writes it, for a tiny random model."""
    torch.manual_seed(0)
    cfg = BertConfig.preset("tiny", vocab_size=bert_tokenizer.vocab_size)
    model = BertForPreTraining(cfg).eval()
    out = tmp_path / "reference_run"
    saved = ckpt.save_model(tmp_path / "fp16", model, dtype=torch.float16)
    out.mkdir()
    (saved / "model.safetensors").rename(out / reference.WEIGHTS)
    (saved / "config.json").rename(out / "config.json")
    bert_tokenizer.save(tmp_path / "tok")
    (tmp_path / "tok" / "tokenizer.json").rename(out / "tokenizer.json")
    files.write_json(
        out / "provenance.json",
        {
            "device": "NVIDIA H100 80GB HBM3",
            "git_commit": "0123456789abcdef",
            "wall_time_s": 840.0,
            "smoke": False,
            "weights": {"sha256": files.sha256_file(out / reference.WEIGHTS)},
        },
    )
    (out / "metrics.jsonl").write_text('{"step": 50, "loss": 7.5}\n{"step": 100, "loss": 6.0}\n')
    return out, model


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


def test_record_pilot_keeps_the_heldout_curve(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    files.write_json(
        run / "run.json",
        {
            "config": {"minutes": 10.0, "steps": None, "corpus": "books+wiki", "seed": 0},
            "recipe": {"name": "cpu", "batch_size": 64, "seq_len": 128, "lr": 2e-3},
            "model_config": {
                "num_layers": 2,
                "hidden_size": 128,
                "num_heads": 2,
                "vocab_size": 16384,
                "norm_position": "pre",
            },
            "parameters": 2_500_000,
            "runtime": "cpu (2 cores), fp32, eager",
            "torch": "2.13.0",
            "git_commit": "abc",
        },
    )
    lines = [{"step": s, "split": "train", "tokens": s * 8192, "tokens_per_s": 1e4 + s} for s in (250, 500, 750)]
    lines += [
        {"step": s, "split": "eval", "mlm_loss": 6.5 - s / 500, "mlm_acc": a, "elapsed_s": s / 2}
        for s, a in ((250, 0.11), (500, 0.21), (750, 0.26))
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    path = pilots.record_pilot(run, "b-pre-ln", "pre-LN instead of post-LN", out_dir=tmp_path / "pilots")
    rec = json.loads(path.read_text())
    assert [p["tokens"] for p in rec["heldout"]] == [250 * 8192, 500 * 8192, 750 * 8192]
    assert rec["plateau_exit"]["step"] == 500  # the first evaluation at >= 20% accuracy
    assert rec["model"]["norm_position"] == "pre" and rec["machine"]["median_tokens_per_s"] == 10500
    files.write_json(tmp_path / "pilots" / "a-probe.json", {"rows": []})  # another check, not a pilot
    assert [p["name"] for p in pilots.load(tmp_path / "pilots")] == ["b-pre-ln"]
    assert pilots.plateau_exit(rec["heldout"], threshold=0.5) is None
    assert "baseline" not in rec
    path = pilots.record_pilot(run, "b-post-ln", "post-LN", out_dir=tmp_path / "pilots", baseline="b-pre-ln")
    assert json.loads(path.read_text())["baseline"] == "b-pre-ln"  # what chapter 10 compares it with
    assert all("seq_len" not in p for p in rec["heldout"])  # the log did not say
    # a log with sequence lengths (phases): each point keeps the length its run was training on
    phased = [dict(x, seq_len=64 if x["step"] < 750 else 128) for x in lines[:3]] + lines[3:]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in phased))
    path = pilots.record_pilot(run, "b-phases", "phases", out_dir=tmp_path / "pilots")
    assert [p["seq_len"] for p in json.loads(path.read_text())["heldout"]] == [64, 64, 128]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines[:3]))
    with pytest.raises(ValueError, match="no held-out MLM evaluation"):
        pilots.record_pilot(run, "c", "nothing", out_dir=tmp_path / "pilots")


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
    table = reference.gains_table(run.gains()).splitlines()
    assert table[0] == "| task | examples | metric | pre-trained | from scratch | gain |"
    assert table[2] == "| SST-2 | 500 | accuracy | 60.0 | 64.0 | -4.0 |"
    assert table[4] == "| CoNLL-2003 | all | f1 | 74.0 | 63.0 | +11.0 |"
    reading = reference.gains_reading(run.gains())
    assert reading.startswith("The largest gain is on CoNLL-2003 (+11.0 points); on SST-2 the gain is -4.0.")
    assert "single words in context" in reading  # entities gained more than any SST-2 size
    sst_only = [r for r in run.gains() if r["task"] != "conll2003"]
    assert "single words" not in reference.gains_reading(sst_only) and reference.gains_reading([]) == ""


def test_stored_arms_round_trip_for_plain_and_paired_tasks():
    pre, scr = {"median": 70.0}, {"median": 60.0}
    assert reference.stored_arms("mrpc", pre, scr) == {"mrpc_pretrained": pre, "mrpc_scratch": scr}
    assert reference.stored_arms("conll2003", pre, scr) == {"conll2003": {"pretrained": pre, "scratch": scr}}
    results = {**reference.stored_arms("mrpc", pre, scr), **reference.stored_arms("conll2003", scr, pre)}
    assert reference.stored_arm(results, "mrpc", "scratch") is scr
    assert reference.stored_arm(results, "conll2003", "pretrained") is scr  # the pair, not a flat key
    with pytest.raises(ValueError, match="unknown arm 'bert'; choose one of pretrained, scratch"):
        reference.stored_arm(results, "mrpc", "bert")
    with pytest.raises(KeyError):
        reference.stored_arm(results, "rte", "pretrained")  # a task the results do not hold


def test_finetune_sweeps_reads_the_recorded_table(tmp_path):
    assert pilots.finetune_sweeps(tmp_path / "absent.jsonl") == ({}, [])
    f = tmp_path / "checks.jsonl"
    f.write_text(
        '{"meta": {"machine": "cpu"}}\n{"task": "sst2", "lr": 0.0005, "median": 71.1}\n\n'
        '{"task": "conll2003", "lr": 0.0005, "median": 74.4}\n'
    )
    meta, rows = pilots.finetune_sweeps(f)
    assert meta == {"machine": "cpu"} and [r["task"] for r in rows] == ["sst2", "conll2003"]
    _, shipped = pilots.finetune_sweeps()  # the table in data/pilots/
    assert {r["task"] for r in shipped} >= {"sst2", "conll2003"} and all("median" in r for r in shipped)


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


def test_add_squad_fine_tunes_both_arms_and_extends_the_record(record, monkeypatch, tmp_path):
    from tests.conftest import MIRROR

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # model_folder() writes there
    out, _ = record
    small = dict(max_train=12, max_eval=6, seeds=(0,), epochs=1, max_len=96, doc_stride=48, batch_size=4)
    results = reference_run.add_squad(out, **small)
    assert set(results) == {"squad_pretrained", "squad_scratch"}
    assert results["squad_pretrained"]["init"] != results["squad_scratch"]["init"] == "scratch"
    run = reference.find(out)
    stored = run.finetune_results()
    assert stored["squad_pretrained"]["median"] == results["squad_pretrained"]["median"]
    added = run.provenance["added_tasks"]["squad"]
    assert added["train_questions"] == 12 and added["eval_questions"] == 6
    assert added["settings"]["eval_fraction"] == reference_run.SQUAD_CPU["eval_fraction"]
    rows = [g for g in run.gains() if g["task"] == "squad"]
    assert len(rows) == 1 and rows[0]["metric"] == "f1" and rows[0]["train_examples"] == 12
    assert rows[0]["gain"] == pytest.approx(rows[0]["pretrained"] - rows[0]["scratch"])
    with pytest.raises(ValueError, match="unknown SQuAD settings"):
        reference_run.add_squad(out, max_questions=5)
    # resumed: the stage kept in stages/squad.json is added again without fine-tuning
    kept = json.loads((out / "stages" / "squad.json").read_text())
    assert kept["key"]["recipe"]["seeds"] == [0] and kept["key"]["train_questions"] == 12

    def no_training(*args, **kwargs):
        raise AssertionError("a kept stage was fine-tuned again")

    import bertlab.training.finetune as ft

    monkeypatch.setattr(ft, "compare_with_scratch", no_training)
    kept = {}
    again = reference_run.add_squad(out, resume=True, kept=kept, **small)
    assert again["squad_pretrained"]["scores"] == results["squad_pretrained"]["scores"]
    assert kept["squad"]["seconds"] == reference.find(out).provenance["added_tasks"]["squad"]["wall_time_s"]
    with pytest.raises(AssertionError, match="fine-tuned again"):  # other settings: not kept
        reference_run.add_squad(out, resume=True, **{**small, "max_eval": 5})


class _Arm:
    """A stand-in for a FinetuneResult: what finetune_stage writes and reads back."""

    def __init__(self, score):
        self.score = score

    def to_dict(self):
        return {"task": "sst2", "init": "x", "main_metric": "accuracy", "runs": [], "score": self.score}


def test_finetune_stage_keeps_a_finished_stage_for_resume(tmp_path):
    from safetensors.torch import save_file

    from bertlab.training.finetune import FinetuneConfig

    weights = tmp_path / "model.safetensors"
    save_file({"w": torch.ones(3)}, str(weights))
    recipe = FinetuneConfig(task="sst2", epochs=2, seeds=(0, 1), out="somewhere", progress=False)
    key = reference_run.stage_key("sst2_500", recipe, weights)
    assert key["recipe"]["seeds"] == [0, 1] and "out" not in key["recipe"]
    calls = []

    def run():
        calls.append(1)
        return [_Arm(len(calls)), _Arm(-len(calls))]

    arms, seconds = reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=run)
    assert len(calls) == 1 and seconds >= 0 and (tmp_path / "stages" / "sst2_500.json").exists()
    kept, again_s = reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=run)
    assert len(calls) == 1 and again_s == pytest.approx(seconds, abs=0.1)
    assert [a.config for a in kept] == [{}, {}] and kept[0].runs == []  # read back as FinetuneResults
    reference_run.finetune_stage(tmp_path / "stages", key, resume=False, run=run)  # a new run: again
    assert len(calls) == 2
    other = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2", epochs=3), weights)
    reference_run.finetune_stage(tmp_path / "stages", other, resume=True, run=run)  # another recipe
    assert len(calls) == 3
    save_file({"w": torch.zeros(3)}, str(weights))  # pretraining made again: other weights
    moved = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2", epochs=3), weights)
    reference_run.finetune_stage(tmp_path / "stages", moved, resume=True, run=run)
    assert len(calls) == 4


def test_finetune_result_reads_back_what_it_wrote():
    from bertlab.training.finetune import FinetuneResult, SeedResult

    runs = [SeedResult(seed=s, metrics={"accuracy": 70.0 + s}, history=[], seconds=1.5) for s in (0, 1, 2)]
    r = FinetuneResult(task="sst2", init="scratch", main_metric="accuracy", runs=runs, config={"lr": 1e-4})
    back = FinetuneResult.from_dict(json.loads(json.dumps(r.to_dict())))
    assert back == r and back.median == 71.0 and back.summary() == r.summary()


def test_finetune_result_refuses_a_dict_from_another_version(tmp_path):
    from bertlab.training.finetune import FinetuneResult, SeedResult

    runs = [SeedResult(seed=0, metrics={"accuracy": 70.0}, history=[], seconds=1.5)]
    d = FinetuneResult(task="sst2", init="scratch", main_metric="accuracy", runs=runs).to_dict()
    renamed = json.loads(json.dumps(d))
    renamed["runs"][0]["wall_s"] = renamed["runs"][0].pop("seconds")  # a field renamed since
    with pytest.raises(ValueError, match=r"missing runs\[0\]\.seconds; unknown run fields wall_s"):
        FinetuneResult.from_dict(renamed)
    with pytest.raises(ValueError, match="missing main_metric"):
        FinetuneResult.from_dict({k: v for k, v in d.items() if k != "main_metric"})
    # a kept stage in that shape names its file and how to get past it
    weights = tmp_path / "model.safetensors"
    from safetensors.torch import save_file

    save_file({"w": torch.ones(3)}, str(weights))
    from bertlab.training.finetune import FinetuneConfig

    key = reference_run.stage_key("sst2_500", FinetuneConfig(task="sst2"), weights)
    (tmp_path / "stages").mkdir()
    stage = tmp_path / "stages" / "sst2_500.json"
    stage.write_text(json.dumps({"key": key, "seconds": 3.0, "arms": [renamed, renamed]}))
    kept = {}
    with pytest.raises(ValueError, match=r"sst2_500\.json: .*wall_s.*delete it to fine-tune"):
        reference_run.finetune_stage(tmp_path / "stages", key, resume=True, run=lambda: [], kept=kept)
    assert kept == {}


def test_reference_run_takes_minutes_or_steps_not_both(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, minutes=5, steps=100)
    with pytest.raises(ValueError, match="at least one step"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, steps=0)


def test_reference_run_layers_override_the_presets(tmp_path, monkeypatch):
    import bertlab.training.pretrain as pretrain_module

    seen = {}

    def stop(cfg, runtime=None):  # the pretraining the pipeline would run, caught before it starts
        seen["cfg"] = cfg
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain_module, "pretrain", stop)
    with pytest.raises(KeyboardInterrupt):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, layers=2)
    assert seen["cfg"].layers == 2 and seen["cfg"].model_size()[0] == 2
    with pytest.raises(KeyboardInterrupt):
        reference_run.reference_run(out=str(tmp_path / "r2"), smoke=True)
    assert seen["cfg"].layers is None  # the preset's
    with pytest.raises(ValueError, match="at least one layer"):
        reference_run.reference_run(out=str(tmp_path / "r3"), smoke=True, layers=0)


def test_add_task_fine_tunes_rte_with_the_records_recipe(record, monkeypatch, tmp_path):
    from tests.conftest import MIRROR

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out, _ = record
    with pytest.raises(ValueError, match="names no fine-tuning recipe"):
        reference_run.add_task("rte", out)  # the fixture's provenance has no settings yet
    prov = json.loads((out / "provenance.json").read_text())
    prov["settings"] = {"ft_epochs": 1, "ft_lr": 1e-4, "ft_batch": 4, "seeds": [0, 1]}
    files.write_json(out / "provenance.json", prov)
    results = reference_run.add_task("rte", out, seeds=(0,), max_train=8, max_eval=6)
    assert set(results) == {"rte_pretrained", "rte_scratch"}
    assert results["rte_scratch"]["init"] == "scratch" != results["rte_pretrained"]["init"]
    assert results["rte_pretrained"]["config"]["lr"] == 1e-4
    run = reference.find(out)
    added = run.provenance["added_tasks"]["rte"]
    assert added["settings"]["seeds"] == [0] and added["settings"]["batch_size"] == 4
    m = added["machine"]  # where it ran, and the precision that resolved to
    if m["device"].startswith("cpu"):
        assert (m["precision"] == "bf16") == (m["cpu_bf16"] is not None), m
    assert run.provenance["settings"]["ft_lr"] == 1e-4  # the record's own settings are kept
    rows = [g for g in run.gains() if g["task"] == "rte"]
    assert len(rows) == 1 and rows[0]["metric"] == "accuracy" and len(rows[0]["pretrained_scores"]) == 1
    conf = run.confusions("rte")  # the added task keeps its confusion counts: 6 dev pairs
    assert set(conf) == {"pretrained", "scratch"} and sum(map(sum, conf["pretrained"]["matrix"])) == 6
    assert run.confusions("mrpc") is None  # not in the record
    with pytest.raises(ValueError, match="cannot add 'sst2'"):
        reference_run.add_task("sst2", out)


def test_add_task_adds_conll2003_as_the_pipeline_stores_it(record, monkeypatch, tmp_path):
    """A record finished without CoNLL-2003 gains it later: the pair under "conll2003" (as the
    pipeline writes it and chapter 14 reads it), its medians beside the other tasks'."""
    from tests.conftest import MIRROR

    if not (MIRROR / "SHA256SUMS").is_file():
        pytest.skip(f"no data mirror at {MIRROR}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out, _ = record
    prov = json.loads((out / "provenance.json").read_text())
    prov["settings"] = {"ft_epochs": 1, "ft_lr": 1e-4, "ft_batch": 4, "seeds": [0]}
    files.write_json(out / "provenance.json", prov)
    before = reference_run.add_task("rte", out, max_train=8, max_eval=6)  # a task the record has
    results = reference_run.add_task("conll2003", out, max_train=8, max_eval=6)
    assert set(results) == {"conll2003"} and set(results["conll2003"]) == {"pretrained", "scratch"}
    assert results["conll2003"]["scratch"]["init"] == "scratch" != results["conll2003"]["pretrained"]["init"]
    run = reference.find(out)
    stored = run.finetune_results()
    assert stored["conll2003"] == results["conll2003"] and {k: stored[k] for k in before} == before
    medians = run.provenance["other_tasks_median"]
    assert medians["conll2003 from scratch"] == results["conll2003"]["scratch"]["median"]
    rows = [g for g in run.gains() if g["task"] == "conll2003"]
    assert len(rows) == 1 and len(rows[0]["pretrained_scores"]) == 1


def test_reference_run_refuses_a_task_it_cannot_fine_tune(tmp_path):
    with pytest.raises(ValueError, match="sst2 is not a task the record fine-tunes after SST-2"):
        reference_run.reference_run(out=str(tmp_path / "r"), smoke=True, ft_tasks=["mrpc", "sst2"])
    assert not (tmp_path / "r").exists()  # refused before anything was written


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


def test_finetune_epochs_give_small_sets_enough_updates():
    from bertlab.experiments.reference_run import finetune_epochs

    s = {"ft_epochs": 3, "ft_min_steps": 300, "ft_batch": 32}
    # 300 updates of 32 need 9,600 examples seen: 20 epochs of 500, 5 of 2,000, the usual 3 above
    assert [finetune_epochs(s, n) for n in (500, 2000, 8000, None)] == [20, 5, 3, 3]
    assert finetune_epochs({**s, "ft_min_steps": 0}, 500) == 3


def test_task_seeds_and_workers_follow_the_settings():
    s = {"seeds": (0, 1, 2), "ft_tasks_seeds": {"conll2003": [0]}, "squad_seeds": (0,), "ft_workers": 2}
    assert reference_run.task_seeds(s, "conll2003") == (0,)  # JSON's list read back as seeds
    assert reference_run.task_seeds(s, "mrpc") == (0, 1, 2)
    assert reference_run.task_seeds({"seeds": [3, 4]}, "conll2003") == (3, 4)  # a record without it
    plan = reference_run.squad_plan(s)
    assert plan["seeds"] == (0,) and plan["workers"] == 2
    assert reference_run.squad_plan({})["workers"] == reference_run.SQUAD_CPU["workers"] == 1
    cpu = reference_run.REFERENCE["cpu"]
    assert reference_run.task_seeds(cpu, "conll2003") == (0,) and cpu["ft_workers"] == 2


def test_changes_since_names_what_a_new_reference_run_would_change(record, tmp_path):
    out, _ = record
    prov = json.loads((out / "provenance.json").read_text())
    now = reference_run.REFERENCE["cpu"]
    plan = reference_run.squad_plan(now)
    prov["settings"] = {k: list(v) if isinstance(v, tuple) else v for k, v in now.items()}
    prov["added_tasks"] = {"squad": {"settings": {**plan, "seeds": list(plan["seeds"])}}}
    files.write_json(out / "provenance.json", prov)
    run = reference.find(out)
    assert reference_run.changes_since(run) == []  # tuples and JSON's lists read alike
    assert reference_run.changes_text([]).endswith("repeat the record's settings.")
    prov["settings"]["minutes"] = 40.0
    del prov["settings"]["squad_seeds"]  # a record made before the setting existed
    prov["added_tasks"]["squad"]["settings"].update(epochs=1, seeds=[0, 1, 2])
    files.write_json(out / "provenance.json", prov)
    changes = reference_run.changes_since(reference.find(out))
    assert changes == [
        ("minutes", 40.0, now["minutes"]),
        ("squad epochs", 1, plan["epochs"]),
        ("squad seeds", [0, 1, 2], list(plan["seeds"])),
    ]
    text = reference_run.changes_text(changes)
    assert text.startswith("Made again now, the reference run would change three settings of the record:")
    assert f"squad seeds [0, 1, 2] → {list(plan['seeds'])}" in text
    with pytest.raises(ValueError, match="choose one of"):
        reference_run.changes_since(run, kind="tpu")
