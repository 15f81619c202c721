"""Diagrams of the model's mechanics for Part I: the paper's Figures 1, 3 and 4, a packed input,
one head's numbers, a static head view, LayerNorm against BatchNorm, where the parameters sit, and
the masked LM's draws and rates.

Each function draws on the Axes it is given (a new figure when None) and returns it, or the Figure
for several panels. The colours live here so that the same thing has one colour in every figure.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from matplotlib.path import Path

from bertlab.analysis.viz import as_numpy, new_axes
from bertlab.config import BertConfig

# Figure 3 of the paper: the input embeddings, the Transformer units and the outputs
TRANSFORMER_BLUE = "#3b75af"
EMBEDDING_YELLOW = ("#fff3c4", "#c9a227")  # face, edge
OUTPUT_BLUE = ("#dbe9f6", TRANSFORMER_BLUE)
ELMO_LEFT_TO_RIGHT = "#d95f02"
ELMO_RIGHT_TO_LEFT = "#1b9e77"
# a packed sequence: text A, text B, the special tokens
SEGMENT_COLOURS = {0: "#a6cee3", 1: "#fdbf6f", None: "#dddddd"}
# what the masked LM did to a chosen token ("" = not chosen)
FATE_COLOURS = {"mask": "#e31a1c", "random": "#ff7f00", "same": "#33a02c", "": None}
FATE_NAMES = {"mask": "[MASK]", "random": "random token", "same": "chosen, unchanged"}
# where the parameters sit (chapter 7)
# fmt: off
PARAMETER_GROUP_COLOURS = {"token embeddings": "#c9a227", "position + segment embeddings": "#f0d77a",
                           "attention": "#3b75af", "feed-forward": "#d95f02", "LayerNorm": "#7a7a7a",
                           "pooler": "#1b9e77"}
# fmt: on
# one colour per head in the head view (tab10, then two more: 12 heads)
HEAD_COLOURS = [plt.cm.tab10(i)[:3] for i in range(10)] + [(0.0, 0.0, 0.0), (0.6, 0.45, 0.0)]


# Chapter 1: the paper's Figure 3 (three pre-training architectures) and Figure 1 (the recipe)


def transformer_stack(mask, title: str, ax=None):
    """Inputs E_i, two layers of Transformer units, outputs T_i; unit i joins unit j of the layer
    below wherever `mask[i, j]`. A full mask draws BERT, a lower-triangular one GPT."""
    mask = torch.as_tensor(mask, dtype=torch.bool)
    if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        raise ValueError(f"mask must be a square (n, n) matrix, got shape {tuple(mask.shape)}")
    n = mask.shape[0]
    ax = new_axes(ax, (3.4, 3.4))
    ys = {"E": 0.0, "1": 1.0, "2": 2.0, "T": 3.0}
    for lo, hi in (("E", "1"), ("1", "2")):
        for i in range(n):
            for j in range(n):
                if mask[i, j]:
                    ax.plot([j, i], [ys[lo] + 0.15, ys[hi] - 0.15], color=TRANSFORMER_BLUE, lw=0.7, alpha=0.8)
    for i in range(n):
        ax.plot([i, i], [2.15, 2.85], color=TRANSFORMER_BLUE, lw=0.7)
        for y in (1.0, 2.0):
            ax.add_patch(plt.Circle((i, y), 0.16, fc="white", ec=TRANSFORMER_BLUE))
            ax.text(i, y, "Trm", ha="center", va="center", fontsize=6)
    label_stack(ax, n, title)
    return ax


def elmo_stack(n: int, title: str, ax=None):
    """ELMo as the paper draws it: independent left-to-right and right-to-left LSTM chains,
    concatenated only at the top."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    ax = new_axes(ax, (3.4, 3.4))
    for y, y_prev in ((1.0, 0.0), (2.0, 1.0)):
        for i in range(n):
            for dx, colour in ((-0.17, ELMO_LEFT_TO_RIGHT), (0.17, ELMO_RIGHT_TO_LEFT)):
                ax.plot([i, i + dx], [y_prev + 0.15, y - 0.15], color=colour, lw=0.8)
                box = FancyBboxPatch(
                    (i + dx - 0.13, y - 0.13), 0.26, 0.26, boxstyle="round,pad=0.02", fc="white", ec=colour
                )
                ax.add_patch(box)
            if i < n - 1:  # the left-to-right chain, then the right-to-left one
                arrow = dict(arrowstyle="->", color=ELMO_LEFT_TO_RIGHT, lw=0.8)
                ax.annotate("", (i + 1 - 0.17 - 0.14, y), (i - 0.17 + 0.14, y), arrowprops=arrow)
                arrow = dict(arrowstyle="->", color=ELMO_RIGHT_TO_LEFT, lw=0.8)
                ax.annotate("", (i + 0.17 + 0.14, y), (i + 1 + 0.17 - 0.14, y), arrowprops=arrow)
    for i in range(n):
        ax.plot([i - 0.17, i], [2.15, 2.85], color=ELMO_LEFT_TO_RIGHT, lw=0.8)
        ax.plot([i + 0.17, i], [2.15, 2.85], color=ELMO_RIGHT_TO_LEFT, lw=0.8)
    label_stack(ax, n, title)
    return ax


