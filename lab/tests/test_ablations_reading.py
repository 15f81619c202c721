"""lab.ablations_reading: the ablation record read back (an incomplete one refused with the command that
completes it), its tables, curves and sentences on constructed records and on the book's record, and
the comparisons with the paper and with the book's reference run. Making the record is
lab/tests/test_ablations_record.py."""

import json
import re

import pytest

from bertlab.verdict import Reading
from lab import ablations_reading as ablations

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


def study(pre_scores, scr_scores):
    def res(scores):
        return {"median": sorted(scores)[len(scores) // 2], "scores": scores}

    b = ablations.BesideReference(
        train_examples=2000,
        study_tokens=1_000_000,
        study_acc=0.25,
        study_pretrained=res(pre_scores),
        study_scratch=res(scr_scores),
        ref_tokens=2_200_000,
        ref_acc=0.37,
        ref_pretrained=res([72.5, 70.3, 71.3]),
        ref_scratch=res([70.8, 71.9, 70.4]),
        same_recipe=True,
        best_gain=None,
    )
    return b


def test_chapter_17s_paragraph_and_summary_say_what_their_readings_say():
    b = study([66.7, 70.1, 69.7], [71.2, 72.6, 69.7])
    within = Reading(0.4, -0.8, 1.6, "90% of bootstrap draws over 10 seeds")
    text = ablations.beside_reference_reading(b, ["post-LN layers where the study's are pre-LN"], within)
    assert "+0.4 points, within the noise of scratch" in text and "null result is not only" in text
    assert "clear of" not in text and "1 setting" not in text and "one setting: post-LN" in text
    measured = Reading(2.175, 1.315, 3.38, "90% of bootstrap draws over 10 seeds")
    text = ablations.beside_reference_reading(b, [], measured)
    assert "+2.2 points, clear of scratch" in text and "statement about its budget" in text
    assert "its pipeline's own three seeds gave +0.5 (within the noise of scratch" in text
    # the summary's words follow each comparison's reading, never the other way round
    verdicts = [
        {"task": "sst2", "a": "MLM, no NSP", "b": ablations.SCRATCH, "ours": 5.0,
         "reading": Reading(5.0, -0.5, 9.0, "the three seeds' range")},
        {"task": "conll2003", "a": "MLM, no NSP", "b": ablations.SCRATCH, "ours": 13.2,
         "reading": Reading(13.2, 12.0, 14.0, "the three seeds' range")},
    ]  # fmt: skip
    [bullet] = ablations.results_summary(verdicts)
    assert "clear of scratch (no pre-training) on CoNLL-2003 (+13.2)" in bullet
    assert "SST-2" not in bullet and "the other comparison stays within the seeds' noise" in bullet
    [bullet] = ablations.results_summary(verdicts[:1], within, 2000)
    assert not re.search(r"\bclear\b", bullet) and "the one comparison stays within" in bullet


def whole_plan(machine=None):
    """A constructed record of the whole plan (every model of MODELS), as lab.ablations.record writes it."""

    def model(name, preset, loss, acc, **extra):
        settings = {"preset": preset, "nsp": name == "MLM + NSP", "mlm_probability": 0.3}
        curve = [{"step": 750, "mlm_acc": acc / 2}, {"step": 1500, "mlm_acc": acc}]
        sizes = {"L": 4, "H": 256, "A": 4, "parameters": 5_530_000, "encoder_parameters": 3_230_000}
        return {"settings": settings, **sizes, "steps": 1500, "tokens": 12_288_000, "train_seconds": 24.0,
                "heldout": {"mlm_loss": loss, "mlm_acc": acc}, "curve": curve, **extra}  # fmt: skip

    models = {
        "MLM + NSP": model("MLM + NSP", "mini", 6.1, 0.147),
        "MLM, no NSP": model("MLM, no NSP", "mini", 4.675, 0.257),
        "LTR, no NSP": model("LTR, no NSP", "mini", 0.0, 0.0),
        "2/128/2 (tiny)": model("2/128/2 (tiny)", "tiny", 5.787, 0.184, L=2, H=128, A=2, parameters=1_550_000),
        "2/256/4": model("2/256/4", "mini", 4.795, 0.25, L=2),
    }
    models["MLM + NSP"]["curve"][-1]["nsp_acc"] = 0.826
    models["LTR, no NSP"]["heldout"] = {"ltr_loss": 4.5, "next_token_acc": 0.239}
    models["LTR, no NSP"]["settings"] = {"preset": "mini", "nsp": False, "objective": "ltr"}
    plan = {"corpus": "books+wiki", "recipe": "cpu", "seq_len": 128, "batch_size": 64, "seed": 0, "steps": 1500}
    machine = machine or {"device": "NVIDIA H100", "precision": "bf16", "compile": False}
    tasks = {"sst2": {"max_train_examples": 2000}}
    return {"pretraining": plan, "finetuning": {"tasks": tasks}, "machine": machine, "models": models, "scratch": {}}


def test_the_plan_and_the_models_in_words_and_in_a_table():
    from bertlab.training.recipes import RECIPES, token_positions

    rec = whole_plan()
    text = ablations.plan_reading(rec)
    assert text.startswith("Each model: **1,500 steps** of 64 sequences of 128 tokens (12.3 million token positions)")
    assert "Recorded on NVIDIA H100 (bf16, eager): 2 minutes of pre-training for the five models together." in text
    assert f"BERT-Base saw {token_positions(RECIPES['paper']) / 12_288_000:,.0f} times as many token positions" in text
    cpu = {"device": "cpu (2 cores)", "cpu": "AMD EPYC", "precision": "bf16", "compile": True}
    assert "Recorded on cpu (2 cores), AMD EPYC (bf16, torch.compile)" in ablations.plan_reading(whole_plan(cpu))
    table = ablations.models_table(rec).splitlines()
    assert table[0] == "| model | L / H / A | parameters | of them, encoder | pre-training |"
    assert table[1] == "|---|---|---|---|---|" and len(table) == 2 + len(ablations.MODELS)
    assert table[5] == "| 2/128/2 (tiny) | 2 / 128 / 2 | 1.55M | 3.23M | 0.4 min |"
    earlier = whole_plan(cpu)
    earlier["models"]["2/256/4"]["train_seconds"] = 516.0
    table = ablations.models_table(rec, earlier).splitlines()
    assert table[0].endswith("| pre-training | earlier, CPU (2 cores) |") and table[1] == "|---" * 6 + "|"
    assert table[-1] == "| 2/256/4 | 2 / 256 / 4 | 5.53M | 3.23M | 0.4 min | 8.6 min |"


def test_the_held_out_scores_in_words_follow_the_record():
    rec = whole_plan()
    text = ablations.size_and_nsp_reading(rec)
    assert "perplexity goes 326.0 → 120.9 → 107.2 from the smallest model to BERT-Mini, falling" in text
    assert "by -11.0 points (14.7% with NSP, 25.7% without)" in text
    rec["models"]["2/256/4"]["heldout"]["mlm_loss"] = 4.6  # the middle size below BERT-Mini
    assert "not falling with every step up in size, unlike Table 6" in ablations.size_and_nsp_reading(rec)
    assert "learned its task: 82.6% of the held-out pairs right" in ablations.nsp_head_reading(rec)
    del rec["models"]["MLM + NSP"]["curve"][-1]["nsp_acc"]
    assert ablations.nsp_head_reading(rec) is None


def test_the_masking_rate_is_explained_by_its_pilot_only_when_it_differs_from_the_papers():
    rec = whole_plan()
    pilot = {"pilot": "cpu-mini-mask-30", "step": 1250, "pilot_acc": 0.262, "baseline_acc": 0.18}
    text = ablations.mask_rate_reading(rec, pilot)
    assert text.startswith("The masked-LM models mask **30%** of the pieces instead of the paper's 15%.")
    assert "reached 26.2% held-out accuracy at step 1,250, where the same run masking 15% stood at 18.0%" in text
    assert ablations.mask_rate_reading(rec, None) is None
    del rec["models"]["MLM, no NSP"]["settings"]["mlm_probability"]  # the paper's 15%
    assert ablations.mask_rate_reading(rec, pilot) is None


def test_the_comparisons_with_the_paper_in_a_table_and_in_words():
    def v(task, a, b, paper, ours, low, high):
        reading = Reading(ours, low, high, "the three seeds' range")
        apart = reading.words != "within the noise of"
        same = paper is None or (ours > 0) == (paper > 0)
        return {"task": task, "a": a, "b": b, "paper": paper, "ours": ours, "reading": reading, "apart": apart,
                "same": same}  # fmt: skip

    verdicts = [
        v("sst2", "MLM, no NSP", "LTR, no NSP", 0.5, -1.9, -3.0, -0.5),  # apart, against the paper
        v("conll2003", "MLM, no NSP", "LTR, no NSP", 10.1, 2.8, 1.0, 4.0),  # apart, the paper's way
        v("conll2003", "MLM, no NSP", ablations.SCRATCH, None, 13.2, 12.0, 14.0),  # apart, no paper figure
        v("sst2", "MLM + NSP", "MLM, no NSP", 0.1, -3.7, -4.3, 0.7),  # the seeds overlap
    ]
    table = ablations.paper_table(verdicts).splitlines()
    assert table[:2] == ["| task | comparison | paper | ours | reading |", "|---|---|---:|---:|---|"]
    assert table[2] == "| SST-2 | MLM, no NSP vs LTR, no NSP | +0.5 | -1.9 | seeds apart, opposite direction |"
    assert table[3].endswith("| +10.1 | +2.8 | seeds apart, same direction |")
    assert table[4] == (
        "| CoNLL-2003 | MLM, no NSP vs scratch (no pre-training) | – | +13.2 | seeds apart, no paper figure |"
    )
    assert table[5].endswith("| seeds overlap, opposite direction |")
    text = ablations.comparisons_reading(verdicts)
    assert text.startswith("Of the four comparisons, three separate the seeds. ")
    assert "Pointing the paper's way, clearly: MLM, no NSP clear of LTR, no NSP on CoNLL-2003 (+2.8)." in text
    assert "Clearly against the paper's direction: MLM, no NSP below LTR, no NSP on SST-2 (-1.9)." in text
    assert "against the scratch control: MLM, no NSP clear of scratch (no pre-training) on CoNLL-2003 (+13.2)" in text
    assert text.endswith("not read either way: MLM + NSP within the noise of MLM, no NSP on SST-2 (-3.7).")
    one = ablations.comparisons_reading(verdicts[3:])  # nothing apart: no clear word, no paper's way
    assert one.endswith(
        ". Within the seed noise, so not read either way: MLM + NSP within the noise of MLM, no NSP on SST-2 (-3.7)."
    )
    assert one.startswith("The one comparison does not separate the seeds. ")
    assert not re.search(r"\b(clear|clearly|Pointing)\b", one)
    none = ablations.comparisons_reading([verdicts[3], verdicts[3]])
    assert none.startswith("Of the two comparisons, none separate the seeds. ")
    single = ablations.comparisons_reading([verdicts[2], verdicts[3]])
    assert single.startswith("Of the two comparisons, one separates the seeds. ")


def test_why_not_mrpc_and_where_the_reference_run_gains_most(two_models):
    ref = FakeReference([])
    ref.provenance["other_tasks_median"] = {"mrpc from pretrained": 77.5, "mrpc from scratch": 78.5}
    text = ablations.why_not_mrpc(two_models, ref, floor=81.2)
    assert text == (
        "Why not MRPC: calling every dev pair a paraphrase scores an F1 of 81.2, and the reference run, "
        "fine-tuned on all of MRPC, reached 77.5 (from scratch: 78.5). Scores under the floor cannot rank models."
    )
    assert ablations.why_not_mrpc(two_models, None, floor=81.2) is None
    two_models["finetuning"]["tasks"]["mrpc"] = {"max_train_examples": 100}
    assert ablations.why_not_mrpc(two_models, ref, floor=81.2) is None
    b = ablations.beside_reference(two_models, ref)
    assert ablations.best_gain_reading(b) == (
        "Where the record's pre-training pays most is CoNLL-2003 named entities: +14.0 points over scratch, "
        "one run's figure (chapter 11 sets every task side by side)."
    )
    assert ablations.best_gain_reading(study([70.0], [70.0])) == ""  # no gains in the record
