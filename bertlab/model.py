"""BERT: a bidirectional Transformer encoder, its pretraining heads and its fine-tuning heads.

One file, read top to bottom, following Devlin et al. (2018), section 3, and the encoder of
Vaswani et al. (2017):

    Embeddings        token + segment + position, then LayerNorm and dropout
    SelfAttention     multi-head scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V
    FeedForward       the position-wise FFN, GELU(x W1 + b1) W2 + b2, inner size 4H
    EncoderLayer      post-LN: x = LN(x + Attention(x)); x = LN(x + FFN(x))
                      (or pre-LN, x = x + Attention(LN(x)), for fast short runs: config.norm_position)
    attention_mask_for  which keys each query may see: never padding; in a causal
                        (left-to-right) model, never a token to its right
    BertModel         embeddings, L layers, and the pooler tanh(W C + b) over the [CLS] vector C
    BertForPreTraining          masked LM (decoder tied to the token embeddings) + next sentence
    BertForSequenceClassification   softmax(C W^T)
    BertForTokenClassification      a softmax over labels at every position
    BertForQuestionAnswering        start vector S and end vector E: P(start=i) = softmax_i(S . T_i)
    BertForMultipleChoice           one vector V scores each choice's C_i: softmax_i(V . C_i)

Shapes use B = batch, T = sequence length, H = hidden size, A = heads, d = H / A, V = vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from bertlab import hf
from bertlab.config import BertConfig

IGNORE_INDEX = -100  # label value for positions that carry no loss (the convention of F.cross_entropy)


def at_positions(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The vectors of x (B, T, H) at positions (B, P): (B, P, H), row b taking x[b, positions[b]]."""
    return x.gather(1, positions[:, :, None].expand(-1, -1, x.size(-1)))


def check_same_shape(input_ids: torch.Tensor, token_type_ids, attention_mask) -> None:
    """token_type_ids and attention_mask, when given, must have input_ids' shape."""
    for name, t in (("token_type_ids", token_type_ids), ("attention_mask", attention_mask)):
        if t is not None and t.shape != input_ids.shape:
            raise ValueError(
                f"{name} has shape {tuple(t.shape)} but input_ids has {tuple(input_ids.shape)}; they must match"
            )


# --- Outputs --------------------------------------------------------------------------------------
@dataclass
class BertOutput:
    last_hidden_state: torch.Tensor  # (B, T, H): T_i, the final vector of every token
    pooler_output: torch.Tensor | None  # (B, H): tanh(W C + b), C of [CLS] (last token if causal), or None
    hidden_states: tuple[torch.Tensor, ...] | None = None  # L+1 tensors (B, T, H), embeddings first
    attentions: tuple[torch.Tensor, ...] | None = None  # L tensors (B, A, T, T)


@dataclass
class PreTrainingOutput:
    mlm_logits: torch.Tensor  # (B, T, V), or (B, P, V) when mlm_positions are given
    nsp_logits: torch.Tensor  # (B, 2): index 0 = IsNext, 1 = NotNext
    loss: torch.Tensor | None = None  # mlm_loss + nsp_loss, as in the paper
    mlm_loss: torch.Tensor | None = None
    nsp_loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class ClassifierOutput:
    logits: torch.Tensor  # (B, K) for sequences, (B, T, K) for tokens
    loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


@dataclass
class SpanOutput:
    start_logits: torch.Tensor  # (B, T): S . T_i
    end_logits: torch.Tensor  # (B, T): E . T_j
    loss: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


# --- The encoder ----------------------------------------------------------------------------------
@torch.library.custom_op("bertlab::random_bits", mutates_args=(), tags=(torch.Tag.nondeterministic_seeded,))
def random_bits(like: torch.Tensor) -> torch.Tensor:
    """16 random bits (int16) per element of `like`, four per 64-bit draw of the default generator.
    A custom op, so that torch.compile keeps it (not one Philox draw per element) and never merges it."""
    n = like.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=like.device).random_()
    return words.view(torch.int16)[:n].view(like.shape)


