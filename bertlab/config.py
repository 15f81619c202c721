"""BERT's hyperparameters, named as in the paper, and its named sizes.

Devlin et al. (2018) describe a model by three numbers: L, the number of Transformer layers;
H, the hidden size; A, the number of self-attention heads. The feed-forward inner size is 4H,
positions are learned for up to 512 tokens, and there are two segment types (sentence A / B).
Everything else here (dropout 0.1, GELU, LayerNorm eps 1e-12, init std 0.02) is the value of
the released BERT code, which `transformers` also uses.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# name: (L, H, A). base and large are the paper's; the small ones are those of Turc et al.
# (2019), "Well-Read Students Learn Better", which released BERTs of these sizes.
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
    "large": (24, 1024, 16),
}

# fmt: off
_SIZE_FIELDS = ("vocab_size", "num_layers", "hidden_size", "num_heads", "intermediate_size",
                "max_position_embeddings", "type_vocab_size")  # each a positive integer
# fmt: on


@dataclass
class BertConfig:
    vocab_size: int = 30522  # the bert-base-uncased WordPiece vocabulary
    num_layers: int = 12  # L
    hidden_size: int = 768  # H
    num_heads: int = 12  # A
    intermediate_size: int | None = None  # the FFN's inner size; None means 4H
    max_position_embeddings: int = 512
    type_vocab_size: int = 2  # segments A and B
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"  # "gelu" (exact, erf) as in BERT, or "relu" as in the Transformer
    initializer_range: float = 0.02
    pad_token_id: int = 0
    # True: a left-to-right model, each token attends to itself and the tokens on its left only
    # (the paper's "LTR" ablation, section 5.1, like OpenAI GPT), at fine-tuning time too.
    causal: bool = False
    # "post" (BERT): x = LN(x + F(x)). "pre" (Xiong et al. 2020; GPT-2): x = x + F(LN(x)), and one
    # LayerNorm after the last layer; it trains stably at the high learning rates short runs need.
    norm_position: str = "post"

    def __post_init__(self):
        if self.intermediate_size is None:
            self.intermediate_size = 4 * self.hidden_size
        for name in _SIZE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"BertConfig.{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_heads != 0:
            raise ValueError(
                f"hidden size H={self.hidden_size} is not divisible by the number of heads "
                f"A={self.num_heads}: each head gets H/A dimensions, so choose A among the "
                f"divisors of H (BERT-Base uses H=768, A=12, 64 per head)"
            )
        if self.hidden_act not in ("gelu", "relu"):
            raise ValueError(f"hidden_act must be 'gelu' or 'relu', got {self.hidden_act!r}")
        if self.norm_position not in ("post", "pre"):
            raise ValueError(f"norm_position must be 'post' (BERT) or 'pre' (pre-LN), got {self.norm_position!r}")
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False, got {self.causal!r}")
        for name in ("hidden_dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)!r}")

    # The paper's names, for readers following along.
    @property
    def L(self) -> int:
        return self.num_layers

    @property
    def H(self) -> int:
        return self.hidden_size

    @property
    def A(self) -> int:
        return self.num_heads

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_heads

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "BertConfig":
        """A named size: tiny, mini, small, medium, base (the paper's 110M) or large (340M)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
        L, H, A = PRESETS[name]
        return cls(num_layers=L, hidden_size=H, num_heads=A, **overrides)

    # --- serialisation -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BertConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown BertConfig fields {unknown}; known fields: {sorted(known)}")
        return cls(**d)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "BertConfig":
        return cls.from_dict(json.loads(Path(path).read_text()))

    # --- the transformers convention -----------------------------------------------------------
    _HF_NAMES = {  # ours -> transformers' BertConfig
        "vocab_size": "vocab_size",
        "num_layers": "num_hidden_layers",
        "hidden_size": "hidden_size",
        "num_heads": "num_attention_heads",
        "intermediate_size": "intermediate_size",
        "max_position_embeddings": "max_position_embeddings",
        "type_vocab_size": "type_vocab_size",
        "hidden_dropout": "hidden_dropout_prob",
        "attention_dropout": "attention_probs_dropout_prob",
        "layer_norm_eps": "layer_norm_eps",
        "hidden_act": "hidden_act",
        "initializer_range": "initializer_range",
        "pad_token_id": "pad_token_id",
        "causal": "is_decoder",  # transformers' BERT attends left-to-right when is_decoder=True
    }

    @classmethod
    def from_hf(cls, hf_config: Any) -> "BertConfig":
        """From a transformers BertConfig, or the dict of a Hugging Face config.json."""
        d = hf_config if isinstance(hf_config, dict) else hf_config.to_dict()
        if d.get("model_type", "bert") != "bert":
            raise ValueError(f"expected a BERT config, got model_type={d.get('model_type')!r}")
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute (learned) position embeddings are supported, as in BERT")
        required = ("vocab_size", "num_hidden_layers", "hidden_size", "num_attention_heads")
        missing = [k for k in required if k not in d]
        if missing:
            raise ValueError(f"the config has no {missing}; is it a BERT config.json?")
        kwargs = {ours: d[hf] for ours, hf in cls._HF_NAMES.items() if hf in d and d[hf] is not None}
        if kwargs.get("hidden_act", "gelu") not in ("gelu", "relu"):
            raise ValueError(f"unsupported activation {kwargs['hidden_act']!r}; BERT uses 'gelu'")
        return cls(**kwargs)

    def to_hf_dict(self) -> dict[str, Any]:
        """The config.json fields transformers' BertConfig expects."""
        if self.norm_position != "post":
            raise ValueError(
                "transformers' BERT is post-LN; a pre-LN model (norm_position='pre') has no "
                "transformers equivalent. Save it with bertlab.checkpoint.save_model instead"
            )
        d = {hf: getattr(self, ours) for ours, hf in self._HF_NAMES.items()}
        d["model_type"] = "bert"
        return d
