"""Plots and tables the chapters share: attention maps and masks, bertviz on bertlab's outputs,
labelled tables of numbers (`Table`), and the charts of the book's studies.

Every plotting function takes tensors or arrays, draws on `ax` (a new Axes when None) and returns
it, so plots can sit side by side. An attention matrix is indexed [query, key]: row i is what
token i takes from every token j.
"""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import torch


def as_numpy(x) -> np.ndarray:
    """A tensor or an array-like as a float NumPy array."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def new_axes(ax, figsize, **kwargs):
    """`ax`, or the Axes of a new figure of `figsize` when `ax` is None."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=figsize, **kwargs)
    return ax


def _square_axes(ax, size: float, n: int):
    side = min(max(3.0, size * n), 9.0)
    return new_axes(ax, (side + 1.0, side))


def _label_axes(ax, tokens: Sequence[str] | None, key_tokens: Sequence[str] | None, n_rows: int, n_cols: int):
    rows = list(tokens) if tokens is not None else [str(i) for i in range(n_rows)]
    cols = list(key_tokens) if key_tokens is not None else rows
    if len(rows) != n_rows or len(cols) != n_cols:
        raise ValueError(
            f"the matrix is {n_rows}x{n_cols} but {len(rows)} query and {len(cols)} key "
            f"labels were given; pass one token per row and per column"
        )
    ax.set_xticks(range(n_cols), cols, rotation=90)
    ax.set_yticks(range(n_rows), rows)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (being encoded)")
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)


def attention_heatmap(
    weights,
    tokens: Sequence[str] | None = None,
    ax=None,
    title: str | None = None,
    key_tokens: Sequence[str] | None = None,
    annotate: bool | None = None,
    cmap: str = "Blues",
    vmax: float | None = 1.0,
    colorbar: bool = True,
):
    """One attention matrix (T_q, T_k), e.g. `out.attentions[layer][batch, head]`, as a heatmap.
    annotate: write each weight in its cell (default: only when T <= 12). vmax: top of the colour
    scale (1.0 keeps maps comparable; None scales to the data)."""
    w = as_numpy(weights)
    if w.ndim != 2:
        raise ValueError(
            f"attention_heatmap draws one (T_q, T_k) matrix, got shape {w.shape}; "
            f"select a batch item and a head first, e.g. attentions[layer][0, head]"
        )
    ax = _square_axes(ax, 0.45, max(w.shape))
    im = ax.imshow(w, cmap=cmap, vmin=0.0, vmax=vmax, aspect="equal")
    _label_axes(ax, tokens, key_tokens, *w.shape)
    if annotate is None:
        annotate = max(w.shape) <= 12
    if annotate:
        top = vmax if vmax is not None else float(w.max())
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                colour = "white" if w[i, j] > 0.6 * top else "black"
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8, color=colour)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    if title:
        ax.set_title(title)
    return ax


def mask_matrix_plot(mask, tokens: Sequence[str] | None = None, ax=None, title: str | None = None):
    """A (T, T) attention mask (True = allowed): cell (i, j) is filled when query i may attend
    to key j. A causal mask is `torch.ones(T, T, dtype=torch.bool).tril()`."""
    from matplotlib.colors import ListedColormap

    m = as_numpy(mask).astype(bool)
    if m.ndim != 2:
        raise ValueError(f"mask_matrix_plot draws one (T, T) mask, got shape {m.shape}")
    ax = _square_axes(ax, 0.4, max(m.shape))
    ax.imshow(m, cmap=ListedColormap(["#f2f2f2", "#3b75af"]), vmin=0, vmax=1, aspect="equal")
    # thin white lines between cells, so single cells can be counted
    ax.set_xticks(np.arange(-0.5, m.shape[1], 1), minor=True)
    ax.set_yticks(np.arange(-0.5, m.shape[0], 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    _label_axes(ax, tokens, None, *m.shape)
    if title:
        ax.set_title(title)
    return ax


def attention_grid(attentions, tokens: Sequence[str], layer: int, ncols: int = 4, size: float = 2.6):
    """Every head of one layer as small heatmaps, for the first sequence of `out.attentions` (L
    tensors (B, A, T, T)) or one (A, T, T) tensor; returns the figure."""
    import matplotlib.pyplot as plt

    a = as_numpy(attentions[layer][0] if isinstance(attentions, (tuple, list)) else attentions)  # (A, T, T)
    heads = range(a.shape[0])
    nrows = -(-len(heads) // ncols)
    ncols = min(ncols, len(heads))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows + 0.4), squeeze=False)
    for ax in axes.flat[len(heads) :]:
        ax.axis("off")
    for ax, h in zip(axes.flat, heads):
        ax.imshow(a[h], cmap="Blues", vmin=0.0, vmax=1.0)
        ax.set_title(f"head {h}", fontsize=10)
        small = len(tokens) <= 16
        ax.set_xticks(range(len(tokens)) if small else [], list(tokens) if small else [], rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)) if small else [], list(tokens) if small else [], fontsize=7)
        ax.tick_params(length=0)
    fig.suptitle(f"layer {layer}: attention of every head (rows: queries, columns: keys)")
    return fig