@random_bits.register_fake
def _random_bits_shape(like: torch.Tensor) -> torch.Tensor:
    return torch.empty(like.shape, dtype=torch.int16, device=like.device)


class Dropout(nn.Dropout):
    """Dropout (Srivastava et al.): in training, zero each element with probability p and scale the
    others by 1 / (1 - p). On a CPU the keep-mask is 15 bits of `random_bits` (cheaper there), so p
    is rounded to a multiple of 1/32768; on a GPU it is F.dropout."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.p >= 1.0:
            return x * 0.0
        if x.device.type != "cpu":
            return F.dropout(x, self.p, True)
        threshold = round(self.p * 32768)  # drop when the 15-bit number is below it
        keep = (random_bits(x) & 0x7FFF) >= threshold
        return x * keep * (32768 / (32768 - threshold))


class Embeddings(nn.Module):
    """The input representation: token + segment + position embeddings (the paper's Figure 2)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        H = config.hidden_size
        self.token = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.segment = nn.Embedding(config.type_vocab_size, H)  # sentence A = 0, sentence B = 1
        self.position = nn.Embedding(config.max_position_embeddings, H)  # learned, not sinusoidal
        self.norm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings), persistent=False)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.size(1)
        x = self.token(input_ids) + self.segment(token_type_ids) + self.position(self.position_ids[:T])
        return self.dropout(self.norm(x))  # (B, T, H)


class SelfAttention(nn.Module):
    """Multi-head self-attention. W^Q, W^K and W^V are stacked in one (3H, H) matrix `qkv`, so
    that one matrix multiply makes all three; `out` is W^O. `fused`: None (default) uses the fused
    kernel on GPUs and the written-out formula on CPUs (faster there at BERT's lengths; the same
    numbers); True or False forces one."""

    fused: bool | None = None

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_heads
        self.head_size = config.head_size
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_dropout
        self.attention_dropout = Dropout(config.attention_dropout)

    def fused_for(self, device: torch.device) -> bool:
        """Whether attention on `device` runs in the fused kernel (else: the formula written out)."""
        return self.fused if self.fused is not None else device.type != "cpu"

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        need_weights: bool = False,
        queries: torch.Tensor | None = None,
    ):
        """queries (B, P), optional: the output at these positions only, (B, P, H); they still
        attend to every position."""
        B, T, H = x.shape
        A, d = self.num_heads, self.head_size
        if queries is None:
            q, k, v = self.qkv(x).split(H, dim=-1)  # 3 x (B, T, H)
        else:
            w, b = self.qkv.weight, self.qkv.bias  # rows [W^Q; W^K; W^V]
            q = F.linear(at_positions(x, queries), w[:H], b[:H])  # (B, P, H)
            k, v = F.linear(x, w[H:], b[H:]).split(H, dim=-1)  # 2 x (B, T, H)
        Q = q.size(1)  # T, or P
        q = q.view(B, Q, A, d).transpose(1, 2)  # (B, A, Q, d): each head sees its own d dims
        k = k.view(B, T, A, d).transpose(1, 2)  # (B, A, T, d)
        v = v.view(B, T, A, d).transpose(1, 2)
        weights = None
        if need_weights or not self.fused_for(x.device):
            # The formula spelled out (and the attention maps, when asked for).
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)  # (B, A, Q, T)
            if mask is not None:
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            probs = scores.softmax(dim=-1)  # each row sums to 1 over the keys
            z = self.attention_dropout(probs) @ v  # (B, A, Q, d)
            weights = probs if need_weights else None
        else:
            # The same computation in one fused kernel (flash / memory-efficient attention).
            z = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0
            )
        z = z.transpose(1, 2).reshape(B, Q, H)  # concatenate the heads: (B, Q, H)
        return self.out(z), weights


