"""Where the attention of a packed sentence pair goes: within a text, across to the other, or
onto the special tokens (chapter 12).

BERT reads a pair as one sequence, [CLS] A [SEP] B [SEP], and self-attention runs over all of it
(Devlin et al., 2018, section 3.2): the cross-attention earlier pair models built as a layer comes
for free. Every position gets a role (ROLES; padding is PAD):

    roles = token_roles(ids, types, mask, cls_id=tok.cls_id, sep_id=tok.sep_id)   # (B, T)
    mass = attention_mass(model.bert(**batch, output_attentions=True).attentions, roles)
    mass[layer, A, B]   # the mean share of its attention a token of A puts on the tokens of B
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
    """The role of every position of packed pairs, (B, T): CLS, A, SEP, B or PAD."""
    roles = torch.where(token_type_ids == 0, A, B)
    roles = torch.where(input_ids == sep_id, SEP, roles)
    roles = torch.where(input_ids == cls_id, CLS, roles)
    if attention_mask is not None:
        roles = torch.where(attention_mask.bool(), roles, PAD)
    return roles.long()


def attention_mass(
    attentions: Sequence[torch.Tensor] | torch.Tensor, roles: torch.Tensor, per_head: bool = False
) -> torch.Tensor:
    """How much attention the queries of each role put on the keys of each role: mass[l, r, c],
    (L, R, R) or (L, A, R, R) with per_head, is the mean over the batch's queries of role r (PAD
    left out) and the heads of their weight on keys of role c. Each row sums to 1; a role with no
    query gives NaN. attentions: `out.attentions`, or one (L, B, A, T, T) tensor."""
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
    """Maps (num_layers, B, num_heads, T, T) spreading every query evenly over the real keys: the
    baseline, under which a role gets its share of the tokens."""
    real = (roles >= 0).float()  # (B, T)
    w = real[:, None, :] / real.sum(dim=1)[:, None, None]  # (B, 1, T): same row for every query
    w = w.expand(-1, roles.shape[1], -1)  # (B, T, T)
    return w[None, :, None].expand(num_layers, -1, num_heads, -1, -1)


def same_token_attention(
    attentions: Sequence[torch.Tensor] | torch.Tensor, input_ids: torch.Tensor, roles: torch.Tensor
) -> torch.Tensor:
    """(L, A): the weight a query of A puts on keys of B with the same token id (its twins),
    averaged over the queries that have one: does a word of A look at itself in B, as an alignment
    layer would?"""
    att = attentions if isinstance(attentions, torch.Tensor) else torch.stack(tuple(attentions))
    same = input_ids[:, :, None] == input_ids[:, None, :]  # (B, T, T): [query, key] hold one token
    same &= (roles == A)[:, :, None] & (roles == B)[:, None, :]
    has_twin = same.any(dim=-1)  # (B, T)
    if not has_twin.any():
        raise ValueError("no query token has a twin among the keys of the other role")
    on_twins = (att.float() * same[None, :, None]).sum(dim=-1)  # (L, B, A, T)
    return (on_twins * has_twin[None, :, None]).sum(dim=(1, 3)) / has_twin.sum()


STANDS_OUT = 3.0  # a head "stands out" when it puts this many times an even spread on the twins


def twin_reading(twins: torch.Tensor, even: float) -> str:
    """A sentence on `same_token_attention`'s (L, A) table: the strongest head against an even
    spread (`even`) and the median head; it stands out at STANDS_OUT times the even spread."""
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
