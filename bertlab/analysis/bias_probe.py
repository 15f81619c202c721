"""A template probe of the gender associations a masked LM has learned (chapter 18).

Template pairs differ only in a gendered subject ("the man / the woman worked as a [MASK] .").
Each single-piece word's P(word | template) is compared across a pair by its ratio, averaged on
a log scale and divided by the occupation list's *tilt* (its mean log ratio in that pair), much as
Kurita et al. (2019) divide by a prior. Controls ("actress", "king") say whether the probe sees
gender at all; if one leans against its meaning, `reading_text` ranks no occupation.

    probe = run_probe(model, tokenizer, PAIRS, OCCUPATIONS, CONTROLS)   # CONTROLS: {word: "female"}
    probe.leans["nurse"].relative, leans_table(probe), reading_text(probe, k=10)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bertlab.analysis.fill_mask import fill_mask
from bertlab.prose import count, number, verb_agreeing

# template -> {piece: (probability at the [MASK], rank from 1 in the whole vocabulary)}
Distributions = dict[str, dict[str, tuple[float, int]]]
Pair = tuple[str, str]  # (template with the male subject, the same with the female subject)


@dataclass(frozen=True)
class Lean:
    """One probed word. `kind`: "occupation" or a control's gender; `ratio`: the geometric mean of
    P(male) / P(female) over the pairs; `relative`: the same over the tilt (above 1: leans male);
    `agree`: pairs on the same side of the tilt as on average; `best_rank`: in any template."""

    kind: str
    p_male: float
    p_female: float
    ratio: float
    relative: float
    agree: int
    best_rank: int


@dataclass
class BiasProbe:
    """The probe's result: each single-piece word's `Lean` (occupations first), the tilt per pair,
    and the words `dropped` for being several pieces."""

    pairs: list[Pair]
    dist: Distributions
    leans: dict[str, Lean]
    tilt: np.ndarray  # (pairs,)
    dropped: list[str]

    def top(self, template: str, k: int = 8) -> list[tuple[str, float]]:
        """The k most probable pieces after `template`, with their probabilities."""
        ranked = sorted(self.dist[template].items(), key=lambda kv: kv[1][1])[:k]
        return [(piece, prob) for piece, (prob, _) in ranked]

    @property
    def occupations(self) -> list[str]:
        return [w for w, s in self.leans.items() if s.kind == "occupation"]

    @property
    def controls(self) -> list[str]:
        return [w for w, s in self.leans.items() if s.kind != "occupation"]


def distributions(model, tokenizer, templates: Sequence[str]) -> Distributions:
    """Every template's full distribution at its [MASK]: {piece: (probability, rank from 1)}."""
    dist = {}
    for template in dict.fromkeys(templates):
        ranked = fill_mask(model, tokenizer, template, k=tokenizer.vocab_size)[0]
        dist[template] = {piece: (prob, r) for r, (piece, prob) in enumerate(ranked, 1)}
    return dist


def leans(
    dist: Distributions, pairs: Sequence[Pair], words: Sequence[str], controls: dict[str, str]
) -> tuple[dict[str, Lean], np.ndarray]:
    """Each word's `Lean` from the templates' probabilities, and the occupations' tilt per pair.
    No model: the arithmetic can be checked by hand."""
    log_ratio = np.array([[math.log(dist[m][w][0] / dist[f][w][0]) for m, f in pairs] for w in words])
    is_occupation = np.array([w not in controls for w in words])
    if not is_occupation.any():
        raise ValueError("no occupation among the words: the tilt is the occupations' mean lean")
    tilt = log_ratio[is_occupation].mean(0)  # (pairs,): the whole occupation list's lean
    relative = log_ratio - tilt  # each word against its list, pair by pair
    out = {
        w: Lean(
            kind=controls.get(w, "occupation"),
            p_male=float(np.mean([dist[m][w][0] for m, _ in pairs])),
            p_female=float(np.mean([dist[f][w][0] for _, f in pairs])),
            ratio=math.exp(lr.mean()),
            relative=math.exp(rel.mean()),
            agree=int((np.sign(rel) == np.sign(rel.mean())).sum()),
            best_rank=min(dist[t][w][1] for pair in pairs for t in pair),
        )
        for w, lr, rel in zip(words, log_ratio, relative)
    }
    return out, tilt


def run_probe(
    model, tokenizer, pairs: Sequence[Pair], occupations: Sequence[str], controls: dict[str, str]
) -> BiasProbe:
    """The probe on a masked LM, for the words that are one WordPiece each."""
    asked = list(occupations) + list(controls)
    words = [w for w in asked if len(tokenizer.tokenize(w)) == 1]
    dist = distributions(model, tokenizer, [t for pair in pairs for t in pair])
    found, tilt = leans(dist, pairs, words, controls)
    return BiasProbe(list(pairs), dist, found, tilt, sorted(set(asked) - set(words)))


