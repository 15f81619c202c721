"""The encoder-decoder Transformer of Vaswani et al. (2017), the model BERT takes its encoder from.

The encoder reads the whole source sentence at once; the decoder writes the target one token at a
time, left to right, reading the encoder's output through cross-attention. BERT keeps the encoder
and drops the rest; this module builds the rest around bertlab.model's encoder (sinusoidal_positions,
CrossAttention, DecoderLayer, EncoderDecoder with greedy_decode), with a dozen French-English pairs
to train on in seconds (TOY_PAIRS, Vocabulary, translation_batch).

A BertConfig describes the model: num_layers is N, hidden_size d_model, num_heads h,
intermediate_size d_ff; hidden_act="relu" gives the Transformer's ReLU; segments are not used.
Shapes: B = batch, S = source length, T = target length, H = d_model, A = heads, d = H / A,
V = vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bertlab.config import BertConfig
from bertlab.model import IGNORE_INDEX, EncoderLayer, FeedForward, SelfAttention, attention_mask_for


def sinusoidal_positions(n_positions: int, d_model: int) -> torch.Tensor:
    """The Transformer's fixed position encodings, (n_positions, d_model): column 2i holds
    sin(pos / 10000^(2i / d_model)) and column 2i+1 the cosine of the same angle."""
    pos = torch.arange(n_positions, dtype=torch.float32)[:, None]  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (d_model / 2,)
    angle = pos / 10000 ** (two_i / d_model)  # (P, d_model / 2): one wavelength per column pair
    pe = torch.zeros(n_positions, d_model)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe


# --- The decoder ----------------------------------------------------------------------------------
class CrossAttention(nn.Module):
    """Multi-head encoder-decoder attention, softmax(Q K^T / sqrt(d)) V, with Q = y W^Q from the
    decoder and K = m W^K, V = m W^V from the encoder output m. W^K and W^V are stacked in `kv`."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_heads = config.num_heads
        self.head_size = config.head_size
        self.q = nn.Linear(config.hidden_size, config.hidden_size)
        self.kv = nn.Linear(config.hidden_size, 2 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_dropout
        self.attention_dropout = nn.Dropout(config.attention_dropout)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False):
        B, T, H = y.shape
        S = memory.size(1)
        A, d = self.num_heads, self.head_size
        q = self.q(y).view(B, T, A, d).transpose(1, 2)  # (B, A, T, d): queries from the decoder
        k, v = self.kv(memory).split(H, dim=-1)  # 2 x (B, S, H): keys, values from the encoder
        k = k.view(B, S, A, d).transpose(1, 2)  # (B, A, S, d)
        v = v.view(B, S, A, d).transpose(1, 2)  # (B, A, S, d)
        weights = None
        if need_weights:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)  # (B, A, T, S): rectangular
            if mask is not None:  # (B, 1, 1, S): padded source tokens are never visible
                scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            weights = scores.softmax(dim=-1)  # each row sums to 1 over the source tokens
            z = self.attention_dropout(weights) @ v  # (B, A, T, d)
        else:
            z = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.dropout_p if self.training else 0.0
            )
        z = z.transpose(1, 2).reshape(B, T, H)  # concatenate the heads: (B, T, H)
        return self.out(z), weights


class DecoderLayer(nn.Module):
    """One Transformer decoder layer: masked self-attention, cross-attention to the encoder output,
    and the FFN, each wrapped as LayerNorm(y + Dropout(Sublayer(y)))."""

    def __init__(self, config: BertConfig):
        super().__init__()
        H, eps = config.hidden_size, config.layer_norm_eps
        self.self_attention = SelfAttention(config)  # bertlab's, under a causal mask
        self.self_attention_norm = nn.LayerNorm(H, eps=eps)
        self.cross_attention = CrossAttention(config)
        self.cross_attention_norm = nn.LayerNorm(H, eps=eps)
        self.ffn = FeedForward(config)
        self.ffn_norm = nn.LayerNorm(H, eps=eps)
        self.dropout = nn.Dropout(config.hidden_dropout)

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None,
        cross_mask: torch.Tensor | None,
        need_weights: bool = False,
    ):
        """y (B, T, H): the target so far; memory (B, S, H): the encoder output. self_mask
        (B or 1, 1, T, T) is causal: position t sees targets 1..t only. cross_mask (B, 1, 1, S)
        hides the source padding. Returns y (B, T, H) and the two attention maps (or None)."""
        a, self_weights = self.self_attention(y, self_mask, need_weights)  # (B, T, H)
        y = self.self_attention_norm(y + self.dropout(a))
        c, cross_weights = self.cross_attention(y, memory, cross_mask, need_weights)  # (B, T, H)
        y = self.cross_attention_norm(y + self.dropout(c))
        y = self.ffn_norm(y + self.dropout(self.ffn(y)))
        return y, self_weights, cross_weights


