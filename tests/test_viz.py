"""bertlab.analysis.viz.Table: the labelled tables of chapter 4, as HTML (the book) and as text (a terminal)."""

import numpy as np
import pytest
import torch

from bertlab.analysis.viz import Table, table


def test_table_html_has_escaped_labels_and_rounded_numbers():
    t = Table(table("A<B", torch.tensor([[0.5, 1.0 / 3.0], [2.0, -1.25]]), ["x", "y&z"], ["c0", "c1"], 3))
    assert t._repr_html_() == (
        "<div style='display:flex;flex-wrap:wrap'>"
        "<div style='margin-right:1.5em'><b>A&lt;B</b><table>"
        "<tr><th></th><th>c0</th><th>c1</th></tr>"
        "<tr><th>x</th><td style='text-align:right'>0.500</td><td style='text-align:right'>0.333</td></tr>"
        "<tr><th>y&amp;z</th><td style='text-align:right'>2.000</td>"
        "<td style='text-align:right'>-1.250</td></tr>"
        "</table></div></div>"
    )


def test_table_text_aligns_columns_and_puts_parts_one_below_the_other():
    left = table("W", np.array([[1.0, -2.5]]), ["tom"], ["h0", "a_long_label"])
    right = table("V", [[0.125]], ["r"], ["c"], 1)
    assert repr(Table(left, right)) == (
        "W\n              h0 a_long_label\ntom         1.00        -2.50\n\nV\n      c\nr   0.1"
    )


def test_table_parts_sit_side_by_side_in_html():
    parts = [table(name, torch.eye(2), ["a", "b"], ["a", "b"]) for name in ("first", "second")]
    out = Table(*parts)._repr_html_()
    assert out.count("<table>") == 2 and out.index("first") < out.index("second")


def test_table_rejects_labels_that_do_not_match_the_matrix():
    with pytest.raises(ValueError, match="one row per row label"):
        Table(table("X", torch.zeros(2, 3), ["a", "b"], ["c0", "c1"]))
    with pytest.raises(ValueError, match="one row per row label"):
        Table(table("X", torch.zeros(3), ["a", "b", "c"], ["c0"]))


def test_combinations_chart_sets_a_run_beside_the_papers_table():
    import matplotlib

    matplotlib.use("Agg")
    from bertlab.analysis.viz import combinations_chart

    f1 = {"first_layer": 50.0, "last_hidden": 70.0, "concat_last_four": 65.0}
    paper = {"concat_last_four": 96.1, "first_layer": 91.0, "last_hidden": 94.9}  # another order: f1's is drawn
    fig = combinations_chart(f1, paper, finetuned=72.25, paper_finetuned=96.4, title="NER")
    bars, relative = fig.axes
    heights = [p.get_height() for p in bars.patches]
    assert heights == pytest.approx([91.0, 94.9, 96.1, 50.0, 70.0, 65.0])  # the paper's bars, then the run's
    assert [t.get_text() for t in bars.texts] == ["50.0", "70.0", "65.0"]
    dashed = sorted(line.get_ydata()[0] for line in bars.lines)
    assert dashed == [72.25, 96.4]
    assert "this page, fine-tuned (72.2)" in [t.get_text() for t in bars.get_legend().get_texts()]
    assert [t.get_text() for t in bars.get_xticklabels()] == ["first\nlayer", "last\nhidden", "concat\nlast\nfour"]
    paper_rel, ours_rel = (line.get_ydata() for line in relative.lines)
    assert list(ours_rel) == pytest.approx([-20.0, 0.0, -5.0]) and max(paper_rel) == 0.0
    assert fig._suptitle.get_text() == "NER"


def test_curve_panels_draw_one_panel_per_group_with_every_curve():
    import matplotlib

    matplotlib.use("Agg")
    from bertlab.analysis.viz import curve_panels

    fig = curve_panels(
        [("tasks", {"a": ([1, 2], [10.0, 20.0]), "b": ([1, 2, 3], [5.0, 6.0, 7.0])}), ("sizes", {"c": ([4], [1.0])})],
        ylabel="accuracy (%)",
    )
    left, right = fig.axes
    assert [ax.get_title() for ax in fig.axes] == ["tasks", "sizes"]
    assert [list(line.get_ydata()) for line in left.lines] == [[10.0, 20.0], [5.0, 6.0, 7.0]]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["c"]
    assert left.get_xlabel() == "step" and right.get_ylabel() == "accuracy (%)"
    assert len(curve_panels([("one", {"x": ([0], [0])})]).axes) == 1  # a single panel works too


def test_changes_chart_fills_one_dot_per_change_and_names_an_unknown_part():
    import matplotlib

    matplotlib.use("Agg")
    from bertlab.analysis.viz import changes_chart

    parts = ["objective", "masking", "data"]
    ax = changes_chart({"A": ["masking"], "B": ["objective", "data"], "C": []}, parts)
    big = [c for c in ax.collections if c.get_sizes()[0] > 50]
    filled = sorted((int(x), int(y)) for c in big for x, y in c.get_offsets())
    assert filled == [(0, 1), (1, 2), (2, 1)]  # rows drawn top to bottom: A at y=2, B at y=1
    faint = sum(len(c.get_offsets()) for c in ax.collections if c.get_sizes()[0] < 50)
    assert faint == 3 * 3 - 3
    ticks = {int(y): t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels())}
    assert ticks == {2: "A", 1: "B", 0: "C"}
    with pytest.raises(ValueError, match=r"parts \['NSP'\] are not columns"):
        changes_chart({"A": ["NSP"]}, parts)


def test_margins_chart_overlays_both_kinds_of_question_and_the_threshold():
    import matplotlib

    matplotlib.use("Agg")
    from bertlab.analysis.viz import margins_chart

    margins = [-3.0, -1.0, 0.5, 2.0, 4.0, float("-inf")]
    has = [False, False, True, True, True, True]
    ax = margins_chart(margins, has, tau=0.0)
    heights = [sum(p.get_height() for p in c) for c in ax.containers]
    assert heights == [3, 2]  # the -inf margin is left out
    assert [line.get_xdata()[0] for line in ax.lines] == [0.0]
    assert "with an answer (3)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert not margins_chart(margins, has, tau=None).lines
    with pytest.raises(ValueError, match="6 margins but 2"):
        margins_chart(margins, has[:2], tau=0.0)