def label_stack(ax, n: int, title: str) -> None:
    """The input embeddings E_i and the outputs T_i of a Figure 3 panel, its limits and title."""
    for i in range(n):
        for y, name, (face, edge) in ((0.0, "E", EMBEDDING_YELLOW), (3.0, "T", OUTPUT_BLUE)):
            ax.text(i, y, f"${name}_{i + 1}$", ha="center", va="center", bbox=dict(boxstyle="round", fc=face, ec=edge))
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(-0.5, 3.5)
    ax.set_title(title)
    ax.axis("off")


def recipe_box(ax, xy: tuple[float, float], w: float, h: float, text: str, fc: str, fs: float = 9) -> None:
    """A rounded box with centred text (the boxes of the paper's Figure 1)."""
    ax.add_patch(FancyBboxPatch(xy, w, h, boxstyle="round,pad=0.02", fc=fc, ec="#555555"))
    ax.text(xy[0] + w / 2, xy[1] + h / 2, text, ha="center", va="center", fontsize=fs, wrap=True)


def recipe_arrow(ax, a: tuple[float, float], b: tuple[float, float]) -> None:
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=14, color="#555555"))


# the four kinds of fine-tuning task of the paper's Figure 4: (input -> output, the output layer)
FINETUNING_TASKS = [
    ("sentence pair → class\n(MNLI, MRPC, RTE)", "$\\mathrm{softmax}(CW^\\top)$ on [CLS]"),
    ("one sentence → class\n(SST-2, CoLA)", "$\\mathrm{softmax}(CW^\\top)$ on [CLS]"),
    ("token → label\n(CoNLL-2003 NER)", "a softmax on every token"),
    ("question + passage → span\n(SQuAD)", "start and end vectors $S$, $E$"),
]


def pretraining_and_finetuning(ax=None):
    """The paper's Figure 1 as a flow: unlabelled text -> pre-training -> weights that initialise
    one fine-tuned BERT per kind of task (FINETUNING_TASKS)."""
    ax = new_axes(ax, (10, 4.4))
    ax.set_xlim(0, 12)
    ax.set_ylim(0, 4.6)
    ax.axis("off")
    ax.text(2.2, 4.35, "1. Pre-training (once)", ha="center", fontsize=11, weight="bold")
    ax.text(8.6, 4.35, "2. Fine-tuning (per task, all parameters)", ha="center", fontsize=11, weight="bold")
    text = "unlabelled text\n(the paper: BooksCorpus + English Wikipedia)"
    recipe_box(ax, (0.2, 2.9), 4.0, 1.0, text, "#fff3c4")
    recipe_box(ax, (0.2, 1.5), 4.0, 1.0, "BERT encoder\n+ masked-LM head + next-sentence head", "#dbe9f6")
    recipe_box(ax, (0.2, 0.2), 4.0, 0.9, "pre-trained weights", "#e6f2e6")
    recipe_arrow(ax, (2.2, 2.9), (2.2, 2.5))
    recipe_arrow(ax, (2.2, 1.5), (2.2, 1.1))
    for k, (task, head) in enumerate(FINETUNING_TASKS):
        y = 3.35 - k * 1.05
        recipe_box(ax, (5.6, y), 3.1, 0.8, "BERT encoder\n(initialised from step 1)", "#dbe9f6", fs=8)
        recipe_box(ax, (9.0, y), 2.8, 0.8, f"{task}\n+ {head}", "#f6dbe9", fs=8)
        recipe_arrow(ax, (4.2, 0.65), (5.6, y + 0.4))
        recipe_arrow(ax, (8.7, y + 0.4), (9.0, y + 0.4))
    return ax