# --- The whole model ------------------------------------------------------------------------------
@dataclass
class EncoderDecoderOutput:
    logits: torch.Tensor  # (B, T, V): at position t, the scores of the target token t+1
    loss: torch.Tensor | None = None  # mean cross-entropy over the non-padding labels
    encoder_attentions: tuple[torch.Tensor, ...] | None = None  # N tensors (B, A, S, S)
    decoder_attentions: tuple[torch.Tensor, ...] | None = None  # N tensors (B, A, T, T), causal
    cross_attentions: tuple[torch.Tensor, ...] | None = None  # N tensors (B, A, T, S)


class EncoderDecoder(nn.Module):
    """The Transformer for translation (the paper's Figure 1): one embedding table (x sqrt(H)) plus
    sinusoids for source and target, BERT's EncoderLayers, DecoderLayers, and the output layer
    tied to the embeddings."""

    def __init__(self, config: BertConfig, num_decoder_layers: int | None = None):
        super().__init__()
        if config.norm_position != "post":
            raise ValueError(
                f"the Transformer is post-LN; EncoderDecoder needs norm_position='post', got {config.norm_position!r}"
            )
        if config.causal:
            raise ValueError(
                "the encoder of an encoder-decoder reads the source in both "
                "directions; use causal=False (the decoder is causal anyway)"
            )
        self.config = config
        H = config.hidden_size
        self.embedding = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.register_buffer("positions", sinusoidal_positions(config.max_position_embeddings, H), persistent=False)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.encoder = nn.ModuleList([EncoderLayer(config) for _ in range(config.num_layers)])
        n_dec = config.num_layers if num_decoder_layers is None else num_decoder_layers
        self.decoder = nn.ModuleList([DecoderLayer(config) for _ in range(n_dec)])
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        # Xavier-uniform matrices; embeddings with std H^-1/2, unit variance after the sqrt(H) scaling;
        # LayerNorms keep PyTorch's initial weight 1 and bias 0.
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=module.embedding_dim**-0.5)
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()

    def num_parameters(self) -> int:
        """Trainable parameters (the tied output layer counted once)."""
        return sum(p.numel() for p in self.parameters())

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Token embeddings x sqrt(H) + sinusoidal positions, then dropout: (B, T) -> (B, T, H)."""
        T = ids.size(1)
        if T > self.positions.size(0):
            raise ValueError(
                f"a sequence of {T} tokens is longer than max_position_embeddings={self.positions.size(0)}"
            )
        x = self.embedding(ids) * math.sqrt(self.config.hidden_size) + self.positions[:T]
        return self.dropout(x)

    def _pad_mask(self, ids: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        return (ids != self.config.pad_token_id).long() if mask is None else mask

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None, output_attentions: bool = False):
        """The source sentence through the encoder: memory (B, S, H), and the attention maps."""
        src_mask = self._pad_mask(src, src_mask)
        mask = attention_mask_for(src_mask, src.size(1), causal=False)  # (B, 1, 1, S)
        x = self.embed(src)  # (B, S, H)
        attentions = []
        for layer in self.encoder:
            x, w = layer(x, mask, output_attentions)
            attentions.append(w)
        return x, (tuple(attentions) if output_attentions else None)

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        output_attentions: bool = False,
    ):
        """The target so far through the decoder, given the encoder output: logits (B, T, V),
        then the self-attention and the cross-attention maps of every layer (or None)."""
        T, S = tgt_in.size(1), memory.size(1)
        self_mask = attention_mask_for(self._pad_mask(tgt_in, tgt_mask), T, causal=True)
        cross_mask = attention_mask_for(src_mask, S, causal=False)  # (B, 1, 1, S)
        y = self.embed(tgt_in)  # (B, T, H)
        self_attentions, cross_attentions = [], []
        for layer in self.decoder:
            y, ws, wc = layer(y, memory, self_mask, cross_mask, output_attentions)
            self_attentions.append(ws)
            cross_attentions.append(wc)
        logits = y @ self.embedding.weight.T  # (B, T, V): the final linear layer, tied
        if not output_attentions:
            return logits, None, None
        return logits, tuple(self_attentions), tuple(cross_attentions)

    def forward(
        self,
        src: torch.Tensor,
        tgt_in: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool = False,
    ) -> EncoderDecoderOutput:
        """Teacher forcing: from tgt_in = [BOS] w1 .. wn, predict labels = w1 .. wn [EOS]
        (IGNORE_INDEX on padding). Masks (B, S), (B, T): 1 for real tokens; default: not padding."""
        src_mask = self._pad_mask(src, src_mask)
        memory, encoder_attentions = self.encode(src, src_mask, output_attentions)
        logits, self_att, cross_att = self.decode(tgt_in, memory, src_mask, tgt_mask, output_attentions)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX)
        return EncoderDecoderOutput(logits, loss, encoder_attentions, self_att, cross_att)

    @torch.no_grad()
    def greedy_decode(
        self, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int = 50, src_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Inference: from [BOS], append the most probable next token until every sentence has
        produced [EOS] or max_len tokens. Returns (B, 1 + n) ids, padding after [EOS]. Call eval()."""
        src_mask = self._pad_mask(src, src_mask)
        memory, _ = self.encode(src, src_mask)  # (B, S, H), computed once
        max_len = min(max_len, self.positions.size(0) - 1)
        out = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            logits, _, _ = self.decode(out, memory, src_mask, torch.ones_like(out))
            next_id = logits[:, -1].argmax(dim=-1)  # (B,): the best next token for each
            next_id = next_id.masked_fill(done, self.config.pad_token_id)
            out = torch.cat([out, next_id[:, None]], dim=1)
            done |= next_id == eos_id
            if done.all():
                break
        return out


