"""The drafter's training objective: L = L_diff + lambda * L_AR (DESIGN.md "Training", paper eq. 3-7).

    L_diff = sum_k sum_j w_j l_{k,j} / sum_k sum_j w_j     over supervised block rows of one response
    w_j    = exp(-(j - 1) / gamma),  j = 1..B-1             (gamma = 7 at B = 16; default 7 * B / 16)

j is the drafted token a row predicts: block row j under same-position labels, row j-1 under
next-token labels (`d3d.models.drafter.label_offset`), so the weights follow the convention.
    L_AR   = mean next-token cross-entropy over the response tokens of the clean rows

Two variants share the same code. An AR drafter (classic speculative decoding's draft model) sets
the diffusion weight to 0: L = L_AR. Pruning recovery (DESIGN.md "Acceptance-guided pruning",
paper appendix A) adds distillation from a frozen teacher drafter run on the same rows:

    L_rec = L_diff + lambda * L_AR + L_KL,   L_KL = the position-weighted mean of KL(q~ || q)
    q~    = (1 - eta) q0 + eta e_y,   m = q0(y) - max_{v != y} q0(v),   eta = max(0, (delta - m) / (1 - m))

q0 is the teacher's distribution on a block row, y its label and q the student's: the adjusted
teacher q~ ranks y first by a margin of at least delta (exactly delta where it adjusts), so the
student is never distilled towards the teacher's mistakes.

Two more choices for the block rows (issue 16, "Training that spends the CPU well"):

    L_diff = ce_weight * L_CE + kd_weight * L_KD
    L_CE   = the position-weighted cross-entropy against the hard labels (the paper's L_diff)
    L_KD   = the same, against the target's stored top-k renormalised (soft labels, `topk_distill.py`)

(KD alone: ce 0, kd 1; PARD-2's mix: kd 10, ce 1), and the position weights: `exp` (the paper's
w_j above) or `survival`, where drafted token j is weighted by the chance that the drafter's own
block survives to it:

    w_j = prod_{i < j} q(y_i)      over the drafted tokens i of the same block (w_1 = 1)

with q(y_i) the drafter's current probability of the label of token i, detached (0 for a label
outside the drafting vocabulary). Tokens the drafter rarely reaches then cost little, and the
weights follow its acceptance as it learns (PARD-2, D-PACE).

Every term is defined per response (per packed example); a micro-batch of several examples averages
the per-example values, so an example counts the same whatever its length or batch mates.

The vocabulary projection runs in chunks of `chunk_rows` supervised rows, each under
`torch.utils.checkpoint`: the forward keeps only one scalar per row, and the backward recomputes
one chunk's logits at a time, so [rows, vocab] is never held for the whole packed sequence.
Only supervised rows are projected at all (anchor rows, padding and rows past a response are not).

With a drafting vocabulary (`VocabSubset`, the tokens `d3d draft-vocab` lets the drafter propose),
the projection and the softmax run over those rows of the LM head only: the drafter is trained for
exactly what it may propose, and on a small target the projection shrinks by vocab / subset (most
of the step's work). A label outside the subset cannot be drafted at all: it is dropped, and
counted (`LossParts.dropped`).

This module knows the packed batch layout and a `DecoderModel`; it knows nothing of optimisers,
data files or devices.

    parts = drafter_losses(model, batch, LossConfig(block_size=16, lambda_ar=1.0))
    parts.total.backward()
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.checkpoint import checkpoint

from d3d.models.decoder import DecoderModel
from d3d.models.drafter import causal_blocks, label_offset
from d3d.training.packing import IGNORE, PackedBatch
from d3d.training.topk_distill import SoftTargets, chunked_soft_cross_entropy, soft_targets

GAMMA_AT_16 = 7.0  # the paper's decay at B = 16 (from DFlash); scaled linearly with B
POSITION_WEIGHTING = ("exp", "survival")  # exp(-(j-1)/gamma) (the paper's), or the prefix-survival product


@dataclass(frozen=True)
class LossConfig:
    block_size: int = 16  # B
    lambda_ar: float = 1.0  # weight of L_AR; 0 = diffusion only (L_AR is still computed, detached, for logging)
    gamma: float | None = None  # position-weight decay; None = 7 * B / 16
    chunk_rows: int = 256  # rows per chunk of the vocabulary projection
    diffusion_weight: float = 1.0  # weight of L_diff; 0 = an AR drafter (L_diff computed detached, for logging)
    kd_delta: float = 0.01  # margin delta of the adjusted teacher (distillation only)
    labels: str = "same-position"  # label convention of the block rows (sets which row gets which weight)
    block_attention: str = "bidirectional"  # how block rows see each other (`d3d.models.drafter.BLOCK_ATTENTION`)
    ce_weight: float = 1.0  # weight of the block rows' hard-label cross-entropy L_CE within L_diff
    kd_weight: float = 0.0  # weight of distillation from the stored top-k L_KD within L_diff (needs top-k data)
    position_weighting: str = "exp"  # exp: exp(-(j-1)/gamma); survival: prod_{i<j} q(y_i), detached

    @property
    def decay(self) -> float:
        return self.gamma if self.gamma is not None else default_gamma(self.block_size)


def default_gamma(block_size: int) -> float:
    return GAMMA_AT_16 * block_size / 16


def position_weights(block_size: int, gamma: float, labels: str = "same-position") -> Tensor:
    """[B] weight per block row: exp(-(j-1)/gamma) for the row predicting drafted token j = 1..B-1, else 0.

    Same-position labels: row j predicts token j (the anchor row has weight 0); next-token labels:
    row j predicts token j+1 (the last row has weight 0).
    """
    j = torch.arange(block_size, dtype=torch.float64) + label_offset(labels)
    w = torch.exp(-(j - 1) / gamma)
    w[(j < 1) | (j > block_size - 1)] = 0.0
    return w


def survival_weights(p_correct: Tensor) -> Tensor:
    """[b, k, B] weight per block row: the product of `p_correct` over the rows before it in its block.

    p_correct: [b, k, B] the drafter's (detached) probability of each row's label; 1 on rows without
    a label (the anchor row under same-position labels, rows past the response), 0 where the label
    cannot be drafted. A block's rows run in the order of the drafted tokens under either label
    convention, so the row predicting drafted token j gets prod_{i<j} q(y_i) and token 1 gets 1.
    """
    first = p_correct.new_ones(p_correct.shape[:-1] + (1,))
    return torch.cumprod(torch.cat([first, p_correct[..., :-1]], -1), -1)


@dataclass
class VocabSubset:
    """The drafting vocabulary the loss projects onto (`Drafter.set_draft_vocab`'s ids)."""

    ids: Tensor  # [n] sorted token ids the drafter may propose
    index: Tensor  # [vocab] position of each token in `ids`, -1 for tokens outside

    @classmethod
    def from_ids(cls, ids: Tensor, vocab_size: int) -> VocabSubset:
        ids = torch.unique(torch.as_tensor(ids, dtype=torch.long).flatten())
        index = torch.full((vocab_size,), -1, dtype=torch.long)
        index[ids] = torch.arange(ids.numel())
        return cls(ids, index)

    def remap(self, labels: Tensor) -> tuple[Tensor, Tensor]:
        """Labels [...] as positions in the subset; (remapped, number dropped). IGNORE stays IGNORE."""
        supervised = labels != IGNORE
        mapped = self.index[labels.clamp_min(0)]
        dropped = supervised & (mapped < 0)
        return torch.where(supervised & ~dropped, mapped, IGNORE), dropped.sum()


@dataclass
class LossParts:
    """Loss values of one micro-batch (scalars) and what they were averaged over."""

    total: Tensor  # L_diff + lambda * L_AR, the value to differentiate
    diff: Tensor  # L_diff, mean over examples
    ar: Tensor  # L_AR, mean over examples (detached when lambda = 0)
    diff_rows: Tensor  # supervised block rows (int)
    ar_rows: Tensor  # response tokens with an AR loss (int)
    rows: Tensor  # real (unpadded) query rows of the pass (int)
    kl: Tensor | None = None  # L_KL against the teacher (distillation only)
    dropped: Tensor | None = None  # labels outside the drafting vocabulary, not trained (int; with a VocabSubset)
    kd: Tensor | None = None  # L_KD against the stored top-k, mean over examples (with kd_weight and top-k data)
    kd_rows: Tensor | None = None  # block rows with a soft label (int)
    kd_dropped: Tensor | None = None  # top-k entries outside the drafting vocabulary, dropped (int)

    def as_dict(self) -> dict[str, Tensor]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def drafter_losses(
    model: DecoderModel, batch: PackedBatch, cfg: LossConfig, teacher: DecoderModel | None = None,
    vocab: VocabSubset | None = None,
) -> LossParts:
    """Every loss part for one packed micro-batch; only the final hidden states are kept whole.

    With a `teacher` (a frozen drafter of the same vocabulary), L_KL is added to the total. With
    `vocab`, every projection runs over the drafting vocabulary only (labels outside it dropped).
    """
    rows = batch.rows(causal_blocks(cfg.block_attention))
    hidden = model.hidden_states(rows)  # [b, n, hidden]
    num_clean = batch.input_ids.shape[1]
    b, k, bs = batch.block_labels.shape
    loss_dtype = torch.promote_types(hidden.dtype, torch.float32)
    block_labels, ar_labels, dropped = batch.block_labels.reshape(b, k * bs), batch.ar_labels, None
    head = model.lm_head.weight
    if vocab is not None:
        (block_labels, dropped_diff), (ar_labels, dropped_ar) = vocab.remap(block_labels), vocab.remap(ar_labels)
        head, dropped = head[vocab.ids], dropped_diff + dropped_ar
    with torch.set_grad_enabled(torch.is_grad_enabled() and cfg.diffusion_weight != 0):
        block = block_losses(head, hidden[:, num_clean:], block_labels, batch, cfg, vocab)
    diff, weights, ce_weight = block.ce, block.weights, cfg.diffusion_weight * cfg.ce_weight
    ar_weights = torch.ones_like(ar_labels, dtype=loss_dtype)
    with torch.set_grad_enabled(torch.is_grad_enabled() and cfg.lambda_ar != 0):
        ar = weighted_example_mean(head, hidden[:, :num_clean], ar_labels, ar_weights, cfg.chunk_rows)
    terms = [w * t for w, t in ((ce_weight, diff), (cfg.lambda_ar, ar)) if w != 0]
    if block.kd is not None and cfg.diffusion_weight * cfg.kd_weight != 0:
        terms.append(cfg.diffusion_weight * cfg.kd_weight * block.kd)
    kl = None
    if teacher is not None:
        with torch.no_grad():
            teacher_hidden = teacher.hidden_states(rows)[:, num_clean:]
        teacher_head = teacher.lm_head.weight if vocab is None else teacher.lm_head.weight[vocab.ids]
        kl = weighted_example_mean(
            head, hidden[:, num_clean:], block_labels, weights, cfg.chunk_rows,
            teacher=(teacher_hidden, teacher_head, cfg.kd_delta),
        )
        terms.append(kl)
    return LossParts(
        total=sum(terms[1:], terms[0]) if terms else 0.0 * diff, diff=diff if ce_weight != 0 else diff.detach(),
        ar=ar.detach() if cfg.lambda_ar == 0 else ar,
        diff_rows=(block_labels != IGNORE).sum(), ar_rows=(ar_labels != IGNORE).sum(),
        rows=batch.valid.sum() + (batch.block_labels != IGNORE).any(-1).sum() * bs,  # padding blocks have no label
        kl=kl, dropped=dropped, kd=block.kd, kd_rows=block.kd_rows, kd_dropped=block.kd_dropped,
    )


@dataclass
class BlockLosses:
    """The block rows' loss terms of one micro-batch (n = k * B block rows per example)."""

    ce: Tensor  # L_CE against the hard labels, mean over examples
    weights: Tensor  # [b, n] the position weights used (exp or survival)
    kd: Tensor | None = None  # L_KD against the stored top-k, mean over examples (None: not asked, or no top-k)
    kd_rows: Tensor | None = None  # rows with a soft label (int)
    kd_dropped: Tensor | None = None  # top-k entries outside the drafting vocabulary (int)


def block_losses(head: Tensor, hidden: Tensor, labels: Tensor, batch: PackedBatch, cfg: LossConfig,
                 vocab: VocabSubset | None = None) -> BlockLosses:
    """L_CE (and, with kd_weight and top-k in the batch, L_KD) of the block rows, one projection per chunk.

    head: [vocab', h] the LM head rows projected onto; hidden: [b, n, h] the block rows' final hidden
    states; labels: [b, n] positions in `head` (IGNORE = no loss; remapped by `vocab` when given).
    """
    b, n = labels.shape
    picked = labels != IGNORE  # [b, n]
    example = torch.arange(b, device=labels.device)[:, None].expand_as(labels)[picked]  # [m]
    soft = _soft_targets(batch, picked, hidden, vocab) if cfg.kd_weight != 0 else None
    if soft is None:
        per_row = chunked_cross_entropy(hidden[picked], head, labels[picked], cfg.chunk_rows)[:, None]  # [m, 1]
    else:
        per_row = chunked_soft_cross_entropy(hidden[picked], head, labels[picked], soft, cfg.chunk_rows)  # [m, 2]
    weights = _block_weights(cfg, per_row[:, 0].detach(), picked, batch.block_labels.reshape(b, n) != IGNORE,
                             batch.block_labels.shape).to(per_row.dtype)  # [b, n]
    ce = example_mean(per_row[:, 0], example, weights[picked], b)
    if soft is None:
        return BlockLosses(ce, weights)
    kd = example_mean(per_row[soft.has, 1], example[soft.has], weights[picked][soft.has], b)
    return BlockLosses(ce, weights, kd, soft.has.sum(), soft.dropped)


def _soft_targets(batch: PackedBatch, picked: Tensor, hidden: Tensor, vocab: VocabSubset | None) -> SoftTargets | None:
    """Soft labels of the picked rows [b, n] from the batch's top-k (None when it carries none)."""
    if batch.block_topk_ids is None:
        return None
    b, n = picked.shape
    ids = batch.block_topk_ids.reshape(b, n, -1)[picked]  # [m, K]
    logprobs = batch.block_topk_logprobs.reshape(b, n, -1)[picked]
    dtype = torch.promote_types(hidden.dtype, torch.float32)
    return soft_targets(ids, logprobs, dtype, None if vocab is None else vocab.index)


def _block_weights(cfg: LossConfig, ce: Tensor, picked: Tensor, labelled: Tensor, shape: torch.Size) -> Tensor:
    """[b, n] position weights: exp(-(j-1)/gamma), or survival from the per-row cross-entropy `ce` [m]
    of the picked rows (q(y) = exp(-ce)); `labelled` [b, n] marks rows labelled before any vocabulary
    remapping, so a label outside the drafting vocabulary stops survival."""
    b, k, bs = shape
    if cfg.position_weighting == "exp":
        weights = position_weights(bs, cfg.decay, cfg.labels).to(ce.device, ce.dtype)
        return weights.expand(b, k, bs).reshape(b, k * bs)
    p_correct = torch.where(labelled, 0.0, 1.0).to(ce.device, ce.dtype)  # [b, n]
    p_correct[picked] = torch.exp(-ce)
    return survival_weights(p_correct.view(b, k, bs)).reshape(b, k * bs)


def adjusted_teacher(q0: Tensor, y: Tensor, delta: float) -> Tensor:
    """q~ = (1 - eta) q0 + eta e_y with eta = max(0, (delta - m) / (1 - m)), m = q0(y) - max_{v != y} q0(v).

    q0: [m, vocab] probabilities; y: [m] labels. Rows where y already leads by delta are unchanged;
    elsewhere y leads by exactly delta afterwards.
    """
    p_y = q0.gather(-1, y[:, None])[:, 0]
    others = q0.scatter(-1, y[:, None], float("-inf"))
    margin = p_y - others.max(-1).values
    eta = ((delta - margin) / (1 - margin).clamp_min(1e-12)).clamp_min(0.0)
    return (1 - eta)[:, None] * q0 + eta[:, None] * torch.nn.functional.one_hot(y, q0.shape[-1]).to(q0.dtype)


def weighted_example_mean(
    head: Tensor, hidden: Tensor, labels: Tensor, weights: Tensor, chunk_rows: int,
    teacher: tuple[Tensor, Tensor, float] | None = None,
) -> Tensor:
    """Mean over examples of sum(w * loss) / sum(w) over each example's labelled rows.

    head: [vocab, h] the LM head rows projected onto (labels index them); hidden: [b, n, h];
    labels: [b, n] (IGNORE = no loss); weights: [b, n]. The per-row loss is the
    cross-entropy, or with `teacher` = (teacher hidden [b, n, h], its LM head, delta) the KL from
    the adjusted teacher.
    """
    b = labels.shape[0]
    picked = labels != IGNORE  # [b, n]
    example = torch.arange(b, device=labels.device)[:, None].expand_as(labels)[picked]  # [m]
    if teacher is None:
        losses = chunked_cross_entropy(hidden[picked], head, labels[picked], chunk_rows)  # [m]
    else:
        t_hidden, t_head, delta = teacher
        losses = chunked_distillation(hidden[picked], head, t_hidden[picked], t_head, labels[picked],
                                      delta, chunk_rows)
    return example_mean(losses, example, weights[picked].to(losses.dtype), b)


def example_mean(losses: Tensor, example: Tensor, w: Tensor, b: int) -> Tensor:
    """Mean over the b examples of sum(w * loss) / sum(w) over each example's rows.

    losses, w: [m] per row; example: [m] the example each row belongs to. An example without rows
    does not count.
    """
    num = torch.zeros(b, dtype=losses.dtype, device=losses.device).index_add(0, example, w * losses)
    den = torch.zeros(b, dtype=losses.dtype, device=losses.device).index_add(0, example, w)
    has = (den > 0).to(num.dtype)  # an example without labelled rows does not count (no host sync)
    return (num / den.clamp_min(1e-12) * has).sum() / has.sum().clamp_min(1.0)


def chunked_cross_entropy(hidden: Tensor, weight: Tensor, labels: Tensor, chunk_rows: int) -> Tensor:
    """Per-row cross-entropy [m] of logits hidden @ weight.T, projected `chunk_rows` rows at a time.

    hidden: [m, h]; weight: [vocab, h] (the LM head); labels: [m]. Under autograd each chunk is
    checkpointed, so only one chunk's [chunk_rows, vocab] logits exist at any moment.
    """
    if hidden.shape[0] == 0:
        return hidden.new_zeros(0) + 0.0 * hidden.sum()
    chunk_rows = max(1, chunk_rows)
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    parts = []
    for start in range(0, hidden.shape[0], chunk_rows):
        h, y = hidden[start : start + chunk_rows], labels[start : start + chunk_rows]
        if grad:
            parts.append(checkpoint(_chunk_cross_entropy, h, weight, y, use_reentrant=False))
        else:
            parts.append(_chunk_cross_entropy(h, weight, y))
    return torch.cat(parts)


def chunked_distillation(
    hidden: Tensor, weight: Tensor, t_hidden: Tensor, t_weight: Tensor, labels: Tensor, delta: float, chunk_rows: int
) -> Tensor:
    """Per-row KL(q~ || q) [m], `chunk_rows` rows at a time (checkpointed like the cross-entropy)."""
    if hidden.shape[0] == 0:
        return hidden.new_zeros(0) + 0.0 * hidden.sum()
    grad = torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    parts = []
    for start in range(0, hidden.shape[0], max(1, chunk_rows)):
        end = start + max(1, chunk_rows)
        args = (hidden[start:end], weight, t_hidden[start:end], t_weight, labels[start:end], delta)
        parts.append(checkpoint(_chunk_distillation, *args, use_reentrant=False) if grad else _chunk_distillation(*args))
    return torch.cat(parts)


def _chunk_distillation(
    hidden: Tensor, weight: Tensor, t_hidden: Tensor, t_weight: Tensor, labels: Tensor, delta: float
) -> Tensor:
    dtype = torch.promote_types(hidden.dtype, torch.float32)  # float32 under mixed precision
    log_q = F.log_softmax(F.linear(hidden, weight).to(dtype), -1)
    with torch.no_grad():
        target = adjusted_teacher(F.softmax(F.linear(t_hidden, t_weight).to(dtype), -1), labels, delta)
    return F.kl_div(log_q, target, reduction="none").sum(-1)  # sum_v q~ (log q~ - log q)


def _chunk_cross_entropy(hidden: Tensor, weight: Tensor, labels: Tensor) -> Tensor:
    logits = F.linear(hidden, weight)  # [c, vocab], the only vocabulary-sized tensor
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()  # cross-entropy in float32 under mixed precision
    return F.cross_entropy(logits, labels, reduction="none")

