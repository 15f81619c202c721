"""lab.record_gains: the record's gains, task by task, as a table and in words."""

from lab.record_gains import gains_reading, gains_table


def row(task, pre, scr, metric="accuracy", n=None):
    return {"task": task, "train_examples": n, "metric": metric, "pretrained": pre, "scratch": scr, "gain": pre - scr}


def test_the_table_and_the_reading_name_each_task_and_its_gain():
    rows = [row("sst2", 60.0, 64.0, n=500), row("mrpc", 80.0, 81.0, "f1"), row("conll2003", 74.0, 63.0, "f1")]
    table = gains_table(rows).splitlines()
    assert table[0] == "| task | examples | metric | pre-trained | from scratch | gain |"
    assert table[2] == "| SST-2 | 500 | accuracy | 60.0 | 64.0 | -4.0 |"
    assert table[4] == "| CoNLL-2003 | all | f1 | 74.0 | 63.0 | +11.0 |"
    reading = gains_reading(rows)
    assert reading.startswith("The largest gain is on CoNLL-2003 (+11.0 points); on SST-2 the gain is -4.0.")
    assert "single words in context" in reading  # entities gained more than any SST-2 size
    sst_only = [r for r in rows if r["task"] != "conll2003"]
    assert "single words" not in gains_reading(sst_only) and gains_reading([]) == ""
    two = gains_reading([row("sst2", 60.0, 64.0, n=500), row("sst2", 70.0, 65.0, n=2000)])
    assert "on SST-2 the gains run from -4.0 to +5.0." in two