class FeedForward(nn.Module):
    """Position-wise feed-forward network: act(x W1 + b1) W2 + b2, applied to each token alike."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.w1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.w2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.act = nn.GELU() if config.hidden_act == "gelu" else nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.act(self.w1(x)))  # (B, T, H) -> (B, T, 4H) -> (B, T, H)


class EncoderLayer(nn.Module):
    """One Transformer encoder layer, post-LN as in BERT: each sub-layer is wrapped as
    LayerNorm(x + Dropout(Sublayer(x))). With config.norm_position="pre" it is
    x + Dropout(Sublayer(LayerNorm(x))): the residual path is never normalised, so high learning
    rates are safe."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = SelfAttention(config)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config)
        self.ffn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout)
        self.pre_norm = config.norm_position == "pre"

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None,
        need_weights: bool = False,
        queries: torch.Tensor | None = None,
    ):
        """queries (B, P), optional: the layer's output at these positions only, (B, P, H). Every
        position still serves as a key and value, so those P vectors are exactly what the full
        layer gives there; the feed-forward network and the norms run on P positions, not T."""
        residual = x if queries is None else at_positions(x, queries)  # (B, T or P, H)
        if self.pre_norm:
            a, weights = self.attention(self.attention_norm(x), mask, need_weights, queries)
            x = residual + self.dropout(a)
            return x + self.dropout(self.ffn(self.ffn_norm(x))), weights
        a, weights = self.attention(x, mask, need_weights, queries)
        x = self.attention_norm(residual + self.dropout(a))
        x = self.ffn_norm(x + self.dropout(self.ffn(x)))
        return x, weights


def attention_mask_for(
    attention_mask: torch.Tensor | None, T: int, causal: bool, device: torch.device | None = None
) -> torch.Tensor | None:
    """The boolean mask every head applies to its scores: True where query i may attend to key j.
    attention_mask (B, T) is 1 for real tokens, 0 for padding, which is never visible. BERT sees
    every real key: (B, 1, 1, T). A causal model (the paper's "LTR" ablation, section 5.1) also
    hides the keys to the right, j > i: (B or 1, 1, T, T)."""
    mask = None if attention_mask is None else attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
    if causal:
        if device is None:
            device = attention_mask.device if attention_mask is not None else None
        left = torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T): j <= i
        mask = left[None, None] if mask is None else mask & left  # (B or 1, 1, T, T)
    return mask


class _BertBase(nn.Module):
    """What every BERT model shares: weight initialisation, conversion to and from transformers."""

    config: BertConfig

    def _init_weights(self, module: nn.Module) -> None:
        # As in the released BERT: N(0, 0.02) weights, zero biases, LayerNorm at identity.
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=self.config.initializer_range)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def num_parameters(self) -> int:
        """Trainable parameters, each shared tensor counted once (the tied MLM decoder)."""
        return sum(p.numel() for p in self.parameters())

    @classmethod
    def from_hf(cls, source: Any, config: Any = None, strict: bool = True, **head_kwargs: Any):
        """Build this model from Hugging Face weights: a transformers model, a state dict with
        `config`, a folder, or a hub name such as "bert-base-uncased" (see bertlab.hf)."""
        return hf.load_into(cls, source, config=config, strict=strict, **head_kwargs)

    def to_hf(self) -> dict[str, torch.Tensor]:
        """This model's weights under transformers' names, for the transformers class of that name."""
        return hf.to_hf_state_dict(self)


