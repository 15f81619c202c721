"""bertlab.analysis.diagrams: the chapters' explanatory figures draw what they claim to draw (counted
on the Agg backend: patches, lines, texts, colours), and the numbers behind chapter 8's stand-in
masked LM are the ones its prose states."""

import math
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

from bertlab import BertConfig, BertModel  # noqa: E402
from bertlab.analysis import diagrams  # noqa: E402
from bertlab.analysis.fill_mask import UnigramComparison, unigram_comparison  # noqa: E402
from bertlab.model import IGNORE_INDEX  # noqa: E402
from bertlab.training.stand_in import tiny_masked_lm  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def same_colour(a, b) -> bool:
    return np.allclose(to_rgba(a)[:3], to_rgba(b)[:3])


# chapter 1 -------------------------------------------------------------------------------------


def test_transformer_stack_draws_one_link_per_allowed_pair_in_each_layer():
    n = 4
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    full = torch.ones(n, n, dtype=torch.bool)
    ax_causal = diagrams.transformer_stack(causal, "GPT")
    ax_full = diagrams.transformer_stack(full, "BERT")
    # two layers of links, plus one line from each top unit to its output
    assert len(ax_causal.lines) == 2 * int(causal.sum()) + n == 2 * 10 + 4
    assert len(ax_full.lines) == 2 * n * n + n
    assert all(same_colour(line.get_color(), diagrams.TRANSFORMER_BLUE) for line in ax_full.lines)
    # a causal link never goes from a unit to a position on its right
    for line in ax_causal.lines:
        x, y = line.get_xdata(), line.get_ydata()  # from the key below to the query above
        assert y[0] < y[1] and x[0] <= x[1]
    assert sum(isinstance(p, Circle) for p in ax_causal.patches) == 2 * n
    labels = texts(ax_causal)
    assert labels.count("Trm") == 2 * n
    assert [f"$E_{i}$" for i in range(1, n + 1)] == [t for t in labels if t.startswith("$E")]
    assert [f"$T_{i}$" for i in range(1, n + 1)] == [t for t in labels if t.startswith("$T")]
    assert ax_causal.get_title() == "GPT"


def test_transformer_stack_rejects_a_mask_that_is_not_square():
    with pytest.raises(ValueError, match="square"):
        diagrams.transformer_stack(torch.ones(3, 4, dtype=torch.bool), "x")


def test_elmo_stack_has_two_independent_chains_per_layer():
    n = 5
    ax = diagrams.elmo_stack(n, "ELMo")
    units = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    assert len(units) == 2 * 2 * n  # two layers, two directions
    edges = [p.get_edgecolor() for p in units]
    assert sum(same_colour(e, diagrams.ELMO_LEFT_TO_RIGHT) for e in edges) == 2 * n
    assert sum(same_colour(e, diagrams.ELMO_RIGHT_TO_LEFT) for e in edges) == 2 * n
    arrows = [c for c in ax.get_children() if isinstance(c, matplotlib.text.Annotation)]
    assert len(arrows) == 2 * 2 * (n - 1)  # each chain links neighbours, in each layer
    assert len(ax.lines) == 2 * 2 * n + 2 * n  # inputs of both layers, then the concatenation
    assert "Trm" not in texts(ax)
    with pytest.raises(ValueError):
        diagrams.elmo_stack(0, "none")


def test_the_recipe_figure_has_one_finetuned_encoder_per_kind_of_task():
    ax = diagrams.pretraining_and_finetuning()
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    k = len(diagrams.FINETUNING_TASKS)
    assert k == 4
    assert len(boxes) == 3 + 2 * k and len(arrows) == 2 + 2 * k
    labels = texts(ax)
    assert "1. Pre-training (once)" in labels and "2. Fine-tuning (per task, all parameters)" in labels
    assert labels.count("BERT encoder\n(initialised from step 1)") == k
    assert "token → label\n(CoNLL-2003 NER)\n+ a softmax on every token" in labels


# chapter 2 -------------------------------------------------------------------------------------