# the four panels of the paper's Figure 4: title, input tokens (A then, after [SEP], B), and
# where the output is read ("class": C only; "tags": every token of A; "span": start/end over B)
# fmt: off
FIGURE4_PANELS = [
    ("(a) sentence pair classification\nMNLI, QQP, QNLI, STS-B, MRPC, RTE, SWAG",
     ("Tok 1", "Tok N"), ("Tok 1", "Tok M"), "class"),
    ("(b) single sentence classification\nSST-2, CoLA", ("Tok 1", "Tok 2", "Tok N"), (), "class"),
    ("(c) question answering\nSQuAD v1.1", ("Tok 1", "Tok N"), ("Tok 1", "Tok M"), "span"),
    ("(d) single sentence tagging\nCoNLL-2003 NER", ("Tok 1", "Tok 2", "Tok N"), (), "tags"),
]
# fmt: on


def finetuning_setups(axes=None):
    """The paper's Figure 4: for each kind of task the input, BERT, and where the output is read
    (a class from C, a label per token, or a span over B). Returns the figure."""
    if axes is None:
        _, axes = plt.subplots(1, 4, figsize=(15, 3.6), layout="constrained")
    if len(axes) != len(FIGURE4_PANELS):
        raise ValueError(f"finetuning_setups draws {len(FIGURE4_PANELS)} panels, got {len(axes)} axes")
    for ax, (title, a, b, read) in zip(axes, FIGURE4_PANELS):
        tokens = ["[CLS]", *a, "[SEP]", *b] + (["[SEP]"] if b else [])
        n = len(tokens)
        ax.set_xlim(-0.6, n - 0.4)
        ax.set_ylim(-0.2, 4.1)
        ax.axis("off")
        ax.set_title(title, fontsize=9)
        in_b = set(range(len(a) + 2, len(a) + 2 + len(b)))
        for i, token in enumerate(tokens):
            colour = SEGMENT_COLOURS[None] if token in ("[CLS]", "[SEP]") else SEGMENT_COLOURS[1 if i in in_b else 0]
            ax.add_patch(plt.Rectangle((i - 0.42, 0), 0.84, 0.7, color=colour))
            ax.text(i, 0.35, token, ha="center", va="center", fontsize=7)
        ax.add_patch(FancyBboxPatch((-0.45, 1.2), n - 0.1, 0.9, boxstyle="round,pad=0.05", fc="#dbe9f6", ec="0.4"))
        ax.text((n - 1) / 2, 1.65, "BERT", ha="center", va="center", fontsize=10, weight="bold")
        for i in range(n):
            ax.add_patch(FancyArrowPatch((i, 0.72), (i, 1.18), arrowstyle="-|>", mutation_scale=7, color="0.5"))
        if read == "class":
            outputs = {0: "class\nlabel"}
        elif read == "tags":
            outputs = {i: "B-PER" if i == 1 else "O" for i in range(1, n - 1)}  # a label per token
        else:  # the span: its start and its end, both among the tokens of B
            outputs = {min(in_b): "start", max(in_b): "end"}
        for i, label in outputs.items():
            ax.add_patch(FancyArrowPatch((i, 2.12), (i, 2.75), arrowstyle="-|>", mutation_scale=8, color="C3"))
            ax.text(i, 2.85, label, ha="center", va="bottom", fontsize=7, color="C3")
        ax.text(0, 2.3, "C", ha="right", va="center", fontsize=8, style="italic")
    return axes[0].figure


# Chapter 2: what BERT reads


def packed_sequence(enc, ax=None):
    """One encoded sequence [CLS] A [SEP] B [SEP] (a one-sequence Encoding) as a row of cells
    coloured by text, with each token's segment id and position below."""
    tokens, segments, sequences = list(enc.tokens), list(enc.token_type_ids), list(enc.sequence_ids)
    if not len(tokens) == len(segments) == len(sequences):
        raise ValueError("enc must be one sequence: tokens, token_type_ids and sequence_ids of one length")
    ax = new_axes(ax, (11, 2.6))
    for pos, (token, seg, seq) in enumerate(zip(tokens, segments, sequences)):
        colour = SEGMENT_COLOURS[seq if token not in ("[CLS]", "[SEP]") else None]
        ax.add_patch(plt.Rectangle((pos, 0), 0.92, 1, color=colour))
        ax.text(pos + 0.46, 0.5, token, rotation=90, ha="center", va="center", fontsize=9)
        ax.text(pos + 0.46, -0.25, str(seg), ha="center", va="center", fontsize=9)
        ax.text(pos + 0.46, -0.6, str(pos), ha="center", va="center", fontsize=7, color="grey")
    ax.text(-0.3, -0.25, "segment", ha="right", va="center", fontsize=9)
    ax.text(-0.3, -0.6, "position", ha="right", va="center", fontsize=8, color="grey")
    ax.set_xlim(-3.2, len(tokens))
    ax.set_ylim(-0.9, 1.05)
    ax.axis("off")
    return ax