class BertModel(_BertBase):
    """The encoder: embeddings, L encoder layers, and the pooler over [CLS] (left out by heads
    that read every token, as in transformers). In a causal model [CLS] sees only itself, so the
    pooler reads the last real token instead, the one that has seen the whole input (as in GPT)."""

    def __init__(self, config: BertConfig, add_pooler: bool = True):
        super().__init__()
        self.config = config
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.num_layers)])
        # pre-LN leaves the residual stream unnormalised: one LayerNorm after the last layer
        self.final_norm = (
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps) if config.norm_position == "pre" else None
        )
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size) if add_pooler else None
        self.apply(self._init_weights)

    def check_inputs(
        self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None, attention_mask: torch.Tensor | None
    ) -> None:
        """Clear errors for inputs the model cannot take. Id ranges are checked on CPU tensors only:
        on a GPU reading min/max back would stall every step."""
        c = self.config
        if input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}; "
                f"for a single sequence add a batch dimension: input_ids[None]"
            )
        if input_ids.dtype not in (torch.long, torch.int, torch.int16, torch.uint8):
            raise TypeError(f"input_ids must be integer token ids, got dtype {input_ids.dtype}")
        T = input_ids.size(1)
        if T > c.max_position_embeddings:
            raise ValueError(
                f"sequence length {T} is longer than the position table (max_position_embeddings="
                f"{c.max_position_embeddings}); truncate the input to at most {c.max_position_embeddings} tokens"
            )
        check_values = input_ids.device.type == "cpu"
        if check_values and input_ids.numel():
            lo, hi = int(input_ids.min()), int(input_ids.max())
            if lo < 0 or hi >= c.vocab_size:
                bad = hi if hi >= c.vocab_size else lo
                raise ValueError(
                    f"token id {bad} is outside the vocabulary [0, {c.vocab_size}); was the text encoded "
                    f"with a different tokenizer than this model's (vocab_size={c.vocab_size})?"
                )
        check_same_shape(input_ids, token_type_ids, attention_mask)
        if check_values and token_type_ids is not None and token_type_ids.numel():
            lo, hi = int(token_type_ids.min()), int(token_type_ids.max())
            if lo < 0 or hi >= c.type_vocab_size:
                raise ValueError(
                    f"token_type_ids must be in [0, {c.type_vocab_size}) (0 = sentence A, 1 = sentence B), "
                    f"found {hi if hi >= c.type_vocab_size else lo}"
                )

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        last_layer_at: torch.Tensor | None = None,
    ) -> BertOutput:
        """last_layer_at (B, P), optional: run the last layer only there and at [CLS] (for the pooler);
        last_hidden_state is then (B, P, H). P = 0: [CLS] alone, all a classifier reads."""
        if not torch.compiler.is_compiling():
            self.check_inputs(input_ids, token_type_ids, attention_mask)
        if last_layer_at is not None and (self.config.causal or output_attentions or output_hidden_states):
            raise ValueError(
                "last_layer_at computes the last layer at a few positions only: it cannot be combined with "
                "output_attentions, output_hidden_states or a causal model; leave it out to run every position"
            )
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        T = input_ids.size(1)
        mask = attention_mask_for(attention_mask, T, self.config.causal, input_ids.device)

        x = self.embeddings(input_ids, token_type_ids)  # (B, T, H)
        hidden_states = [x] if output_hidden_states else None
        attentions = [] if output_attentions else None
        queries = None  # (B, 1 + P): [CLS] first, for the pooler
        if last_layer_at is not None:
            queries = torch.cat([last_layer_at.new_zeros(last_layer_at.size(0), 1), last_layer_at], dim=1)
        for i, layer in enumerate(self.layers):
            last = i == len(self.layers) - 1
            x, weights = layer(x, mask, need_weights=output_attentions, queries=queries if last else None)
            if self.final_norm is not None and last:
                x = self.final_norm(x)
            if output_hidden_states:
                hidden_states.append(x)
            if output_attentions:
                attentions.append(weights)
        pooled = None
        if self.pooler is not None:
            if self.config.causal:  # the last real token: the only one that has seen everything
                real = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
                last = (real.long() * torch.arange(T, device=x.device)).argmax(1)  # (B,)
                summary = x[torch.arange(x.size(0), device=x.device), last]  # (B, H)
            else:
                summary = x[:, 0]  # (B, H): C, the final vector of [CLS]
            pooled = torch.tanh(self.pooler(summary))  # (B, H)
        return BertOutput(
            x if queries is None else x[:, 1:],
            pooled,
            tuple(hidden_states) if hidden_states is not None else None,
            tuple(attentions) if attentions is not None else None,
        )