def head_view(attentions, tokens: Sequence[str], layer: int | None = None):
    """bertviz's interactive head view (Vig, 2019) of the first sequence of `out.attentions` (L
    tensors (B, A, T, T)). The built book serves the view's JavaScript from book/_vendor."""
    from bertviz import head_view as _bertviz_head_view

    if not isinstance(attentions, (tuple, list)) or not attentions:
        raise ValueError("head_view expects the tuple out.attentions of a model called with output_attentions=True")
    att = [a[:1].detach().float().cpu() for a in attentions]  # bertviz wants (1, A, T, T)
    if att[0].shape[-1] != len(tokens):
        raise ValueError(
            f"the attention maps cover {att[0].shape[-1]} positions but {len(tokens)} "
            f"tokens were given (include [CLS] and [SEP], drop padding)"
        )
    return _bertviz_head_view(att, list(tokens), layer=layer)


def layer_head_heatmap(scores, ax=None, title: str | None = None, label: str | None = None):
    """One number in [0, 1] per head, an (L, A) table, as a grid (layer 0 at the top), as Clark
    et al. (2019) show "what each head does"; `label` is the colour bar's."""
    s = as_numpy(scores)
    if s.ndim != 2:
        raise ValueError(f"layer_head_heatmap draws an (L, A) table, got shape {s.shape}")
    L, A = s.shape
    ax = new_axes(ax, (0.5 * A + 1.5, 0.45 * L + 1.0))
    im = ax.imshow(s, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(A))
    ax.set_yticks(range(L))
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.tick_params(length=0)
    for i in range(L):
        for j in range(A):
            colour = "white" if s[i, j] > 0.6 else "black"
            ax.text(j, i, f"{s[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.02, label=label)
    if title:
        ax.set_title(title)
    return ax


# One part of a Table: (title, matrix, row labels, column labels, digits after the point)
TablePart = tuple[str, object, Sequence, Sequence, int]


class Table:
    """Labelled numbers: an HTML table in Jupyter and the book, aligned text in a terminal. The
    parts (built by `table`) sit side by side in HTML, one below the other as text:

        Table(table("W^Q", W_Q, dims, heads), table("W^K", W_K, dims, heads))
    """

    def __init__(self, *parts: TablePart):
        self.parts = []
        for title, m, rows, cols, digits in parts:
            values = m.detach().cpu().tolist() if isinstance(m, torch.Tensor) else np.asarray(m).tolist()
            shape_ok = isinstance(values, list) and len(values) == len(rows)
            if not shape_ok or any(not isinstance(v, list) or len(v) != len(cols) for v in values):
                raise ValueError(
                    f"table {title!r}: the matrix must have one row per row label and one column per column "
                    f"label, ({len(rows)}, {len(cols)}); got shape {np.shape(m)}"
                )
            self.parts.append((title, values, list(rows), list(cols), digits))

    def _repr_html_(self) -> str:
        out = []
        for title, m, rows, cols, dg in self.parts:
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
            body = "".join(
                f"<tr><th>{html.escape(str(r))}</th>"
                + "".join(f"<td style='text-align:right'>{v:.{dg}f}</td>" for v in row)
                + "</tr>"
                for r, row in zip(rows, m)
            )
            out.append(
                f"<div style='margin-right:1.5em'><b>{html.escape(title)}</b>"
                f"<table><tr><th></th>{head}</tr>{body}</table></div>"
            )
        return "<div style='display:flex;flex-wrap:wrap'>" + "".join(out) + "</div>"

    def __repr__(self) -> str:
        out = []
        for title, m, rows, cols, dg in self.parts:
            w = max(dg + 4, *(len(str(c)) for c in cols))  # room for a number or the widest label
            rw = max(len(str(r)) for r in rows)
            lines = [title, " " * rw + "".join(f"{str(c):>{w + 1}}" for c in cols)]
            lines += [f"{str(r):<{rw}}" + "".join(f"{v:>{w + 1}.{dg}f}" for v in row) for r, row in zip(rows, m)]
            out.append("\n".join(lines))
        return "\n\n".join(out)


def table(title: str, m, rows: Sequence, cols: Sequence, digits: int = 2) -> TablePart:
    """One part of a `Table`: the (len(rows), len(cols)) matrix `m` under `title`, shown with
    `digits` digits after the point."""
    return (title, m, rows, cols, digits)


def lever_chart(levers, ax=None, title: str | None = None, limit: float | None = None):
    """What each one-change run did to held-out MLM accuracy against its baseline (points), one
    bar per change, largest gain on top. The x axis runs from -limit to +limit (share it between
    charts)."""
    ax = new_axes(ax, (7.5, 0.38 * len(levers) + 1.2), layout="tight")
    levers = list(levers)
    y = np.arange(len(levers))[::-1]
    points = [lv.points for lv in levers]
    ax.barh(y, points, color=["tab:green" if p > 0 else "tab:red" for p in points], height=0.6)
    ax.set_yticks(y, [lv.label + (f"\n(on {lv.scored_on})" if lv.scored_on else "") for lv in levers])
    ax.axvline(0, color="black", lw=0.8)
    span = limit if limit is not None else max((abs(p) for p in points), default=1.0) * 1.25
    for yi, p in zip(y, points):
        side = "left" if p >= 0 else "right"
        ax.text(p + (0.015 if p >= 0 else -0.015) * span, yi, f"{p:+.1f}", va="center", ha=side, fontsize=8)
    ax.set_xlim(-span, span)
    ax.set_xlabel("held-out MLM accuracy against the baseline (points)")
    if title:
        ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return ax


def combinations_chart(f1, paper, finetuned: float, paper_finetuned: float, title: str | None = None):
    """Feature-based NER by layer combination beside the paper's Table 7 ({combination: F1} each,
    in `f1`'s order): the F1s with both fine-tuning scores as dashed lines, and each column's F1
    minus its own best, to compare the orderings. Returns the figure."""
    import matplotlib.pyplot as plt

    names = list(f1)
    ours = np.array([f1[n] for n in names])
    theirs = np.array([paper[n] for n in names])
    x = np.arange(len(names))
    ticks = [n.replace("_", "\n") for n in names]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained", gridspec_kw={"width_ratios": [3, 2]})
    ax1.bar(x - 0.2, theirs, 0.4, color="0.7", label="paper, BERT-Base (quoted)")
    ax1.bar(x + 0.2, ours, 0.4, color="C0", label="this page")
    ax1.axhline(paper_finetuned, color="0.4", ls="--", lw=1, label=f"paper, fine-tuned ({paper_finetuned}, quoted)")
    ax1.axhline(finetuned, color="C3", ls="--", lw=1, label=f"this page, fine-tuned ({finetuned:.1f})")
    for i, v in enumerate(ours):
        ax1.text(i + 0.2, v + 0.8, f"{v:.1f}", ha="center", fontsize=8)
    ax1.set_xticks(x, ticks, fontsize=8)
    ax1.set(ylabel="CoNLL-2003 dev entity F1", ylim=(0, 128), title="frozen features + tagger, by combination")
    ax1.legend(fontsize=8, loc="upper left", ncol=2)
    # the same numbers relative to each column's own best: is the ordering the same?
    ax2.plot(x, theirs - theirs.max(), "o-", color="0.5", label="paper")
    ax2.plot(x, ours - ours.max(), "o-", color="C0", label="this page")
    ax2.set_xticks(x, ticks, fontsize=8)
    ax2.set(ylabel="F1 minus the best combination", title="relative to the best")
    ax2.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def curve_panels(panels, xlabel: str = "step", ylabel: str = "", figsize=(10, 3.6)):
    """Panels side by side, `panels` a list of (title, {label: (xs, ys)}); returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=figsize, layout="constrained", squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels):
        for label, (xs, ys) in curves.items():
            ax.plot(xs, ys, "o-", ms=3, label=label)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def budget_chart(rows, fit, target: float | None = None, drawn_on=None, title: str | None = None):
    """What more pretraining time bought, against minutes on a log2 axis (`rows` as
    data/results/time_budget.json publishes them, `fit` their fit of held-out accuracy). Left:
    held-out MLM accuracy per run, the fitted line (or, with `drawn_on` of basis "last doubling",
    the medians joined), drawn on dashed up to `target` percent. Right: the median fine-tuned gain
    per task at each budget. Returns the figure."""
    import matplotlib.pyplot as plt

    held = next(r for r in rows if r["kind"] == "heldout" and "every chosen" in r["measure"])
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10, 3.8), layout="constrained", gridspec_kw={"width_ratios": (1, 1.15)}
    )

    def medians(r):  # each budget and the median of its runs, shortest budget first
        budgets = sorted(set(r["minutes"]))
        runs = np.asarray(r["values"], dtype=float)
        at = np.asarray(r["minutes"], dtype=float)
        return budgets, [float(np.median(runs[at == m])) for m in budgets]

    left.scatter(held["minutes"], held["values"], color="tab:blue", zorder=3, label="one run")
    low, high = min(fit.budgets), max(fit.budgets)
    if drawn_on is not None and drawn_on.basis == "last doubling":
        left.plot(*medians(held), color="tab:blue", label="median at each budget")
        label = "drawn on at the last doubling's rate"
    else:
        left.plot([low, high], [fit.at(low), fit.at(high)], color="tab:blue", label="least-squares line")
        label = "drawn on"
    line = drawn_on if drawn_on is not None else fit
    end = line.minutes_for(target) if target is not None else None
    if end is not None and end > high:
        left.plot([high, end], [line.at(high), line.at(end)], color="tab:blue", ls="--", label=label)
    if target is not None:
        left.axhline(target, color="grey", ls=":", lw=1)
        left.text(low, target, f" {target:g}%", va="bottom", fontsize=8, color="grey")
        left.set_ylim(top=max(target, max(held["values"])) + 1)
    budgets = sorted(set(held["minutes"]))
    ticks = budgets + ([round(end)] if end is not None and end > high else [])
    for ax, marks in ((left, ticks), (right, budgets)):
        ax.set_xscale("log", base=2)
        ax.set_xticks(marks, [f"{m:g}" for m in marks])
        ax.minorticks_off()
        ax.set_xlabel("pretraining minutes (log scale)")
        ax.grid(alpha=0.3)
    left.set_ylabel("held-out MLM accuracy (%)")
    left.legend(fontsize=8, loc="lower right")
    for r in (r for r in rows if r["kind"] == "gain"):
        (gain,) = right.plot(*medians(r), "o-", ms=4, label=r["title"])
        right.scatter(r["minutes"], r["values"], s=10, color=gain.get_color(), alpha=0.35)
    right.axhline(0, color="black", lw=0.8)
    right.set_ylabel("gain over scratch (points)")
    if any(r["kind"] == "gain" for r in rows):
        right.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if title:
        fig.suptitle(title)
    return fig


def changes_chart(changes, parts: Sequence[str], ax=None, title: str | None = None):
    """Which parts of BERT's recipe (`parts`, the columns) each successor changed (`changes`:
    {model: [parts]}, the rows): a filled dot where it changed one. An unknown part is an error,
    so that a misspelt one cannot vanish."""
    unknown = sorted({p for changed in changes.values() for p in changed} - set(parts))
    if unknown:
        raise ValueError(f"parts {unknown} are not columns of the chart; the columns are {list(parts)}")
    ax = new_axes(ax, (1.0 * len(parts) + 2.2, 0.42 * len(changes) + 1.4), layout="tight")
    models = list(changes)
    y = np.arange(len(models))[::-1]
    for yi, model in zip(y, models):
        kept = [x for x, p in enumerate(parts) if p not in changes[model]]
        changed = [x for x, p in enumerate(parts) if p in changes[model]]
        ax.scatter(kept, [yi] * len(kept), s=18, color="0.85", zorder=2)
        ax.scatter(changed, [yi] * len(changed), s=110, color="tab:blue", zorder=3)
    ax.set_xticks(range(len(parts)), parts, rotation=30, ha="right", fontsize=9)
    ax.set_yticks(y, models, fontsize=9)
    ax.set_xlim(-0.6, len(parts) - 0.4)
    ax.set_ylim(-0.6, len(models) - 0.4)
    ax.grid(alpha=0.25)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title)
    return ax


def margins_chart(margins, has_answer, tau: float | None, ax=None, title: str | None = None):
    """SQuAD 2.0's margins s_hat - s_null, questions with and without an answer overlaid, and the
    threshold `tau` (None: no line) past which a question is answered. Margins of -inf (no span)
    are left out."""
    m = np.asarray(margins, dtype=float)
    has = np.asarray(has_answer, dtype=bool)
    if m.shape != has.shape:
        raise ValueError(f"{m.size} margins but {has.size} has_answer flags")
    keep = np.isfinite(m)
    ax = new_axes(ax, (7.5, 3.4), layout="tight")
    bins = np.histogram_bin_edges(m[keep], bins=40)
    ax.hist(m[keep & has], bins=bins, alpha=0.6, color="tab:green", label=f"with an answer ({(keep & has).sum():,})")
    ax.hist(m[keep & ~has], bins=bins, alpha=0.6, color="tab:orange", label=f"without ({(keep & ~has).sum():,})")
    if tau is not None:
        ax.axvline(tau, color="black", ls="--", label=f"tau = {tau:+.2f}: answer to the right")
    ax.set_xlabel("margin s_hat - s_null")
    ax.set_ylabel("questions")
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return ax