def test_packed_sequence_colours_each_token_by_its_text():
    enc = SimpleNamespace(
        tokens=["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"],
        token_type_ids=[0, 0, 0, 0, 1, 1],
        sequence_ids=[None, 0, 0, None, 1, None],
    )
    ax = diagrams.packed_sequence(enc)
    cells = [p for p in ax.patches if isinstance(p, Rectangle)]
    expected = [None, 0, 0, None, 1, None]
    assert len(cells) == 6
    for cell, seq in zip(cells, expected):
        assert same_colour(cell.get_facecolor(), diagrams.SEGMENT_COLOURS[seq])
    labels = texts(ax)
    assert labels[:3] == ["[CLS]", "0", "0"]  # the token, its segment, its position
    assert labels[12:15] == ["c", "1", "4"]
    assert labels[-2:] == ["segment", "position"]


def test_packed_sequence_wants_one_sequence():
    enc = SimpleNamespace(tokens=["[CLS]", "a"], token_type_ids=[0], sequence_ids=[None, 0])
    with pytest.raises(ValueError, match="one sequence"):
        diagrams.packed_sequence(enc)


# chapters 4 and 5 ------------------------------------------------------------------------------


def test_attention_head_panels_show_the_five_matrices():
    T, d = 4, 3
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(T, d, generator=g) for _ in range(3))
    weights = (q @ k.T).softmax(-1)
    z = weights @ v
    tokens = ["[CLS]", "tom", "ran", "[SEP]"]
    fig = diagrams.attention_head_panels(q, k, v, weights, z, tokens, layer=0, head=2)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["Q = X W^Q + b", "K", "V", "weights, layer 0 head 2", "Z = weights V"]
    assert np.allclose(axes[3].images[0].get_array(), weights.numpy())
    assert axes[3].images[0].get_clim() == (0, 1)
    vmin, vmax = axes[4].images[0].get_clim()
    assert vmax == pytest.approx(z.abs().max().item()) and vmin == -vmax  # centred on 0
    assert [t.get_text() for t in axes[0].get_yticklabels()] == tokens
    assert [t.get_text() for t in axes[3].get_xticklabels()] == tokens
    assert axes[0].get_xlabel() == "dimension (d_k = 3)"
    with pytest.raises(ValueError):
        diagrams.attention_head_panels(q, k, v, weights[:3], z, tokens, 0, 2)


def test_head_view_lines_draw_every_pair_with_its_weight_as_opacity():
    A, T = 3, 4
    att = torch.rand(A, T, T, generator=torch.Generator().manual_seed(1)).softmax(-1)
    fig = diagrams.head_view_lines(att, list("abcd"), "layer 0", ncols=2)
    axes = fig.axes
    assert len(axes) == 4  # 2 x 2 panels, the fourth empty
    assert fig.get_suptitle() == "layer 0"
    for h in range(A):
        (lines,) = [c for c in axes[h].collections if isinstance(c, LineCollection)]
        assert len(lines.get_segments()) == T * T
        colours = lines.get_colors()
        assert np.allclose(colours[:, 3], att[h].flatten().numpy())  # alpha = weight, row by row
        assert np.allclose(colours[:, :3], diagrams.HEAD_COLOURS[h])
        assert axes[h].get_title() == f"head {h}"
        assert texts(axes[h]).count("c") == 2  # each token on both sides
    assert not axes[3].collections and not axes[3].texts
    with pytest.raises(ValueError, match="T = 3"):
        diagrams.head_view_lines(att, list("abc"), "x")


# chapter 6 -------------------------------------------------------------------------------------


def test_axis_statistics_are_per_token_then_per_feature():
    t = torch.tensor([[[1.0, 3.0], [2.0, 2.0]]])  # (B=1, T=2, H=2)
    tok_mean, tok_std, feat_mean, feat_std = diagrams.axis_statistics(t)
    assert tok_mean.tolist() == [2.0, 2.0] and tok_std.tolist() == [1.0, 0.0]
    assert feat_mean.tolist() == [1.5, 2.5] and feat_std.tolist() == [0.5, 0.5]
    assert diagrams.two_decimals(-0.001) == 0.0 and str(diagrams.two_decimals(-0.001)) == "0.0"