# --- Pretraining heads: masked LM and next sentence prediction ------------------------------------
class MaskedLMHead(nn.Module):
    """Transform each chosen T_i (dense, GELU, LayerNorm), then score it against every token
    embedding: the output matrix is the input embedding matrix (weight tying), plus a bias."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = nn.GELU() if config.hidden_act == "gelu" else nn.ReLU()
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h: torch.Tensor, token_embedding: torch.Tensor) -> torch.Tensor:
        h = self.norm(self.act(self.dense(h)))  # (..., H)
        return F.linear(h, token_embedding, self.bias)  # (..., V)


class BertForPreTraining(_BertBase):
    """BERT with both pretraining objectives: loss = mean MLM cross-entropy over the selected
    positions + mean NSP cross-entropy (appendix A.2). A causal config (the "LTR & No NSP" ablation)
    uses the same head as a left-to-right LM: at position t its logits score token t+1.
    `last_layer_at_chosen` (default True): given mlm_positions, the last layer runs only there and
    at [CLS], where the heads read it (the same losses up to rounding); False runs it everywhere."""

    last_layer_at_chosen: bool = True

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.mlm = MaskedLMHead(config)
        self.nsp = nn.Linear(config.hidden_size, 2)  # from the pooled [CLS]: IsNext / NotNext
        self.mlm.apply(self._init_weights)
        self.nsp.apply(self._init_weights)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        mlm_positions: torch.Tensor | None = None,
        mlm_labels: torch.Tensor | None = None,
        nsp_labels: torch.Tensor | None = None,
    ) -> PreTrainingOutput:
        """mlm_positions (B, P): the selected tokens. When given, the MLM head runs there only
        (~15% of the tokens) and mlm_labels is (B, P); otherwise everywhere, mlm_labels (B, T).
        Labels are IGNORE_INDEX where there is nothing to predict. nsp_labels (B,): 0 = IsNext."""
        sparse = mlm_positions is not None and self.last_layer_at_chosen
        sparse = sparse and not (output_attentions or output_hidden_states or self.config.causal)
        out = self.bert(
            input_ids,
            token_type_ids,
            attention_mask,
            output_attentions,
            output_hidden_states,
            last_layer_at=mlm_positions if sparse else None,
        )
        h = out.last_hidden_state  # (B, T, H), or (B, P, H) when the last layer ran at the P positions
        if mlm_positions is not None and not sparse:
            h = at_positions(h, mlm_positions)  # (B, P, H)
        mlm_logits = self.mlm(h, self.bert.embeddings.token.weight)  # (B, T or P, V)
        nsp_logits = self.nsp(out.pooler_output)  # (B, 2)

        loss = mlm_loss = nsp_loss = None
        if mlm_labels is not None:
            if mlm_labels.shape != mlm_logits.shape[:2]:
                per = "selected position" if mlm_positions is not None else "token"
                raise ValueError(
                    f"mlm_labels has shape {tuple(mlm_labels.shape)}, expected {tuple(mlm_logits.shape[:2])} "
                    f"(one label per {per})"
                )
            mlm_loss = F.cross_entropy(
                mlm_logits.flatten(0, 1).float(), mlm_labels.flatten(), ignore_index=IGNORE_INDEX
            )
            loss = mlm_loss
        if nsp_labels is not None:
            nsp_loss = F.cross_entropy(nsp_logits.float(), nsp_labels)
            loss = nsp_loss if loss is None else loss + nsp_loss
        return PreTrainingOutput(mlm_logits, nsp_logits, loss, mlm_loss, nsp_loss, out.hidden_states, out.attentions)


# --- Fine-tuning heads (the paper's Figure 4) -----------------------------------------------------
class BertForSequenceClassification(_BertBase):
    """One sentence or a pair -> one of K labels: P = softmax(C W^T), W in R^{K x H}, where C is
    the pooled [CLS] vector. `last_layer_at_cls` (default True) runs the last layer at [CLS]
    alone, all the classifier reads; False runs it everywhere."""

    last_layer_at_cls: bool = True

    def __init__(self, config: BertConfig, num_labels: int = 2):
        super().__init__()
        if num_labels < 1:
            raise ValueError(f"num_labels must be at least 1, got {num_labels}")
        self.config = config
        self.num_labels = num_labels
        self.bert = BertModel(config)
        self.dropout = Dropout(config.hidden_dropout)
        self.classifier = nn.Linear(config.hidden_size, num_labels)  # W (and a bias)
        self.classifier.apply(self._init_weights)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        labels: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        at_cls = self.last_layer_at_cls and not (output_attentions or output_hidden_states or self.config.causal)
        out = self.bert(
            input_ids,
            token_type_ids,
            attention_mask,
            output_attentions,
            output_hidden_states,
            last_layer_at=input_ids.new_zeros(input_ids.size(0), 0) if at_cls else None,  # (B, 0): [CLS] alone
        )
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, K)
        loss = None
        if labels is not None:
            if self.num_labels == 1:  # regression (STS-B)
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
            else:
                loss = F.cross_entropy(logits.float(), labels)
        return ClassifierOutput(logits, loss, out.hidden_states, out.attentions)


class BertForTokenClassification(_BertBase):
    """A label for every token (NER): a softmax over K labels on each T_i."""

    def __init__(self, config: BertConfig, num_labels: int = 9):
        super().__init__()
        if num_labels < 2:
            raise ValueError(f"num_labels must be at least 2, got {num_labels}")
        self.config = config
        self.num_labels = num_labels
        self.bert = BertModel(config, add_pooler=False)
        self.dropout = Dropout(config.hidden_dropout)
        self.classifier = nn.Linear(config.hidden_size, num_labels)
        self.classifier.apply(self._init_weights)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        labels: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, K)
        loss = None
        if labels is not None:  # (B, T), IGNORE_INDEX on padding, specials and non-first sub-tokens
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
        return ClassifierOutput(logits, loss, out.hidden_states, out.attentions)


class BertForQuestionAnswering(_BertBase):
    """Span extraction (SQuAD): a start vector S and an end vector E in R^H, stored as the two
    rows of one (2, H) matrix. P(start = i) = softmax_i(S . T_i), likewise for the end."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooler=False)
        self.qa = nn.Linear(config.hidden_size, 2)  # row 0 = S, row 1 = E
        self.qa.apply(self._init_weights)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        start_positions: torch.Tensor | None = None,
        end_positions: torch.Tensor | None = None,
    ) -> SpanOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states)
        start_logits, end_logits = self.qa(out.last_hidden_state).unbind(dim=-1)  # 2 x (B, T)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = (
                F.cross_entropy(start_logits.float(), start_positions)
                + F.cross_entropy(end_logits.float(), end_positions)
            ) / 2
        return SpanOutput(start_logits, end_logits, loss, out.hidden_states, out.attentions)