# Chapters 4 and 5: one head's numbers, and every head's lines


def attention_head_panels(q, k, v, weights, z, tokens: Sequence[str], layer: int, head: int, axes=None):
    """One head as five pictures, rows the tokens: Q, K, V (T, d_k), the weights (T, T) and
    Z = weights V. Q, K, V and Z are drawn red-blue around 0, the weights from 0 to 1."""
    q, k, v, weights, z = (as_numpy(m) for m in (q, k, v, weights, z))
    T = len(tokens)
    if weights.shape != (T, T) or any(m.ndim != 2 or m.shape[0] != T for m in (q, k, v, z)):
        raise ValueError(f"expected Q, K, V, Z of T rows and (T, T) weights for the {T} tokens")
    if axes is None:
        fig, axes = plt.subplots(1, 5, figsize=(17, 4.6), gridspec_kw={"width_ratios": [1, 1, 1, 1.4, 1]})
    fig = axes[0].figure
    tokens, dims = list(tokens), f"dimension (d_k = {q.shape[1]})"
    matrices = [("Q = X W^Q + b", q, dims), ("K", k, dims), ("V", v, dims), ("Z = weights V", z, "dimension")]
    for ax, (name, m, xlabel) in zip([*axes[:3], axes[4]], matrices):
        top = np.abs(m).max()
        ax.imshow(m, cmap="RdBu_r", vmin=-top, vmax=top, aspect="auto", interpolation="nearest")
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_yticks(range(T), tokens if ax is axes[0] else [])
    ax = axes[3]
    ax.imshow(weights, cmap="Blues", vmin=0, vmax=1, aspect="auto")
    ax.set_title(f"weights, layer {layer} head {head}")
    ax.set_xticks(range(T), tokens, rotation=90)
    ax.set_yticks(range(T), tokens)
    ax.set_xlabel("key j")
    return fig


def head_view_lines(att, tokens: Sequence[str], title: str, ncols: int = 6):
    """bertviz's head view in matplotlib for one layer's (A, T, T) weights: per head, a line from
    each query (left) to each key (right), its opacity the weight. Returns the Figure."""
    att = as_numpy(att)
    n_heads, n = att.shape[0], len(tokens)
    if att.ndim != 3 or att.shape[1:] != (n, n):
        raise ValueError(f"att must be (A, T, T) with T = {n} tokens, got shape {att.shape}")
    nrows = math.ceil(n_heads / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 0.24 * n * nrows + 0.6), squeeze=False)
    y = -np.arange(n)
    for h, ax in enumerate(axes.flat):
        ax.axis("off")
        if h >= n_heads:
            continue
        colour = HEAD_COLOURS[h % len(HEAD_COLOURS)]
        segments = [[(0, y[i]), (1, y[j])] for i in range(n) for j in range(n)]
        colours = [(*colour, float(att[h, i, j])) for i in range(n) for j in range(n)]
        ax.add_collection(LineCollection(segments, colors=colours, linewidths=1.5))
        for i, token in enumerate(tokens):
            ax.text(-0.04, y[i], token, ha="right", va="center", fontsize=7)
            ax.text(1.04, y[i], token, ha="left", va="center", fontsize=7)
        ax.set_xlim(-0.75, 1.75)
        ax.set_ylim(-n + 0.5, 0.5)
        ax.set_title(f"head {h}", color=colour)
    fig.suptitle(title)
    return fig


# Chapter 6: which axis LayerNorm and BatchNorm normalise


def axis_statistics(t) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Of a (..., H) tensor: each token's mean and population std over its features, then each
    feature's over the tokens."""
    flat = torch.as_tensor(t).reshape(-1, torch.as_tensor(t).shape[-1])
    return flat.mean(1), flat.std(1, unbiased=False), flat.mean(0), flat.std(0, unbiased=False)