def test_normalisation_axes_write_each_value_and_the_statistics_of_its_axis():
    x = torch.arange(12.0).reshape(2, 3, 2)  # two sequences of three tokens, two features
    layer_norm = torch.nn.functional.layer_norm(x, (2,))
    fig = diagrams.normalisation_axes({"input x": x, "LayerNorm": layer_norm})
    ax_x, ax_ln = fig.axes
    assert ax_x.get_title() == "input x" and ax_ln.get_title() == "LayerNorm"
    labels = texts(ax_x)
    assert labels[:12] == [f"{v:.2f}" for v in range(12)]  # every value, row by row
    assert labels[12:18] == [f"{2 * r + 0.5:+.2f} / 0.50" for r in range(6)]  # each row: mean / std
    assert labels[18] == f"+5.00\n{np.std([0, 2, 4, 6, 8, 10]):.2f}"  # feature 0 over the tokens
    assert all(t.endswith("/ 1.00") and t.startswith("+0.00") for t in texts(ax_ln)[12:18])
    assert [t.get_text() for t in ax_x.get_yticklabels()][-1] == "seq 1, tok 2"
    assert {t.get_text() for t in ax_ln.get_yticklabels()} == {""}  # the labels once, on the left
    with pytest.raises(ValueError, match="one"):
        diagrams.normalisation_axes({"a": x, "b": x[:, :2]})


# chapter 6b ------------------------------------------------------------------------------------

ENCODER_COLUMN = ["Input Embedding", "Multi-Head Attention", "Add & Norm", "Feed Forward", "Add & Norm"]
DECODER_COLUMN = [
    "Output Embedding",
    "Masked Multi-Head Attention",
    "Add & Norm",
    diagrams.CROSS_ATTENTION,
    "Add & Norm",
    "Feed Forward",
    "Add & Norm",
    "Linear",
    "Softmax",
]


def boxed_labels(ax) -> list[tuple[str, FancyBboxPatch]]:
    """Each text of the two columns with its box: the smallest box drawn around the text's anchor."""
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    pairs = []
    for t in ax.texts:
        if t.get_text() in ENCODER_COLUMN + DECODER_COLUMN:
            x, y = t.get_position()
            around = [b for b in boxes if b.get_bbox().contains(x, y)]
            pairs.append((t.get_text(), min(around, key=lambda b: b.get_width() * b.get_height())))
    return pairs


def column(pairs, box) -> list[tuple[str, FancyBboxPatch]]:
    """The labelled boxes centred on the same x as `box`, bottom to top."""
    centre = box.get_x() + box.get_width() / 2
    same = [(label, b) for label, b in pairs if math.isclose(b.get_x() + b.get_width() / 2, centre)]
    return sorted(same, key=lambda pair: pair[1].get_y())


def test_transformer_diagram_draws_the_encoder_beside_the_decoder_and_marks_berts_half():
    ax = diagrams.transformer_diagram()
    labels = texts(ax)
    assert labels.count("Add & Norm") == 2 + 3 and labels.count("Feed Forward") == 2
    assert labels.count("N×") == 2 and labels.count("Positional\nEncoding") == 2
    assert {"Output Probabilities", "BERT keeps this half: the encoder", "Q", "K, V"} <= set(labels)
    pairs = boxed_labels(ax)
    by_label = dict(pairs)
    encoder = column(pairs, by_label["Input Embedding"])
    decoder = column(pairs, by_label["Output Embedding"])
    assert [label for label, _ in encoder] == ENCODER_COLUMN  # each stack in the paper's order, bottom up
    assert [label for label, _ in decoder] == DECODER_COLUMN
    assert len(encoder) + len(decoder) == len(pairs)
    for stack in (encoder, decoder):  # no box overlaps the one above it
        assert all(a.get_y() + a.get_height() < b.get_y() for (_, a), (_, b) in zip(stack, stack[1:]))
    enc_right = max(b.get_x() + b.get_width() for _, b in encoder)
    dec_left = min(b.get_x() for _, b in decoder)
    assert enc_right < dec_left  # the two columns side by side, apart
    # BERT's half: the blue frame holds every encoder box and its label, and no decoder box
    blue = [p for p in ax.patches if same_colour(p.get_edgecolor(), diagrams.TRANSFORMER_BLUE)]
    (bert,) = [p for p in blue if isinstance(p, FancyBboxPatch)]
    x0, x1, y0, y1 = bert.get_x(), bert.get_x() + bert.get_width(), bert.get_y(), bert.get_y() + bert.get_height()
    assert all(x0 < b.get_x() and b.get_x() + b.get_width() < x1 and y0 < b.get_y() < y1 for _, b in encoder)
    assert enc_right < x1 < dec_left
    (label,) = [t for t in ax.texts if t.get_text() == "BERT keeps this half: the encoder"]
    assert x0 < label.get_position()[0] < x1 and y0 < label.get_position()[1] < y1


