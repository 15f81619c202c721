"""Where the attention of a packed sentence pair goes: within a text, across to the other, or
onto the special tokens.

BERT reads a pair as ONE sequence, [CLS] A [SEP] B [SEP] (bertlab.tasks.pack), and its
self-attention runs over the whole of it (Devlin et al., 2018, section 3.2). Nothing stops a
token of A from attending to the tokens of B: the cross-attention that earlier pair models
built as a separate layer comes for free. This module measures how much of it there is.

Every position gets a role (ROLES: [CLS], a token of A, a [SEP], a token of B; padding is -1)
and `attention_mass` sums the attention weights by role:

    roles = token_roles(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                        cls_id=tok.cls_id, sep_id=tok.sep_id)              # (B, T)
    out = model.bert(**batch, output_attentions=True)
    mass = attention_mass(out.attentions, roles)                            # (L, 4, 4)
    mass[layer, A, B]   # the average share of its attention a token of A puts on the tokens of B

Each row mass[l, r, :] sums to 1: a query's attention weights sum to 1 over the real keys.
`same_token_attention` asks a sharper question, per head: does a word of A look at the same word
where it occurs in B, as an alignment layer between two sentences would?
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F

ROLES = ("[CLS]", "A", "[SEP]", "B")
CLS, A, SEP, B = range(len(ROLES))
PAD = -1


def token_roles(
    input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor | None, cls_id: int, sep_id: int
) -> torch.Tensor:
    """The role of every position of packed pairs, (B, T) long: CLS, A (segment 0), SEP (both
    [SEP] tokens), B (segment 1) or PAD (attention_mask 0)."""
    roles = torch.where(token_type_ids == 0, A, B)
    roles = torch.where(input_ids == sep_id, SEP, roles)
    roles = torch.where(input_ids == cls_id, CLS, roles)
    if attention_mask is not None:
        roles = torch.where(attention_mask.bool(), roles, PAD)
    return roles.long()


def attention_mass(
    attentions: Sequence[torch.Tensor] | torch.Tensor, roles: torch.Tensor, per_head: bool = False
) -> torch.Tensor:
    """How much attention the queries of each role put on the keys of each role.

    attentions: a model's `out.attentions` (L tensors (B, A, T, T), rows = queries, each a softmax
        over the keys), or one stacked (L, B, A, T, T) tensor.
    roles: (B, T) from `token_roles`; PAD queries are left out (PAD keys get no weight anyway).
    Returns mass (L, R, R), or (L, A, R, R) with per_head=True, R = len(ROLES):
        mass[l, r, c] = mean over every query position of role r in the batch (all pairs
        pooled, each token counting once) and over the heads of sum_{keys k of role c} w[q, k].
    A role with no query in the batch gives a row of NaN."""
    att = attentions if isinstance(attentions, torch.Tensor) else torch.stack(tuple(attentions))
    if att.dim() != 5:
        raise ValueError(f"expected L attention maps of shape (B, A, T, T), got {tuple(att.shape)}")
    L, Bn, H, T, T2 = att.shape
    if roles.shape != (Bn, T) or T2 != T:
        raise ValueError(f"roles {tuple(roles.shape)} do not match attention maps over (B, T) = ({Bn}, {T})")
    R = len(ROLES)
    member = F.one_hot(roles.clamp(min=0), R).float() * (roles >= 0)[..., None]  # (B, T, R)
    on_role = att.float() @ member[None, :, None]  # (L, B, A, T, R): each query's weight per key role
    summed = torch.einsum("lbhqc,bqr->lhrc", on_role, member)  # (L, A, R, R): summed over queries
    counts = member.sum(dim=(0, 1))  # (R,) queries of each role
    mass = summed / counts[None, None, :, None]
    return mass if per_head else mass.mean(dim=1)


def uniform_attention(roles: torch.Tensor, num_layers: int = 1, num_heads: int = 1) -> torch.Tensor:
    """Attention maps (num_layers, B, num_heads, T, T) that spread every query's weight evenly
    over the real keys of its sequence: the baseline `attention_mass` is compared against (a key
    role then gets its share of the tokens, e.g. |B| / T for the keys of B)."""
    real = (roles >= 0).float()  # (B, T)
    w = real[:, None, :] / real.sum(dim=1)[:, None, None]  # (B, 1, T): same row for every query
    w = w.expand(-1, roles.shape[1], -1)  # (B, T, T)
    return w[None, :, None].expand(num_layers, -1, num_heads, -1, -1)


def same_token_attention(
    attentions: Sequence[torch.Tensor] | torch.Tensor,
    input_ids: torch.Tensor,
    roles: torch.Tensor,
    query_role: int = A,
    key_role: int = B,
) -> torch.Tensor:
    """(L, A): for each layer and head, the attention weight that a query of `query_role` puts on
    the keys of `key_role` holding the very same token id, averaged over the queries that have
    such a twin (a word of A that also occurs in B). With `uniform_attention` it gives the
    baseline: the twins' share of the sequence."""
    att = attentions if isinstance(attentions, torch.Tensor) else torch.stack(tuple(attentions))
    same = input_ids[:, :, None] == input_ids[:, None, :]  # (B, T, T): [query, key] hold one token
    same &= (roles == query_role)[:, :, None] & (roles == key_role)[:, None, :]
    has_twin = same.any(dim=-1)  # (B, T)
    if not has_twin.any():
        raise ValueError("no query token has a twin among the keys of the other role")
    on_twins = (att.float() * same[None, :, None]).sum(dim=-1)  # (L, B, A, T)
    return (on_twins * has_twin[None, :, None]).sum(dim=(1, 3)) / has_twin.sum()


STANDS_OUT = 3.0  # a head "stands out" when it puts this many times an even spread on the twins


def twin_reading(twins: torch.Tensor, even: float) -> str:
    """A sentence on `same_token_attention`'s (L, heads) table: the strongest head, its weight on
    the twins against an even spread (`even`, the same function on `uniform_attention`) and against
    the median head; it says the head stands out only at STANDS_OUT times the even spread or more."""
    if twins.dim() != 2 or twins.numel() == 0:
        raise ValueError(f"twins must be a non-empty (layers, heads) table, got shape {tuple(twins.shape)}")
    if not even > 0:
        raise ValueError(f"even must be the even spread's weight on the twins (> 0), got {even}")
    layer, head = divmod(int(twins.argmax()), twins.shape[1])
    best, median = float(twins[layer, head]), float(twins.median())
    where = f"layer {layer}, head {head}"  # both counted from 0, as in chapters 5 and 16 and bertviz
    against = f"{best / even:.1f} times an even spread ({even:.3f})"
    if median > 0:
        against += f" and {best / median:.0f} times the median head ({median:.3f})"
    if best >= STANDS_OUT * even:
        return (
            f"One head stands out: in {where}, a word of A puts {best:.3f} of its attention on its "
            f"twin in B, {against}."
        )
    return (
        f"No head stands out: the strongest, {where}, puts {best:.3f} of a word's attention on its "
        f"twin in B, {against}, short of the {STANDS_OUT:g} times that would mark a head that aligns "
        "the two texts."
    )
