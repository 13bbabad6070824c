"""Distillation from the target's stored top-k (soft labels) for the drafter's block rows.

`d3d data --top-k-logits K` stores, for every response position i, the target's K likeliest tokens
and their log-probabilities at temperature 1: the distribution response[i] was drawn from. Packing
gives each labelled block row the top-k of the same response index as its label
(`packing.block_topk`). Here that top-k becomes a soft label:

    p_i   = exp(l_i) / sum_{i' kept} exp(l_i')          the top-k renormalised over its kept entries
    l_KD  = - sum_i p_i log q(t_i)                       per block row, q = the drafter's softmax

With a drafting vocabulary (`losses.VocabSubset`) q runs over those tokens only: top-k ids outside
it cannot be drafted, so they are dropped before renormalising and counted. A row whose top-k has
no kept entry gets no distillation term. When the top-k holds a single token with log-probability
0, l_KD is exactly the cross-entropy against that token.

The per-row hard and soft losses come from one projection of each chunk of rows (checkpointed like
`losses.chunked_cross_entropy`), so distillation costs no second [rows, vocab] pass. Weighting and
averaging over examples stay in `losses.py`. This module knows tensors only: no models, files or
optimisers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from d3d.training.packing import IGNORE


@dataclass
class SoftTargets:
    """The soft label of each supervised block row (m rows, K = top-k width)."""

    ids: Tensor  # [m, K] token positions in the projected LM head (0 on dropped or padding entries)
    probs: Tensor  # [m, K] the kept top-k renormalised to sum 1 per row (0 on dropped or padding entries)
    has: Tensor  # [m] bool: rows with at least one kept entry (the rows L_KD averages over)
    dropped: Tensor  # () int: top-k entries outside the drafting vocabulary


def soft_targets(topk_ids: Tensor, topk_logprobs: Tensor, dtype: torch.dtype,
                 vocab_index: Tensor | None = None) -> SoftTargets:
    """Renormalised soft labels from stored top-k: topk_ids [m, K] (IGNORE = padding), topk_logprobs [m, K].

    `vocab_index` [vocab] maps token ids to positions in the drafting vocabulary (-1 outside);
    entries outside are dropped and counted. The probabilities are computed in `dtype`.
    """
    keep = topk_ids != IGNORE
    ids = topk_ids.clamp_min(0)
    dropped = torch.zeros((), dtype=torch.long, device=ids.device)
    if vocab_index is not None:
        mapped = vocab_index[ids]
        outside = keep & (mapped < 0)
        dropped, keep, ids = outside.sum(), keep & ~outside, mapped.clamp_min(0)
    logprobs = topk_logprobs.to(dtype).masked_fill(~keep, float("-inf"))
    top = logprobs.amax(-1, keepdim=True).clamp_min(-1e30)  # finite even for a row with nothing kept
    weights = torch.exp(logprobs - top)  # 0 on dropped and padding entries
    total = weights.sum(-1, keepdim=True)
    return SoftTargets(ids, weights / total.clamp_min(1e-300), total[:, 0] > 0, dropped)


def chunked_soft_cross_entropy(
    hidden: Tensor, weight: Tensor, labels: Tensor, soft: SoftTargets, chunk_rows: int
) -> Tensor:
    """Per-row losses [m, 2]: the cross-entropy against the label, and against the soft label.

    hidden: [m, h]; weight: [vocab, h] (the LM head rows projected onto); labels: [m] (positions in
    `weight`). `chunk_rows` rows are projected at a time, each chunk checkpointed under autograd.
    """
    if hidden.shape[0] == 0:
        return hidden.new_zeros(0, 2, dtype=torch.promote_types(hidden.dtype, torch.float32)) + 0.0 * hidden.sum()
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    step, parts = max(1, chunk_rows), []
    for start in range(0, hidden.shape[0], step):
        end = start + step
        args = (hidden[start:end], weight, labels[start:end], soft.ids[start:end], soft.probs[start:end])
        parts.append(checkpoint(_chunk_soft_cross_entropy, *args, use_reentrant=False) if grad
                     else _chunk_soft_cross_entropy(*args))
    return torch.cat(parts)


def _chunk_soft_cross_entropy(hidden: Tensor, weight: Tensor, labels: Tensor, ids: Tensor, probs: Tensor) -> Tensor:
    dtype = torch.promote_types(hidden.dtype, torch.float32)  # float32 under mixed precision
    log_q = F.log_softmax(F.linear(hidden, weight).to(dtype), -1)  # [c, vocab], the only vocabulary-sized tensor
    hard = -log_q.gather(-1, labels[:, None])[:, 0]
    soft = -(probs.to(dtype) * log_q.gather(-1, ids)).sum(-1)
    return torch.stack([hard, soft], -1)
