"""Query rows of a mixed pass and the attention mask they imply (docs/design.md "Drafter attention").

A forward pass of the native runtime takes `Rows`: first `num_clean` clean rows (causal; written
to the KV cache), then any number of block rows (never cached). One rule covers every pattern the
project needs (plain decoding, verification, one-pass drafting, packed training, packed successor
drafting):

    a query row sees a clean key  iff  key is valid and key_pos < limit(row)
    a query row sees a block key  iff  both rows belong to the same block

with limit = position + 1 for a clean row (causal) and limit = anchor position for a block row
(strictly before the anchor; the block's own anchor row supplies the anchor token). Block rows
therefore never see another block, nor clean tokens at or after their anchor. Blocks are
bidirectional by default (the paper's); `causal_blocks` narrows the second line to block keys at
positions <= the row's own (the causal-block drafter, whose block pass is then exactly a plain
causal pass over prefix + anchor + masks). A layer with a sliding window (Mistral) also hides
clean keys at positions <= row position - window.

A token tree (`Rows.tree`, tree verification in `d3d/inference/tree_engine.py`) is a pass of clean
rows whose positions repeat (siblings share a depth), with an explicit `ancestors` matrix: among the
pass's own rows a row sees only itself and its ancestors (`limit_to_ancestors`); the cached prefix
stays causal as above.

`AttentionProbe` is the one place that materialises attention probabilities: for a few chosen query
rows (the selective-prefill probe, `d3d/inference/prefill.py`) it sums them over heads and layers.
Every other pass keeps the fused attention kernel and never builds them.

This module knows nothing about weights or tokens; it only builds index tensors and masks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class Rows:
    """Query rows of one forward pass: clean rows first, then block rows."""

    input_ids: Tensor  # [b, n] token ids
    positions: Tensor  # [b, n] absolute positions (RoPE)
    num_clean: int  # rows [0, num_clean) are clean and get cached
    limits: Tensor | None = None  # [b, n] a row sees clean keys with pos < limit; None = causal, clean only
    groups: Tensor | None = None  # [b, n] block id per row, -1 for clean rows; None = all clean
    valid: Tensor | None = None  # [b, n] False for padding rows; None = all valid
    causal_blocks: bool = False  # a block row sees only its block's rows up to itself (False: the whole block)
    ancestors: Tensor | None = None  # [b, n, n] bool: clean row i sees this pass's row j iff [., i, j] (a tree); None = causal

    @property
    def num_rows(self) -> int:
        return self.input_ids.shape[1]

    @property
    def has_blocks(self) -> bool:
        return self.num_rows > self.num_clean

    @staticmethod
    def clean(input_ids: Tensor, start: int | Tensor, valid: Tensor | None = None) -> Rows:
        """Causal rows for ids [b, n] at positions start.. (start: int or [b] tensor)."""
        b, n = input_ids.shape
        offsets = torch.arange(n, device=input_ids.device)
        start_t = torch.as_tensor(start, device=input_ids.device).reshape(-1, 1)
        positions = (start_t + offsets).expand(b, n)
        return Rows(input_ids, positions, n, valid=valid)

    @staticmethod
    def tree(input_ids: Tensor, positions: Tensor, ancestors: Tensor) -> Rows:
        """Clean rows of a token tree: ids [b, n] at positions [b, n] (root's position + depth), each
        seeing the cached prefix and, among these rows, only ancestors [b, n, n] (self included)."""
        return Rows(input_ids, positions, input_ids.shape[1], ancestors=ancestors)

    @staticmethod
    def with_blocks(clean: Rows, blocks: Tensor, anchor_pos: Tensor, causal: bool = False) -> Rows:
        """Append k blocks [b, k, B] whose anchors sit at positions anchor_pos [b, k]; `causal`: each
        block row sees its block's rows up to itself only (`causal_blocks`)."""
        b, k, bs = blocks.shape
        dev = blocks.device
        offs = torch.arange(bs, device=dev)
        blk_pos = (anchor_pos[..., None] + offs).reshape(b, k * bs)
        blk_lim = anchor_pos[..., None].expand(b, k, bs).reshape(b, k * bs)
        blk_grp = torch.arange(k, device=dev)[:, None].expand(k, bs).reshape(1, k * bs).expand(b, -1)
        nc = clean.num_rows
        return Rows(
            input_ids=torch.cat([clean.input_ids, blocks.reshape(b, k * bs)], 1),
            positions=torch.cat([clean.positions, blk_pos], 1),
            num_clean=nc,
            limits=torch.cat([clean.row_limits(), blk_lim], 1),
            groups=torch.cat([clean.row_groups(), blk_grp], 1),
            valid=None if clean.valid is None else torch.cat([clean.valid, torch.ones_like(blk_pos, dtype=torch.bool)], 1),
            causal_blocks=causal,
        )

    def row_limits(self) -> Tensor:
        return self.positions + 1 if self.limits is None else self.limits

    def row_groups(self) -> Tensor:
        if self.groups is None:
            return torch.full_like(self.positions, -1)
        return self.groups

    def row_valid(self) -> Tensor:
        if self.valid is None:
            return torch.ones_like(self.positions, dtype=torch.bool)
        return self.valid


def build_mask(
    rows: Rows,
    key_positions: Tensor,
    key_groups: Tensor,
    key_valid: Tensor,
    window: int | None = None,
) -> Tensor:
    """Boolean mask [b, 1, n, K] (True = attend) for `rows` over K keys.

    key_positions, key_groups, key_valid: [b, K]; key_groups is -1 for clean keys. A sliding
    `window` (Mistral) also hides clean keys at positions <= row position - window.
    """
    lim = rows.row_limits()[:, :, None]  # [b, n, 1]
    grp = rows.row_groups()[:, :, None]  # [b, n, 1]
    kpos, kgrp, kval = key_positions[:, None, :], key_groups[:, None, :], key_valid[:, None, :]
    sees_clean = (kgrp < 0) & kval & (kpos < lim)
    if window is not None:
        sees_clean = sees_clean & (kpos > rows.positions[:, :, None] - window)
    sees_block = (grp >= 0) & (kgrp == grp)
    if rows.causal_blocks:  # a block's positions rise with its rows: position order is row order
        sees_block = sees_block & (kpos <= rows.positions[:, :, None])
    mask = sees_clean | sees_block
    # A padding query row would otherwise see nothing and produce NaN; let it see everything.
    mask = mask | ~rows.row_valid()[:, :, None]
    return mask[:, None]


def limit_to_ancestors(mask: Tensor, rows: Rows, first_column: int) -> Tensor:
    """mask [b, 1, n, K] with this pass's own clean columns [first_column, first_column + n) narrowed
    to `rows.ancestors` (a token tree); unchanged when the rows are not a tree."""
    if rows.ancestors is None:
        return mask
    n = rows.num_clean
    own = mask[:, :, :, first_column : first_column + n] & rows.ancestors[:, None]
    return torch.cat([mask[:, :, :, :first_column], own, mask[:, :, :, first_column + n :]], -1)


class AttentionProbe:
    """Attention probabilities of a few query rows of one pass, summed over heads and layers.

    The decoder calls `record` once per layer (see `PassContext`); the fused kernel still computes
    the layer's output, so recording changes nothing in the pass. After the pass `mass[b, r, k]`
    is the attention row r of sequence b put on key column k, summed over all heads of the
    recorded layers (each head's row sums to 1, so a row's total is heads * layers). `layers`
    (indices within the model's kept layers; None = all) limits which layers count;
    `keep_heads` also keeps each recorded layer's per-head probabilities in `by_layer`
    (calibration: which layers and heads retrieve). A layer passing no mask (a plain causal
    pass) lets every row see every key: record only the pass's last rows then.
    """

    def __init__(self, rows: Tensor, layers: frozenset[int] | None = None, keep_heads: bool = False) -> None:
        self.rows = rows  # [r] long: indices of the recorded query rows within the pass
        self.layers = layers  # layer indices that count (None: every layer)
        self.keep_heads = keep_heads  # keep per-layer, per-head probabilities in `by_layer`
        self.mass: Tensor | None = None  # [b, r, K] float32, summed so far; None before the first layer
        self.by_layer: dict[int, Tensor] = {}  # layer -> [b, h, r, K] float32 (keep_heads only)

    def record(self, q: Tensor, keys: Tensor, mask: Tensor | None, layer: int) -> None:
        """Add one layer. q: [b, h, n, d]; keys: [b, h_kv, K, d]; mask: [b, 1, n, K] bool or None
        (all visible); layer: its index within the model's kept layers."""
        if self.layers is not None and layer not in self.layers:
            return
        heads, kv_heads, dim = q.shape[1], keys.shape[1], q.shape[-1]
        q_rows = q[:, :, self.rows].float()  # [b, h, r, d]
        k_all = keys.float().repeat_interleave(heads // kv_heads, dim=1)  # [b, h, K, d], as enable_gqa pairs them
        logits = q_rows @ k_all.transpose(-1, -2) / dim**0.5  # [b, h, r, K]
        if mask is not None:
            logits = logits.masked_fill(~mask[:, :, self.rows], float("-inf"))
        probs = logits.softmax(-1)  # [b, h, r, K]
        if self.keep_heads:
            self.by_layer[layer] = probs
        layer_mass = probs.sum(1)  # [b, r, K]
        self.mass = layer_mass if self.mass is None else self.mass + layer_mass
