"""lab.charts: the record charts draw what they are given."""


def test_gains_chart_draws_every_seed_and_the_floors():
    import matplotlib

    matplotlib.use("Agg")
    from lab.charts import gains_chart

    rows = [
        {
            "task": "sst2",
            "train_examples": 500,
            "metric": "accuracy",
            "pretrained": 62.0,
            "scratch": 60.0,
            "pretrained_scores": [61.0, 62.0, 63.0],
            "scratch_scores": [59.0, 60.0, 61.0],
            "gain": 2.0,
        },
        {
            "task": "mrpc",
            "train_examples": None,
            "metric": "f1",
            "pretrained": 70.0,
            "scratch": 75.0,
            "pretrained_scores": [70.0],
            "scratch_scores": [75.0],
            "gain": -5.0,
        },
    ]
    ax = gains_chart(rows, {("sst2", 500): 50.9, "mrpc": 81.2})
    dots = [c.get_offsets() for c in ax.collections]
    assert [len(d) for d in dots] == [3, 3, 1, 1]  # scratch, pretrained per row
    floors = sorted(line.get_xdata()[0] for line in ax.lines)
    assert floors == [50.9, 81.2]
    assert [t.get_text() for t in ax.texts if t.get_text()] == ["+2.0", "-5.0"]  # (the arrows are empty)
    assert "SST-2, 500 examples" in ax.get_yticklabels()[0].get_text()
