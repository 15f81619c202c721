"""Fill in the blanks: a masked LM's top guesses at each [MASK] of a text.

    fill_mask(model, tokenizer, "the man went to the [MASK] .")   # [[("store", 0.21), ...]]

The probes a recorded run is judged by are drawn here too: held-out sentences with one whole word
(a single WordPiece of letters) replaced by [MASK], chosen by a seeded rule so that every run and
every checkpoint is asked the same questions. `fill_mask_along` asks them of a series of
checkpoints, to watch a model leave the "frequent words" plateau: at first every blank gets the
same few frequent pieces; later the guesses follow the context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from bertlab import checkpoint as ckpt
from bertlab.model import BertForPreTraining

# The paper's own masked-LM examples (Devlin et al. 2018, section 3.1 and appendix A.1).
PAPER_PROBES = [
    "the man went to the [MASK] . he bought a [MASK] of milk .",
    "my dog is [MASK] .",
]


@torch.no_grad()
def fill_mask(model, tokenizer, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
    """For each [MASK] in `text`, left to right, the k most probable pieces and their probabilities."""
    enc = tokenizer.encode(text, return_tensors="pt")
    where = (enc.input_ids[0] == tokenizer.mask_id).nonzero().flatten()
    if len(where) == 0:
        raise ValueError(f"no [MASK] in {text!r}: write [MASK] where the model should fill in a word")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    inputs = {name: t.to(device) for name, t in enc.model_inputs().items()}
    logits = model(**inputs, mlm_positions=where[None].to(device)).mlm_logits[0]  # (P, V)
    model.train(was_training)
    probs, top = logits.float().softmax(-1).topk(k)
    return [
        [(tokenizer.id_to_token(int(i)), float(p)) for i, p in zip(ti, pi)]
        for ti, pi in zip(top.tolist(), probs.tolist())
    ]


def probe_sentences(
    documents: Iterable[Any], tokenizer, n: int = 8, seed: int = 1, min_words: int = 10, max_words: int = 18
) -> list[dict[str, str]]:
    """n sentences of `documents` (each with a `.sentences` list) of min_words to max_words words,
    drawn with a seeded generator, each with one whole word of three or more letters replaced by
    [MASK]: [{"text": "... [MASK] ...", "answer": "word", "original": "..."}]."""
    rng = np.random.default_rng(seed)
    sentences = [s for d in documents for s in d.sentences if min_words <= len(s.split()) <= max_words]
    probes = []
    for i in rng.permutation(len(sentences)):
        pieces = tokenizer.encode(sentences[i]).tokens  # [CLS] ... [SEP]
        cands = [
            j
            for j in range(2, len(pieces) - 2)
            if pieces[j].isalpha()
            and len(pieces[j]) > 2
            and not pieces[j + 1].startswith("##")
            and not pieces[j].startswith("##")
        ]
        if not cands:
            continue
        j = int(rng.choice(cands))
        masked = pieces[1:j] + ["[MASK]"] + pieces[j + 1 : -1]
        probes.append({"text": " ".join(masked).replace(" ##", ""), "answer": pieces[j], "original": sentences[i]})
        if len(probes) == n:
            break
    return probes


def fill_mask_along(
    folders: Sequence[str | Path], tokenizer, texts: Sequence[str], k: int = 5, model_cls: type | None = None
) -> list[dict[str, Any]]:
    """Ask every model folder (checkpoints of one run, in order) to fill the same texts:
    [{"model": folder name, "fills": [[[(piece, prob), ...] per [MASK]] per text]}]."""
    out = []
    for folder in folders:
        model = ckpt.load_model(folder, model_cls or BertForPreTraining)
        out.append({"model": Path(folder).name, "fills": [fill_mask(model, tokenizer, t, k) for t in texts]})
    return out