def two_decimals(x: float) -> float:
    """x rounded to 2 decimals, with -0.00 written as 0.00."""
    return round(float(x), 2) + 0.0


def normalisation_axes(panels: Mapping[str, torch.Tensor], axes=None):
    """Tensors of one (B, T, H) shape side by side, tokens as rows, every value in its cell, with
    each row's and each column's mean and std: LayerNorm makes the rows' 0 and 1, BatchNorm the
    columns'. Returns the Figure."""
    shapes = {tuple(t.shape) for t in panels.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 3:
        raise ValueError(f"expected tensors of one (B, T, H) shape, got {sorted(shapes)}")
    B, T, H = next(iter(shapes))
    if axes is None:
        fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2))
    axes = np.atleast_1d(axes)
    labels = [f"seq {b}, tok {t}" for b in range(B) for t in range(T)]
    for ax, (name, t) in zip(axes, panels.items()):
        flat = t.detach().reshape(-1, H)
        tok_mean, tok_std, feat_mean, feat_std = axis_statistics(flat)
        top = float(flat.abs().max())
        ax.imshow(flat.numpy(), cmap="coolwarm", vmin=-top, vmax=top, aspect="auto")
        for (r, c), value in np.ndenumerate(flat.numpy()):
            ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=9)
        for r in range(B * T):
            row = f"{two_decimals(tok_mean[r]):+.2f} / {tok_std[r]:.2f}"
            ax.text(H - 0.4, r, row, va="center", fontsize=8, color="dimgray")
        for c in range(H):
            column = f"{two_decimals(feat_mean[c]):+.2f}\n{feat_std[c]:.2f}"
            ax.text(c, B * T, column, ha="center", va="center", fontsize=8, color="dimgray")
        ax.set_xticks(range(H), [f"feature {j}" for j in range(H)], fontsize=8)
        ax.xaxis.tick_top()
        ax.set_yticks(range(B * T), labels if ax is axes[0] else [], fontsize=8)
        ax.set_title(name, pad=22)
    fig = axes[0].figure
    note = "right of each row: mean / std over its features;  under each column: mean and std over the tokens"
    fig.text(0.5, -0.04, note, ha="center", fontsize=9, color="dimgray")
    return fig


# Chapter 6b: the whole Transformer, encoder beside decoder (Figure 1 of Vaswani et al. 2017)

# the fills of the Transformer diagram's boxes, by kind of box
# fmt: off
TRANSFORMER_FILLS = {"attention": "#dbe9f6", "cross-attention": "#f6dbe9", "add & norm": "#eeeeee",
                     "feed-forward": "#fde0c5", "embedding": EMBEDDING_YELLOW[0], "output": "#e6f2e6"}
CROSS_ATTENTION = "Multi-Head Attention\n(encoder-decoder attention)"
# one layer of each stack, its sub-layers bottom to top: (label, kind of box)
ENCODER_SUBLAYERS = [("Multi-Head Attention", "attention"),        ("Add & Norm", "add & norm"),
                     ("Feed Forward", "feed-forward"),             ("Add & Norm", "add & norm")]
DECODER_SUBLAYERS = [("Masked Multi-Head Attention", "attention"), ("Add & Norm", "add & norm"),
                     (CROSS_ATTENTION, "cross-attention"),         ("Add & Norm", "add & norm"),
                     ("Feed Forward", "feed-forward"),             ("Add & Norm", "add & norm")]
# fmt: on
# the size of a sub-layer's box, and the distance from one box's bottom to the next one's
SUBLAYER_WIDTH, SUBLAYER_HEIGHT, SUBLAYER_STEP = 3.0, 0.55, 0.9


def path_arrow(ax, points: Sequence[tuple[float, float]], color: str = "#555555", lw: float = 1.0) -> FancyArrowPatch:
    """An arrow along the polyline through `points`, its head at the last one."""
    arrow = FancyArrowPatch(
        path=Path(points), arrowstyle="-|>", mutation_scale=10, color=color, lw=lw, capstyle="butt", joinstyle="miter"
    )
    ax.add_patch(arrow)
    return arrow