def arrow_points(arrow: FancyArrowPatch) -> np.ndarray:
    path = arrow.get_path()  # in data coordinates: the line, then the head
    return path.vertices[path.codes != path.CLOSEPOLY]


def test_transformer_diagram_carries_the_encoder_output_into_the_cross_attention():
    ax = diagrams.transformer_diagram()
    pairs = boxed_labels(ax)
    encoder = column(pairs, dict(pairs)["Input Embedding"])
    top = encoder[-1][1]  # the encoder's last Add & Norm
    cross = dict(pairs)[diagrams.CROSS_ATTENTION]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    (memory,) = [a for a in arrows if same_colour(a.get_edgecolor(), diagrams.TRANSFORMER_BLUE)]
    points = arrow_points(memory)
    # it leaves the top of the encoder stack, rises above it, and ends on the cross-attention's left side
    assert points[0] == pytest.approx((top.get_x() + top.get_width() / 2, top.get_y() + top.get_height()))
    assert points[:, 1].max() > top.get_y() + top.get_height()
    tip = points[points[:, 0].argmax()]
    assert tip == pytest.approx((cross.get_x(), cross.get_y() + cross.get_height() / 2), abs=0.1)
    assert tip[0] <= cross.get_x()
    # a residual connection runs into the outer side of each of the five Add & Norm boxes
    norms = [(label, b) for label, b in pairs if label == "Add & Norm"]
    midpoint = top.get_x() + top.get_width() / 2
    fed = 0
    for _, box in norms:
        outer = box.get_x() if box.get_x() < midpoint else box.get_x() + box.get_width()
        side = np.array([outer, box.get_y() + box.get_height() / 2])
        fed += any(np.linalg.norm(arrow_points(a) - side, axis=1).min() < 0.1 for a in arrows if a is not memory)
    assert fed == len(norms) == 5


def test_transformer_diagram_draws_on_the_axes_it_is_given():
    fig, (left, right) = plt.subplots(1, 2)
    assert diagrams.transformer_diagram(ax=right) is right
    assert plt.get_fignums() == [fig.number]  # no new figure
    assert not left.patches and not left.texts
    assert "Masked Multi-Head Attention" in texts(right) and not right.axison


# chapter 7 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["tiny", "base"])
def test_parameters_by_block_add_up_to_the_model(preset):
    config = BertConfig.preset(preset)
    blocks, per_block = diagrams.parameters_by_block(config)
    assert blocks[0] == "embeddings" and blocks[-1] == "pooler" and len(blocks) == config.num_layers + 2
    assert set(per_block) == set(diagrams.PARAMETER_GROUP_COLOURS)
    assert all(len(counts) == len(blocks) for counts in per_block.values())
    with torch.device("meta"):
        model = BertModel(config)
    assert sum(map(sum, per_block.values())) == model.num_parameters()
    if preset == "base":
        assert model.num_parameters() == 109_482_240


def test_parameter_breakdown_stacks_every_group():
    config = BertConfig.preset("tiny")
    _, per_block = diagrams.parameters_by_block(config)
    sizes = {"tiny": {g: sum(ns) for g, ns in per_block.items()}}
    fig = diagrams.parameter_breakdown(sizes, config, name="tiny BERT")
    ax1, ax2 = fig.axes
    groups = list(diagrams.PARAMETER_GROUP_COLOURS)
    assert len(ax1.patches) == len(groups)
    widths = [p.get_width() for p in ax1.patches]
    assert widths == pytest.approx([sizes["tiny"][g] / 1e6 for g in groups])
    assert len(ax2.patches) == len(groups) * (config.num_layers + 2)
    assert ax2.get_title() == "tiny BERT, block by block"
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == groups
    with pytest.raises(ValueError, match="unknown parameter groups"):
        diagrams.parameter_breakdown({"x": {"biases": 1}}, config)


# chapter 8 -------------------------------------------------------------------------------------


def test_masked_tokens_html_colours_the_chosen_tokens_and_shows_the_label():
    html = diagrams.masked_tokens_html(
        ["my", "dog", "is", "hairy"], ["my", "[MASK]", "apple", "hairy"], ["", "mask", "random", "same"]
    )
    assert html.startswith('<div style="line-height:2.0;font-family:monospace">my <span')
    assert 'background:#e31a1c;color:white;padding:1px 4px;border-radius:3px" title="original: dog">[MASK]' in html
    assert '>apple</span><sub style="color:#555">is</sub>' in html
    assert ">hairy</span> " not in html and ">hairy</span></div>" in html  # unchanged: no label after it
    assert html.count("<sub") == 2 and html.count("<span") == 3 + 3  # three chosen, three legend entries
    with pytest.raises(ValueError, match="unknown fate"):
        diagrams.masked_tokens_html(["a"], ["b"], ["swapped"])
    with pytest.raises(ValueError, match="length"):
        diagrams.masked_tokens_html(["a", "b"], ["a"], [""])