# --- A toy parallel corpus ------------------------------------------------------------------------
TOY_PAIRS: list[tuple[str, str]] = [  # (French, English), lower case, one space between words
    ("je suis étudiant", "i am a student"),
    ("je suis professeur", "i am a teacher"),
    ("je suis médecin", "i am a doctor"),
    ("je suis fatigué", "i am tired"),
    ("tu es étudiant", "you are a student"),
    ("tu es fatigué", "you are tired"),
    ("il est professeur", "he is a teacher"),
    ("il est fatigué", "he is tired"),
    ("elle est médecin", "she is a doctor"),
    ("elle est étudiante", "she is a student"),
    ("nous sommes étudiants", "we are students"),
    ("nous sommes fatigués", "we are tired"),
    ("ils sont médecins", "they are doctors"),
    ("ils sont professeurs", "they are teachers"),
]


class Vocabulary:
    """Whole words to ids and back: [PAD], [BOS], [EOS] are 0, 1, 2, then words as first seen."""

    specials = ("[PAD]", "[BOS]", "[EOS]")

    def __init__(self, sentences: Iterable[str]):
        self.itos: list[str] = list(self.specials)
        for sentence in sentences:
            for word in sentence.split():
                if word not in self.itos:
                    self.itos.append(word)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: str) -> list[int]:
        unknown = [w for w in sentence.split() if w not in self.stoi]
        if unknown:
            raise KeyError(f"words not in the vocabulary: {unknown}")
        return [self.stoi[w] for w in sentence.split()]

    def decode(self, ids: Sequence[int]) -> str:
        """The words of `ids`, without [BOS]; stops at [EOS] or [PAD]."""
        words = []
        for i in (int(i) for i in ids):
            if i in (self.eos_id, self.pad_id):
                break
            if i != self.bos_id:
                words.append(self.itos[i])
        return " ".join(words)


def translation_batch(pairs: Sequence[tuple[str, str]], vocab: Vocabulary):
    """Padded tensors for teacher forcing: src (B, S) = source words; tgt_in (B, T) = [BOS] +
    target words; labels (B, T) = target words + [EOS], IGNORE_INDEX on padding."""
    srcs = [vocab.encode(s) for s, _ in pairs]
    tgts = [vocab.encode(t) for _, t in pairs]
    S, T = max(map(len, srcs)), max(map(len, tgts)) + 1
    src = torch.full((len(pairs), S), vocab.pad_id, dtype=torch.long)
    tgt_in = torch.full((len(pairs), T), vocab.pad_id, dtype=torch.long)
    labels = torch.full((len(pairs), T), IGNORE_INDEX, dtype=torch.long)
    for b, (s, t) in enumerate(zip(srcs, tgts)):
        src[b, : len(s)] = torch.tensor(s)
        tgt_in[b, : len(t) + 1] = torch.tensor([vocab.bos_id] + t)
        labels[b, : len(t) + 1] = torch.tensor(t + [vocab.eos_id])
    return src, tgt_in, labels