def transformer_stack_column(ax, x: float, y0: float, sublayers, residual_side: int) -> list[float]:
    """One stack centred on x: its sub-layers from y0 up, residual connections into each Add &
    Norm on side `residual_side` (-1 left, +1 right), the frame of the N layers. Returns the y of
    each box's bottom."""
    w, h, step = SUBLAYER_WIDTH, SUBLAYER_HEIGHT, SUBLAYER_STEP
    bottoms = [y0 + k * step for k in range(len(sublayers))]
    top = bottoms[-1] + h
    frame = FancyBboxPatch(
        (x - w / 2 - 0.35, y0 - 0.35), w + 0.7, top - y0 + 0.6, boxstyle="round,pad=0.05", fc="none", ec="#999999"
    )
    ax.add_patch(frame)
    side = x + residual_side * (w / 2 + 0.18)
    for k, ((label, kind), y) in enumerate(zip(sublayers, bottoms)):
        recipe_box(ax, (x - w / 2, y), w, h, label, TRANSFORMER_FILLS[kind], fs=8.5 if "\n" in label else 9)
        if k:
            recipe_arrow(ax, (x, y - step + h), (x, y))
        if kind == "add & norm":  # from just below the sub-layer underneath, around it, into this box
            branch = y - step - (step - h) / 2
            edge = x + residual_side * w / 2
            path_arrow(ax, [(x, branch), (side, branch), (side, y + h / 2), (edge, y + h / 2)])
    return bottoms


def transformer_diagram(ax=None):
    """The encoder-decoder Transformer as Figure 1 of Vaswani et al. (2017) lays it out, the
    encoder's output M feeding every decoder layer's cross-attention, and the half BERT keeps (the
    encoder) shaded."""
    ax = new_axes(ax, (8.4, 8.8))
    ax.set_xlim(0, 10.9)
    ax.set_ylim(-0.3, 11.2)
    ax.axis("off")
    w, h = SUBLAYER_WIDTH, SUBLAYER_HEIGHT
    enc_x, dec_x, y0 = 2.85, 8.2, 3.0
    shade = to_rgba(TRANSFORMER_BLUE, 0.1)  # BERT's half
    bert = FancyBboxPatch((0.2, -0.2), 4.85, 8.25, boxstyle="round,pad=0.05", fc=shade, ec=TRANSFORMER_BLUE, ls="--")
    ax.add_patch(bert)
    text = "BERT keeps this half: the encoder"
    ax.text(2.625, 7.8, text, ha="center", va="center", fontsize=10, weight="bold", color=TRANSFORMER_BLUE)
    for x, name, inputs, side in (
        (enc_x, "Input Embedding", "Inputs\n(source: je suis étudiant)", -1),
        (dec_x, "Output Embedding", "Outputs (shifted right)\n(target: [BOS] i am a student)", +1),
    ):
        ax.text(x, 0.05, inputs, ha="center", va="center", fontsize=8.5)
        recipe_box(ax, (x - w / 2, 0.6), w, h, name, TRANSFORMER_FILLS["embedding"])
        recipe_arrow(ax, (x, 0.3), (x, 0.6))
        ax.text(x, 1.75, "+", ha="center", va="center", fontsize=11, bbox=dict(boxstyle="circle,pad=0.15", fc="white"))
        align = "right" if side < 0 else "left"  # outside the columns, as in the paper
        ax.text(x + side * 0.35, 1.75, "Positional\nEncoding", ha=align, va="center", fontsize=8.5)
        recipe_arrow(ax, (x, 0.6 + h), (x, 1.55))
        recipe_arrow(ax, (x, 1.95), (x, y0))
    enc = transformer_stack_column(ax, enc_x, y0, ENCODER_SUBLAYERS, residual_side=-1)
    dec = transformer_stack_column(ax, dec_x, y0, DECODER_SUBLAYERS, residual_side=+1)
    ax.text(enc_x - w / 2 - 0.5, (y0 + enc[-1] + h) / 2, "N×", ha="right", va="center", fontsize=12)
    ax.text(dec_x + w / 2 + 0.5, (y0 + dec[-1] + h) / 2, "N×", ha="left", va="center", fontsize=12)
    # the encoder's output M, out of the top of its stack into every decoder layer's cross-attention
    cross = dec[[label for label, _ in DECODER_SUBLAYERS].index(CROSS_ATTENTION)]
    enc_top, gap_x, out_y = enc[-1] + h, 5.95, enc[-1] + h + 0.55
    points = [(enc_x, enc_top), (enc_x, out_y), (gap_x, out_y), (gap_x, cross + h / 2), (dec_x - w / 2, cross + h / 2)]
    path_arrow(ax, points, color=TRANSFORMER_BLUE, lw=2)
    text = "encoder output M, read by\nevery decoder layer"
    ax.text(enc_x + 0.9, out_y + 0.08, text, ha="center", va="bottom", fontsize=8.5, color=TRANSFORMER_BLUE)
    ax.text(gap_x + 0.12, cross + h / 2 + 0.12, "K, V", ha="left", va="bottom", fontsize=8, color=TRANSFORMER_BLUE)
    ax.text(dec_x - 0.1, cross - 0.17, "Q", ha="right", va="center", fontsize=8)
    # linear and softmax over the target vocabulary
    linear_y = dec[-1] + h + 0.55
    recipe_box(ax, (dec_x - w / 2, linear_y), w, h, "Linear", TRANSFORMER_FILLS["output"])
    recipe_box(ax, (dec_x - w / 2, linear_y + 0.9), w, h, "Softmax", TRANSFORMER_FILLS["output"])
    recipe_arrow(ax, (dec_x, dec[-1] + h), (dec_x, linear_y))
    recipe_arrow(ax, (dec_x, linear_y + h), (dec_x, linear_y + 0.9))
    recipe_arrow(ax, (dec_x, linear_y + 0.9 + h), (dec_x, linear_y + 1.75))
    ax.text(dec_x, linear_y + 1.9, "Output Probabilities", ha="center", va="center", fontsize=9)
    ax.text(dec_x, 10.9, "the decoder: BERT drops it", ha="center", va="center", fontsize=10, color="#777777")
    return ax