def leans_table(probe: BiasProbe, ranked: bool = True) -> str:
    """Every probed word as a Markdown table, most male-leaning first (ranked=False: as asked)."""
    lines = [
        "| word | kind | mean P, male subject | mean P, female subject | ratio male / female "
        "| relative to the tilt | pairs that agree | best rank |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = sorted(probe.leans, key=lambda w: -probe.leans[w].relative) if ranked else list(probe.leans)
    for w in order:
        s = probe.leans[w]
        kind = "occupation" if s.kind == "occupation" else f"control ({s.kind})"
        lines.append(
            f"| *{w}* | {kind} | {s.p_male:.5f} | {s.p_female:.5f} | {s.ratio:.2f} | {s.relative:.2f} "
            f"| {s.agree} of {len(probe.pairs)} | {s.best_rank:,} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Reading:
    """What the chapter's reading quotes. `first`: the 3 first guesses after each template of the
    first pair; `in_top`: probed occupations among the templates' top-k guesses; `mass`: the
    occupations' total probability after the first pair; `whole`: the mean tilt as a ratio;
    `right`/`wrong`: controls that lean / do not lean as their meaning says; `steady`: occupations
    on one side of the tilt in at least `min_agree` pairs, split into `female` and `male`."""

    first: tuple[list[str], list[str]]
    in_top: int
    best: str
    mass: tuple[float, float]
    whole: float
    right: list[str]
    wrong: list[str]
    min_agree: int
    steady: list[str]
    female: list[str]
    male: list[str]


def reading(probe: BiasProbe, k: int = 10) -> Reading:
    """The numbers behind a reading of the probe (see Reading)."""
    occ, lean = probe.occupations, probe.leans
    templates = dict.fromkeys(t for pair in probe.pairs for t in pair)
    in_top = sum(p in occ for t in templates for p, _ in probe.top(t, k))
    male_t, female_t = probe.pairs[0]
    right = [w for w in probe.controls if (lean[w].relative > 1) == (lean[w].kind == "male")]
    min_agree = len(probe.pairs) - 1
    steady = [w for w in occ if lean[w].agree >= min_agree]
    return Reading(
        first=([p for p, _ in probe.top(male_t, 3)], [p for p, _ in probe.top(female_t, 3)]),
        in_top=in_top,
        best=min(occ, key=lambda w: lean[w].best_rank),
        mass=tuple(sum(probe.dist[t][w][0] for w in occ) for t in (male_t, female_t)),
        whole=math.exp(probe.tilt.mean()),
        right=right,
        wrong=[w for w in probe.controls if w not in right],
        min_agree=min_agree,
        steady=steady,
        female=sorted((w for w in steady if lean[w].relative < 1), key=lambda w: lean[w].relative),
        male=sorted((w for w in steady if lean[w].relative > 1), key=lambda w: -lean[w].relative),
    )


def trusted(probe: BiasProbe) -> bool:
    """Whether there are controls and each leans as its meaning says: only then do the
    occupations' ratios read as gender rather than noise."""
    return bool(probe.controls) and not reading(probe).wrong


def _named(probe: BiasProbe, words: Sequence[str], most: int = 5) -> str:
    return ", ".join(f"*{w}* ({probe.leans[w].relative:.2f})" for w in words[:most])


def reading_text(probe: BiasProbe, k: int = 10) -> str:
    """The chapter's reading of the probe as Markdown paragraphs from its numbers; unless `trusted`,
    it says why instead of ranking the occupations."""
    r, n = reading(probe, k), len(probe.pairs)
    occupations, controls = probe.occupations, probe.controls
    m0, f0 = probe.pairs[0]
    best = probe.leans[r.best].best_rank
    text = [
        f"**What the model expects.** Its first guesses after `{m0}` are "
        f"*{'*, *'.join(r.first[0])}*, and after `{f0}` *{'*, *'.join(r.first[1])}*. "
        f"Across the {number(2 * n)} templates, {number(r.in_top)} of the {number(2 * n * k)} top-{k} "
        f"guesses are occupations from the list; the best-ranked occupation anywhere "
        f"is *{r.best}*, at rank {best:,}. Together the "
        f"{number(len(occupations))} occupations get {r.mass[0]:.1%} of the probability "
        f"after `{m0}` and {r.mass[1]:.1%} after `{f0}`.",
        f"**The tilt of the whole list.** Averaged on a log scale over words and "
        f"pairs, an occupation is {r.whole:.2f} times as probable after the male "
        f"subject as after the female one. The ratios below are relative to that tilt "
        f"(in brackets; above 1: leans male).",
    ]
    if not controls:
        text.append(
            "**No controls, no ranking.** Without words whose gender is part of their meaning "
            "there is no way to tell whether the probe sees gender at all, so the occupations are "
            "not ranked."
        )
        return "\n\n".join(text)
    text.append(
        f"**Does the probe see gender at all?** Of the {count(len(controls), 'control word')}, "
        f"{number(len(r.right)) if r.right else 'none'} {verb_agreeing(len(r.right) or 1, 'leans')} the way "
        f"{'its' if len(controls) == 1 else 'their'} meaning says"
        + (f": {_named(probe, r.right, 6)}" if r.right else "")
        + (f"; {_named(probe, r.wrong, 6)} {verb_agreeing(len(r.wrong), 'does')} not." if r.wrong else ".")
    )
    if r.wrong:
        median = int(np.median([probe.leans[w].best_rank for w in occupations]))
        text.append(
            f"**So this probe is not trustworthy on this model, and it ranks no occupation.** "
            f"A word whose very meaning is gendered leaning the wrong way shows that the differences "
            f"the probe measures here are not only gender. The model is small, and most occupations lie "
            f"well down its ranking (half of them never rank above {median:,} in any template), where "
            f"the ratio of two small probabilities moves with the wording of the template as much as "
            f"with its subject. A ranking of the {number(len(occupations))} occupations would read "
            f"that noise as stereotype."
        )
        return "\n\n".join(text)
    text.append(
        f"**Occupations.** {number(len(r.steady))} of the {number(len(occupations))} occupations "
        f"fall on the same side of the tilt in at least {number(r.min_agree)} of the {number(n)} "
        f"pairs. Of these, {number(len(r.female))} lean toward the female subject"
        + (f", most of all {_named(probe, r.female)}" if r.female else "")
        + f", and {number(len(r.male))} toward the male subject"
        + (f", most of all {_named(probe, r.male)}." if r.male else ".")
    )
    return "\n\n".join(text)
