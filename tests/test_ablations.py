"""bertlab.experiments.ablations on a miniature: every model pretrained, evaluated and fine-tuned as the plan
says, the record written and read back, nothing trained twice when it is run again, and an
incomplete record refused with the command that completes it."""

import json

import pytest

from bertlab.experiments import ablations

pytestmark = pytest.mark.usefixtures("one_thread")


def test_incomplete_or_missing_record(tmp_path, monkeypatch):
    assert ablations.load(tmp_path) is None
    (tmp_path / "ablations.json").write_text(json.dumps({"models": {"MLM, no NSP": {}}}))
    with pytest.raises(ValueError, match="incomplete.*record_ablations.py"):
        ablations.load(tmp_path)


def test_nsp_accuracy_is_the_last_evaluation_of_the_nsp_model():
    rec = {
        "models": {
            "MLM + NSP": {
                "steps": 1500,
                "tokens": 12_288_000,
                "curve": [{"step": 250, "nsp_acc": 0.74}, {"step": 1500, "nsp_acc": 0.838}],
            },
            "MLM, no NSP": {"steps": 1500, "tokens": 12_288_000, "curve": [{"step": 1500, "mlm_acc": 0.25}]},
        }
    }
    assert ablations.nsp_accuracy(rec) == {"nsp_acc": 0.838, "step": 1500, "tokens": 12_288_000}
    assert ablations.nsp_accuracy(rec, "MLM, no NSP") is None
    with pytest.raises(KeyError, match="no model 'LTR'"):
        ablations.nsp_accuracy(rec, "LTR")
    recorded = ablations.load()
    if recorded is not None:  # the book's record: the NSP model learned its task
        assert 0.5 < ablations.nsp_accuracy(recorded)["nsp_acc"] <= 1.0