# Chapter 7: where the parameters sit


def parameters_by_block(config: BertConfig) -> tuple[list[str], dict[str, list[int]]]:
    """A BertModel's parameters in closed form: the blocks (embeddings, layers, pooler) and each
    group of PARAMETER_GROUP_COLOURS's count in every block."""
    H, I, L = config.hidden_size, config.intermediate_size, config.num_layers
    P, S = config.max_position_embeddings, config.type_vocab_size
    blocks = ["embeddings"] + [f"layer {i + 1}" for i in range(L)] + ["pooler"]
    nothing = [0] * L
    per_block = {
        "token embeddings": [config.vocab_size * H] + nothing + [0],
        "position + segment embeddings": [(P + S) * H] + nothing + [0],
        "attention": [0] + [4 * H * H + 4 * H] * L + [0],
        "feed-forward": [0] + [2 * H * I + I + H] * L + [0],
        "LayerNorm": [2 * H] + [4 * H] * L + [0],
        "pooler": [0] + nothing + [H * H + H],
    }
    return blocks, per_block


def parameter_breakdown(sizes: Mapping[str, Mapping[str, int]], config: BertConfig, name: str = "BERT-Base", axes=None):
    """Left: each model of `sizes` ({"base": {group: count}, ...}) as a bar stacked by group;
    right: `config`'s model block by block. Returns the Figure."""
    unknown = {g for groups in sizes.values() for g in groups} - set(PARAMETER_GROUP_COLOURS)
    if unknown:
        raise ValueError(f"unknown parameter groups {sorted(unknown)}; known: {list(PARAMETER_GROUP_COLOURS)}")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    ax1, ax2 = axes
    for k, preset in enumerate(sizes):
        left = 0
        for g, n in sizes[preset].items():
            ax1.barh(k, n / 1e6, left=left, color=PARAMETER_GROUP_COLOURS[g], label=g if k == 0 else None)
            left += n / 1e6
    ax1.set_yticks(range(len(sizes)), [f"BERT-{p.capitalize()}" for p in sizes])
    ax1.set_xlabel("parameters (millions)")
    ax1.set_title("whole model")
    blocks, per_block = parameters_by_block(config)
    bottom = [0.0] * len(blocks)
    for g, ns in per_block.items():
        ax2.bar(blocks, [n / 1e6 for n in ns], bottom=bottom, color=PARAMETER_GROUP_COLOURS[g])
        bottom = [b + n / 1e6 for b, n in zip(bottom, ns)]
    ax2.set_ylabel("parameters (millions)")
    ax2.set_title(f"{name}, block by block")
    ax2.tick_params(axis="x", rotation=60)
    fig = ax1.figure
    fig.legend(loc="lower center", ncol=6, bbox_to_anchor=(0.5, -0.08), fontsize=9)
    return fig


# Chapter 8: the masked LM's draws and its measured rates