def test_masking_draws_colour_only_the_chosen_tokens():
    before = ["[CLS]", "my", "dog", "[SEP]"]
    draws = [
        (before, ["[CLS]", "[MASK]", "dog", "[SEP]"], ["", "mask", "", ""]),
        (before, ["[CLS]", "my", "cat", "[SEP]"], ["", "", "random", ""]),
        (before, before, ["", "same", "", ""]),
    ]
    ax = diagrams.masking_draws(draws, [0, 1, 2])
    cells = ax.patches
    assert len(cells) == 3
    for cell, fate in zip(cells, ["mask", "random", "same"]):
        assert same_colour(cell.get_facecolor(), diagrams.FATE_COLOURS[fate])
    shown = texts(ax)
    assert shown[:4] == ["[CLS]", "[MASK]", "dog", "[SEP]"] and shown[6] == "cat"
    colours = [t.get_color() for t in ax.texts]
    assert colours[1] == "white" and colours[0] == "black"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["draw 0", "draw 1", "draw 2"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["[MASK]", "random token", "chosen, unchanged"]
    with pytest.raises(ValueError, match="one seed per draw"):
        diagrams.masking_draws(draws, [0, 1])


def test_masking_rates_draw_the_measured_shares_against_the_paper():
    share = {"[MASK]": 0.8, "random token": 0.1, "unchanged": 0.1}
    fig = diagrams.masking_rates(1000, 150, share)
    ax1, ax2 = fig.axes
    assert [p.get_height() for p in ax1.patches] == pytest.approx([15.0])
    assert texts(ax1) == ["15.00% (paper 15%)"]
    assert [p.get_height() for p in ax2.patches] == pytest.approx([80.0, 10.0, 10.0])
    assert same_colour(ax2.patches[0].get_facecolor(), diagrams.FATE_COLOURS["mask"])
    assert texts(ax2) == ["80.0% (paper 80%)", "10.0% (paper 10%)", "10.0% (paper 10%)"]
    with pytest.raises(ValueError):
        diagrams.masking_rates(0, 0, share)


class Guesser(torch.nn.Module):
    """A 'masked LM' that always predicts the same logits, whatever it reads."""

    def __init__(self, logits):
        super().__init__()
        self.logits = torch.tensor(logits)

    def forward(self, mlm_labels, **_):
        return SimpleNamespace(mlm_logits=self.logits.expand(*mlm_labels.shape, -1))


def test_unigram_comparison_scores_a_model_against_word_frequencies():
    vocab = ["[PAD]", "the", "dog", "cat"]
    tokenizer = SimpleNamespace(vocab_size=4, special_ids=[0], id_to_token=lambda i: vocab[i])
    train_set = SimpleNamespace(input_ids=np.array([[1, 1, 1, 2, 0, 0], [1, 2, 3, 0, 0, 0]]))  # the 4, dog 2, cat 1
    held = [{"mlm_labels": torch.tensor([[2, 2, 1, IGNORE_INDEX], [3, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]])}]
    model = Guesser([0.0, 0.0, 3.0, 0.0])  # always "dog"
    u = unigram_comparison(model, tokenizer, train_set, held)
    assert u.n_tokens == 4
    assert u.uniform_ce == pytest.approx(math.log(4)) and u.uniform_acc == 0.25
    assert u.unigram_top == "the" and u.unigram_acc == 0.25  # "the" is the answer once in four
    assert u.unigram_ce == pytest.approx(-np.mean(np.log([2 / 7, 2 / 7, 4 / 7, 1 / 7])))
    p_dog = math.exp(3) / (math.exp(3) + 3)
    assert u.model_ce == pytest.approx(-(2 * math.log(p_dog) + 2 * math.log(1 / (math.exp(3) + 3))) / 4)
    assert u.model_acc == 0.5
    assert u.guesses == [("dog", 4, 0.5, 0.5)]
    assert u.learned is (u.model_ce < u.unigram_ce)  # accuracy is better (0.5 > 0.25)
    assert u.context_tokens() == []  # right exactly as often as "dog" is the answer


def test_unigram_comparison_smoothing_keeps_an_unseen_answer_finite():
    vocab = ["[PAD]", "the", "dog", "cat"]
    tokenizer = SimpleNamespace(vocab_size=4, special_ids=[0], id_to_token=lambda i: vocab[i])
    train_set = SimpleNamespace(input_ids=np.array([[1, 1, 1, 2, 0, 0]]))  # "cat" never seen
    held = [{"mlm_labels": torch.tensor([[3, 1, IGNORE_INDEX]])}]
    model = Guesser([0.0, 3.0, 0.0, 0.0])
    assert math.isinf(unigram_comparison(model, tokenizer, train_set, held).unigram_ce)
    u = unigram_comparison(model, tokenizer, train_set, held, smoothing=1.0)  # counts 4, 2, 1 of 7
    assert u.unigram_ce == pytest.approx(-np.mean(np.log([1 / 7, 4 / 7])))
    assert u.unigram_top == "the"


def test_context_tokens_are_guesses_right_more_than_twice_their_base_rate():
    u = UnigramComparison(
        n_tokens=100,
        uniform_ce=7.6,
        uniform_acc=0.0005,
        unigram_ce=6.0,
        unigram_acc=0.05,
        unigram_top="the",
        model_ce=5.0,
        model_acc=0.10,
        guesses=[("the", 50, 0.06, 0.05), ("of", 10, 0.30, 0.10), ("he", 5, 0.2, 0.1)],
    )
    assert u.context_tokens() == ["of"]  # 0.2 is not more than twice 0.1
    assert u.learned
    assert not UnigramComparison(**{**u.__dict__, "model_acc": 0.04}).learned


def test_tiny_masked_lm_trains_from_the_corpus(mirror, tmp_path, one_thread):
    from bertlab.data.corpus import load_corpus

    threads = torch.get_num_threads()
    run = tiny_masked_lm(load_corpus("books", "heldout"), tmp_path, steps=2)  # the chapter's data
    assert torch.get_num_threads() == threads
    assert run.steps == 2 and not run.model.training and run.seconds > 0
    assert run.tokenizer.vocab_size <= 2_000 and run.model.config.vocab_size == run.tokenizer.vocab_size
    assert (run.model.config.num_layers, run.model.config.hidden_size) == (2, 128)
    assert len(run.held_batches) == 5 and run.held_batches[0]["input_ids"].shape[1] == 64
    u = unigram_comparison(run.model, run.tokenizer, run.train_set, run.held_batches)
    assert u.n_tokens > 0 and 0 <= u.model_acc <= 1 and u.unigram_ce < u.uniform_ce


def test_finetuning_setups_draws_the_papers_figure_4():
    fig = diagrams.finetuning_setups()
    axes = fig.axes
    assert len(axes) == 4
    for ax, (title, a, b, read) in zip(axes, diagrams.FIGURE4_PANELS):
        assert ax.get_title() == title
        texts = [t.get_text() for t in ax.texts]
        tokens = ["[CLS]", *a, "[SEP]", *b] + (["[SEP]"] if b else [])
        cells = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert len(cells) == len(tokens) and all(t in texts for t in tokens)
        # B's tokens are coloured as segment B, A's as segment A
        colours = [to_rgba(c.get_facecolor()) for c in cells]
        assert colours.count(to_rgba(diagrams.SEGMENT_COLOURS[1])) == len(b)
        assert colours.count(to_rgba(diagrams.SEGMENT_COLOURS[0])) == len(a)
        red = [p for p in ax.patches if isinstance(p, FancyArrowPatch) and to_rgba(p.get_edgecolor()) == to_rgba("C3")]
        if read == "class":
            assert len(red) == 1 and "class\nlabel" in texts
        elif read == "span":
            assert len(red) == 2 and {"start", "end"} <= set(texts)
            starts = [t for t in ax.texts if t.get_text() in ("start", "end")]
            assert all(t.get_position()[0] > len(a) + 1 for t in starts)  # both inside the passage (B)
        else:
            assert len(red) == len(tokens) - 2  # a label on every token between [CLS] and [SEP]
    plt.close(fig)
    _, two = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="4 panels"):
        diagrams.finetuning_setups(two)
    plt.close("all")
