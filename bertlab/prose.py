"""Numbers in the sentences the chapters generate from their results, written as a reader expects:
whole numbers under ten as words ("three seeds", not "3 seed(s)"), the others with thousands
separators, and nouns and verbs that agree with their count.

    count(1, "seed")               # 'one seed'
    count(12, "epoch")             # '12 epochs'
    count(2, "layer", "keeps")     # 'two layers keep'  (a verb in its singular form agrees too)
    rate(0.0005)                   # '5e-4': a learning rate as papers write it
    and_list(["MRPC", "RTE", "QNLI"])  # 'MRPC, RTE and QNLI'
"""

from __future__ import annotations

from collections.abc import Sequence

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_IRREGULAR = {"epoch": "epochs", "child": "children", "person": "people", "analysis": "analyses", "index": "indices"}


def number(n: int) -> str:
    """A whole number for prose: words under ten, digits (with thousands separators) from ten on."""
    if isinstance(n, bool) or int(n) != n:
        raise TypeError(f"number() writes whole numbers, got {n!r}")
    n = int(n)
    return _WORDS[n] if 0 <= n < 10 else f"{n:,}"


def plural(noun: str) -> str:
    """The plural of an English noun (regular rules, a few irregular ones)."""
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def verb_agreeing(n: int, verb: str) -> str:
    """A present-tense verb, given in its singular form ("separates", "is"), agreeing with n things."""
    if n == 1:
        return verb
    if verb in ("is", "was", "has", "does"):
        return {"is": "are", "was": "were", "has": "have", "does": "do"}[verb]
    if verb.endswith("ies") and len(verb) > 3:
        return verb[:-3] + "y"
    if verb.endswith(("sses", "xes", "ches", "shes", "zes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") else verb


def count(n: int, noun: str, verb: str | None = None) -> str:
    """'one seed', 'three seeds', '1,250 steps'; with a verb (singular form), 'two layers keep'."""
    text = f"{number(n)} {noun if n == 1 else plural(noun)}"
    return f"{text} {verb_agreeing(n, verb)}" if verb else text


def and_list(items: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c': items joined as a sentence lists them."""
    items = list(items)
    if not items:
        raise ValueError("and_list needs at least one item")
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def rate(lr: float) -> str:
    """A learning rate as papers write it: '5e-4', '1.2e-3' (up to three significant figures);
    0.1 and above as a decimal."""
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not lr > 0:
        raise ValueError(f"rate() writes a positive learning rate, got {lr!r}")
    if lr >= 0.1:
        return f"{lr:g}"
    mantissa, exponent = f"{lr:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