def small_record():
    """A constructed record of two models, one of them left-to-right, and the scratch control."""

    def ft(*scores):
        return {"metric": "accuracy", "median": sorted(scores)[len(scores) // 2], "scores": list(scores)}

    return {
        "finetuning": {"lr": 5e-4, "batch_size": 32, "tasks": {"sst2": {"max_train_examples": 100}}},
        "models": {
            "MLM, no NSP": {
                "tokens": 1_000_000,
                "heldout": {"mlm_loss": 2.0, "mlm_acc": 0.25},
                "curve": [{"step": 10, "mlm_acc": 0.1}, {"step": 20, "mlm_acc": 0.25}],
                "finetune": {"sst2": ft(60.0, 62.0, 61.0)},
            },
            "LTR, no NSP": {
                "tokens": 1_000_000,
                "heldout": {"ltr_loss": 1.0, "next_token_acc": 0.3},
                "curve": [{"step": 20, "next_token_acc": 0.3}],
            },
        },
        "scratch": {"sst2": ft(55.0, 56.0, 57.0)},
    }


@pytest.fixture
def two_models(monkeypatch):
    monkeypatch.setattr(ablations, "MODELS", {"LTR, no NSP": {}, "MLM, no NSP": {}})  # the plan's order
    return small_record()


def test_heldout_rows_score_each_model_on_its_own_task(two_models):
    import math

    rows = ablations.heldout_rows(two_models)
    assert [(r["name"], r["task"]) for r in rows] == [("LTR, no NSP", "next token"), ("MLM, no NSP", "masked LM")]
    assert rows[0]["loss"] == 1.0 and rows[0]["accuracy"] == 0.3
    assert rows[1]["perplexity"] == pytest.approx(math.exp(2.0))
    table = ablations.heldout_table(two_models).splitlines()
    assert table[2] == "| LTR, no NSP | next token | 1.000 | 30.0% | 2.7 |" and len(table) == 4
    curves = ablations.heldout_curves(two_models)
    assert curves["MLM, no NSP"] == ([10, 20], [10.0, 25.0]) and curves["LTR, no NSP"] == ([20], [30.0])


def test_finetune_table_shows_every_seed_a_dash_and_the_floor(two_models):
    entries = ablations.finetune_entries(two_models)
    assert list(entries) == ["LTR, no NSP", "MLM, no NSP", ablations.SCRATCH]  # the control last
    assert entries["LTR, no NSP"] == {}  # not fine-tuned
    lines = ablations.finetune_table(two_models, floors={"sst2": 50.9}).splitlines()
    assert lines[0] == "| model | SST-2 dev accuracy, median (seeds) |"
    assert lines[2] == "| LTR, no NSP | – |"
    assert lines[3] == "| MLM, no NSP | **61.0** (60.0, 62.0, 61.0) |"
    assert lines[-1] == "| floor: majority class | 50.9 |"
    two_models["scratch"]["sst2"]["metric"] = "f1"  # an F1 task of pairs: its floor's rule
    assert lines[-1] != (line := ablations.finetune_table(two_models, floors={"sst2": 81.2}).splitlines()[-1])
    assert line == "| floor: all pairs 'paraphrase' | 81.2 |"
    two_models["scratch"]["sst2"]["metric"] = "accuracy"
    two_models["finetuning"]["tasks"]["conll2003"] = {"max_train_examples": 100}
    two_models["scratch"]["conll2003"] = {"metric": "f1", "median": 20.0, "scores": [19.0, 20.0, 21.0]}
    table = ablations.finetune_table(two_models, floors={"sst2": 50.9, "conll2003": 0.0}).splitlines()
    assert table[0] == "| model | SST-2 dev accuracy, median (seeds) | CoNLL-2003 dev entity F1, median (seeds) |"
    assert table[3] == "| MLM, no NSP | **61.0** (60.0, 62.0, 61.0) | – |"
    assert table[-1] == "| floor: majority class (SST-2), no entity (CoNLL-2003) | 50.9 | 0.0 |"


def test_finetune_floors_are_the_trivial_baselines_in_each_tasks_metric(two_models, mirror):
    from bertlab.tasks import trivial_baseline

    two_models["finetuning"]["tasks"]["mrpc"] = {"max_train_examples": 50}
    two_models["scratch"]["mrpc"] = {"metric": "f1"}
    floors = ablations.finetune_floors(two_models)
    assert floors["sst2"] == trivial_baseline("sst2", 100)["accuracy"]
    assert floors["mrpc"] == trivial_baseline("mrpc", 50)["f1"] > trivial_baseline("mrpc", 50)["accuracy"]


def test_seeds_apart_only_when_the_ranges_do_not_overlap():
    assert ablations.seeds_apart({"scores": [70, 71]}, {"scores": [60, 69.9]})
    assert ablations.seeds_apart({"scores": [60]}, {"scores": [70, 80]})
    assert not ablations.seeds_apart({"scores": [60, 70]}, {"scores": [69, 80]})
    assert not ablations.seeds_apart({"scores": [70]}, {"scores": [70]})


class FakeReference:
    """What beside_reference reads of a ReferenceRun."""

    def __init__(self, curve, lr=5e-4):
        self.curve = curve
        self.provenance = {
            "settings": {"ft_lr": lr, "ft_batch": 32},
            "pretraining": {"tokens": 4_000_000, "final_heldout": {"mlm_acc": 0.4}},
        }

    def sst2_curve(self):
        return self.curve

    def gains(self):
        return [{"task": "sst2", "gain": 1.0}, {"task": "conll2003", "gain": 14.0}]


def test_beside_reference_reads_the_records_point_at_the_studys_size(two_models):
    point = {"train_examples": 100, "pretrained": {"median": 66.0, "scores": [65, 66, 67]}}
    point["scratch"] = {"median": 60.0, "scores": [59, 60, 61]}
    other = {"train_examples": 500, "pretrained": {"median": 99.0}, "scratch": {"median": 0.0}}
    b = ablations.beside_reference(two_models, FakeReference([other, point]))
    assert (b.train_examples, b.study_tokens, b.ref_tokens) == (100, 1_000_000, 4_000_000)
    assert (b.study_acc, b.ref_acc) == (0.25, 0.4) and b.same_recipe
    assert b.study_gain == pytest.approx(5.0) and b.ref_gain == pytest.approx(6.0)
    assert b.best_gain["task"] == "conll2003"
    table = ablations.beside_reference_table(b).splitlines()
    assert "SST-2, 100 sentences" in table[0]
    assert table[2] == "| this chapter's study | 1.0M | 25.0% | 61.0 | 56.0 | +5.0 |"
    assert table[3] == "| the reference run (its pipeline's three seeds) | 4.0M | 40.0% | 66.0 | 60.0 | +6.0 |"
    assert not ablations.beside_reference(two_models, FakeReference([point], lr=1e-4)).same_recipe
    missing = ablations.beside_reference(two_models, FakeReference([other]))
    assert missing.ref_pretrained is None and missing.ref_gain is None and not missing.same_recipe
    assert len(ablations.beside_reference_table(missing).splitlines()) == 3  # the study's row only


def test_the_recorded_study_beside_the_recorded_reference_run():
    from bertlab.experiments import reference

    rec, ref = ablations.load(), reference.find()
    if rec is None or ref is None:
        pytest.skip("the ablation record or the reference run is not in this checkout")
    b = ablations.beside_reference(rec, ref)
    assert b.study_tokens == rec["models"]["MLM, no NSP"]["tokens"]
    assert b.ref_tokens == ref.provenance["pretraining"]["tokens"]
    assert b.study_gain == pytest.approx(ablations.gap(rec, "sst2", "MLM, no NSP", ablations.SCRATCH))
    assert b.best_gain["gain"] == max(r["gain"] for r in ref.gains())
    assert [r["name"] for r in ablations.heldout_rows(rec)] == list(ablations.MODELS)


def test_compare_with_paper_reads_each_gap_against_the_seeds(two_models):
    paper = {
        ("sst2", "MLM, no NSP", ablations.SCRATCH): None,
        ("sst2", "MLM, no NSP", "LTR, no NSP"): 0.5,  # not fine-tuned: left out
        ("mrpc", "MLM, no NSP", ablations.SCRATCH): 1.0,  # not a task of the record: left out
    }
    [v] = ablations.compare_with_paper(two_models, paper)
    assert (v["task"], v["a"], v["b"], v["paper"]) == ("sst2", "MLM, no NSP", ablations.SCRATCH, None)
    assert v["ours"] == pytest.approx(61.0 - 56.0) and v["apart"] and v["same"]
    two_models["scratch"]["sst2"]["scores"] = [55.0, 56.0, 60.5]  # overlaps 60.0
    [v] = ablations.compare_with_paper(two_models, {("sst2", "MLM, no NSP", ablations.SCRATCH): -2.0})
    assert not v["apart"] and not v["same"]
    assert ("conll2003", "MLM, no NSP", "LTR, no NSP") in ablations.PAPER_GAPS


def test_same_plan_on_another_machine_is_compared_model_by_model():
    def rec(machine, accs):
        models = {n: {"heldout": {"mlm_loss": 5.0, "mlm_acc": a}} for n, a in zip(ablations.MODELS, accs)}
        models["LTR, no NSP"]["heldout"] = {"ltr_loss": 4.5, "next_token_acc": accs[2]}
        plan = {"corpus": "books+wiki", "recipe": "cpu", "seq_len": 128, "eval_every": 250, "steps": 1500}
        return {"pretraining": plan, "machine": machine, "models": models}

    gpu = rec({"device": "NVIDIA H100", "precision": "bf16", "compile": False}, [0.147, 0.257, 0.239, 0.184, 0.250])
    cpu_m = {"device": "cpu (2 cores)", "cpu": "AMD EPYC", "precision": "bf16", "compile": True}
    cpu = rec(cpu_m, [0.147, 0.257, 0.239, 0.181, 0.258])
    check = ablations.same_plan_elsewhere(gpu, cpu)
    assert check["max_gap"] == pytest.approx(0.8)
    assert [r["name"] for r in check["rows"]] == list(ablations.MODELS)
    text = ablations.same_plan_reading(check)
    assert "run earlier on 2 cores of an AMD EPYC (bf16, compiled)" in text and "within 0.8 points" in text
    assert "2/256/4, 25.8% there against 25.0% here): the machine moved no model by a whole point." in text
    with pytest.raises(ValueError, match="pre-trained differently \\(steps\\)"):
        ablations.same_plan_elsewhere(gpu, {**cpu, "pretraining": {**cpu["pretraining"], "steps": 1000}})
    recorded = ablations.load()
    earlier = ablations.load_earlier()
    if recorded is not None and earlier is not None:  # the book's two runs of the plan
        assert ablations.same_plan_elsewhere(recorded, earlier)["max_gap"] < 2.0