def masked_tokens_html(before: Sequence[str], after: Sequence[str], fate: Sequence[str]) -> str:
    """One masked sentence as HTML: each chosen token in its fate's colour, showing what the model
    sees, the original (the label) after it. fate[i] is "mask", "random", "same" or "" (not chosen)."""
    if not len(before) == len(after) == len(fate):
        raise ValueError(f"before, after and fate differ in length: {len(before)}, {len(after)}, {len(fate)}")
    cells = []
    for b_, a_, f in zip(before, after, fate):
        if f not in FATE_COLOURS:
            raise ValueError(f"unknown fate {f!r}; expected one of {list(FATE_COLOURS)}")
        if f:
            shown = a_ if f != "same" else b_
            cells.append(
                f'<span style="background:{FATE_COLOURS[f]};color:white;padding:1px 4px;border-radius:3px" '
                f'title="original: {b_}">{shown}</span>'
                + (f'<sub style="color:#555">{b_}</sub>' if f != "same" else "")
            )
        else:
            cells.append(b_)
    legend = (
        '<div style="font-size:85%;margin-top:4px">'
        '<span style="color:#e31a1c">&#9632; [MASK]</span> '
        '<span style="color:#ff7f00">&#9632; random token</span> '
        '<span style="color:#33a02c">&#9632; chosen but unchanged</span> '
        "(small grey text: the original token, the label)</div>"
    )
    return '<div style="line-height:2.0;font-family:monospace">' + " ".join(cells) + "</div>" + legend


def masking_draws(draws: Sequence[tuple[Sequence[str], Sequence[str], Sequence[str]]], seeds: Sequence[int], ax=None):
    """Several maskings of one sentence, one column per draw (tokens before, after, fate per
    token), a chosen token in its fate's colour."""
    if len(draws) != len(seeds) or not draws:
        raise ValueError(f"one seed per draw: {len(draws)} draws, {len(seeds)} seeds")
    tokens = list(draws[0][0])
    ax = new_axes(ax, (9, 0.24 * (len(tokens) - 2) + 1.4))
    for col, (before, after, fate) in enumerate(draws):
        for row, (b_, a_, f) in enumerate(zip(before, after, fate)):
            shown = b_ if f in ("", "same") else a_
            if f:
                ax.add_patch(plt.Rectangle((col - 0.48, row - 0.45), 0.96, 0.9, color=FATE_COLOURS[f], alpha=0.85))
            ax.text(col, row, shown, ha="center", va="center", fontsize=8, color="white" if f else "black")
    ax.set_xlim(-0.6, len(seeds) - 0.4)
    ax.set_ylim(len(tokens) - 0.5, -0.5)
    ax.set_xticks(range(len(seeds)), [f"draw {s}" for s in seeds], fontsize=8)
    ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=FATE_COLOURS[k]) for k in FATE_NAMES]
    ax.legend(handles, list(FATE_NAMES.values()), loc="upper center", bbox_to_anchor=(0.5, -0.04), ncol=3, fontsize=9)
    return ax


def masking_rates(n_real: int, n_chosen: int, share: Mapping[str, float], axes=None):
    """The masked LM's measured rates against the paper's: the share of real tokens chosen (15%),
    and `share` of the chosen ([MASK], random, unchanged; fractions) against 80 / 10 / 10. Returns
    the Figure."""
    if len(share) != 3 or n_real <= 0:
        raise ValueError("share must hold three fractions ([MASK], random, unchanged) and n_real must be positive")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), gridspec_kw={"width_ratios": [1, 2.2]})
    ax1, ax2 = axes
    chosen = 100 * n_chosen / n_real
    ax1.bar(["chosen"], [chosen], color="#1f78b4")
    ax1.axhline(15, color="black", ls="--", lw=1)
    ax1.text(0, 15.4, f"{chosen:.2f}% (paper 15%)", ha="center", fontsize=9)
    ax1.set_ylim(0, 18)
    ax1.set_ylabel("% of real tokens")
    names = list(share)
    colours = [FATE_COLOURS[f] for f in ("mask", "random", "same")]
    ax2.bar(names, [100 * share[k] for k in names], color=colours)
    for x, (name, target) in enumerate(zip(names, [80, 10, 10])):
        ax2.hlines(target, x - 0.4, x + 0.4, color="black", ls="--", lw=1)
        ax2.text(x, 100 * share[name] + 2, f"{100 * share[name]:.1f}% (paper {target}%)", ha="center", fontsize=9)
    ax2.set_ylim(0, 95)
    ax2.set_ylabel("% of chosen tokens")
    return ax1.figure
