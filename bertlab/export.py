"""A bertlab model as a folder that Hugging Face `transformers` loads: the book's BERT leaves the book.

    python -m bertlab export-hf --model data/reference_run/model --out my-bert
    # then: AutoModelForMaskedLM.from_pretrained("my-bert"), pipeline("fill-mask", model="my-bert")

The folder holds config.json (`BertForMaskedLM`), model.safetensors (the encoder and the masked-LM
head under transformers' names), the vocabulary and the tokenizer's settings. A pre-LN or a
left-to-right model is refused with the reason: transformers' BERT would compute something else.
"""

from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import save_file

from bertlab import checkpoint as ckpt
from bertlab import hf
from bertlab.data.tokenizer import CLS, MASK, PAD, SEP, UNK, load_tokenizer_for
from bertlab.files import remove_dir, replace_dir, write_json
from bertlab.model import BertForPreTraining

# transformers' BertForPreTraining weights that its BertForMaskedLM does not have
_NOT_IN_MASKED_LM = ("bert.pooler.", "cls.seq_relationship.")


def exportable(model: BertForPreTraining) -> None:
    """Raise ValueError saying why, if transformers' BERT cannot represent `model`."""
    cfg = model.config
    if cfg.norm_position != "post":
        raise ValueError(
            "this model is pre-LN (LayerNorm before each sublayer, norm_position='pre'); transformers' BERT "
            "is post-LN, the paper's layer, so no transformers class computes what this model computes. "
            "Pretrain with --norm-position post to get a model that can be exported."
        )
    if cfg.causal:
        raise ValueError(
            "this model attends left to right (causal attention, the paper's 'LTR & No NSP' ablation); "
            "transformers' BERT attends in both directions and would compute something else with these "
            "weights. Only masked-LM models (--objective mlm) can be exported."
        )


def export_hf(model_folder: str | Path, out: str | Path) -> Path:
    """Write the bertlab pretraining model in `model_folder` (a run's final/ or a checkpoint) as a
    transformers folder `out` (replaced whole if it exists); returns `out`."""
    model_folder, out = Path(model_folder), Path(out)
    model = ckpt.load_model(model_folder, BertForPreTraining)
    exportable(model)
    tokenizer = load_tokenizer_for(model_folder)
    if tokenizer.vocab_size != model.config.vocab_size:
        raise ValueError(
            f"the tokenizer beside {model_folder} has {tokenizer.vocab_size} pieces but the model "
            f"{model.config.vocab_size}: the folder mixes two runs"
        )
    weights = {k: v.contiguous() for k, v in hf.to_hf_state_dict(model).items() if not k.startswith(_NOT_IN_MASKED_LM)}
    lowercase = bool(json.loads(tokenizer.backend.to_str()).get("normalizer", {}).get("lowercase", True))
    tmp = out.with_name(out.name + ".partial")
    if tmp.exists():  # left by an export that was interrupted
        remove_dir(tmp)
    tmp.mkdir(parents=True)
    save_file(weights, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    write_json(tmp / "config.json", {"architectures": ["BertForMaskedLM"], **model.config.to_hf_dict()})
    tokenizer.save(tmp)
    specials = {"unk_token": UNK, "sep_token": SEP, "pad_token": PAD, "cls_token": CLS, "mask_token": MASK}
    write_json(tmp / "special_tokens_map.json", specials)
    write_json(
        tmp / "tokenizer_config.json",
        {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": lowercase,
            "strip_accents": None,
            "tokenize_chinese_chars": True,
            "model_max_length": model.config.max_position_embeddings,
            **specials,
        },
    )
    replace_dir(tmp, out)
    return out