class BertForMultipleChoice(BertForSequenceClassification):
    """Pick one of N choices (SWAG, section 4.4). Each pair [CLS] context [SEP] ending_i [SEP] is one
    sequence (Figure 4 (a)), and a learned vector V in R^H scores its pooled C_i: P(choice i) =
    softmax_i(V . C_i). Inputs (B, N, T); logits (B, N); labels (B,): the index of the right choice."""

    def __init__(self, config: BertConfig):
        super().__init__(config, num_labels=1)  # classifier: V (and a bias)

    def forward(
        self,
        input_ids,
        token_type_ids=None,
        attention_mask=None,
        output_attentions=False,
        output_hidden_states=False,
        labels: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        if input_ids.dim() != 3:
            raise ValueError(
                f"input_ids must have shape (batch, num_choices, seq_len), got {tuple(input_ids.shape)}; "
                f"for one example of N choices add a batch dimension: input_ids[None]"
            )
        check_same_shape(input_ids, token_type_ids, attention_mask)
        B, N, T = input_ids.shape

        def pairs(t):  # (B, N, T) -> (B * N, T): every (context, ending) pair is one sequence
            return None if t is None else t.reshape(B * N, T)

        ids, types, mask = pairs(input_ids), pairs(token_type_ids), pairs(attention_mask)
        out = super().forward(ids, types, mask, output_attentions, output_hidden_states)  # (B * N, 1): V . C_i + b
        logits = out.logits.view(B, N)  # (B, N)
        loss = None if labels is None else F.cross_entropy(logits.float(), labels)  # labels (B,): the right choice
        return ClassifierOutput(logits, loss, out.hidden_states, out.attentions)
