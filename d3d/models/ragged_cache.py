"""A KV cache whose sequences have their own lengths: the runtime's cache for continuous batching.

`KVCache` keeps one column count for the whole batch, which fits sequences that advance in
lock step. When several requests share one forward pass, each accepts a different number of
drafted tokens per round, joins after a prefill of its own, and leaves when it finishes. This
cache gives every slot its own length:

- a pass writes the n new columns of slot r at `lengths[r] .. lengths[r] + n` (one scatter per
  layer), so every slot stays contiguous from column 0;
- `set_lengths` crops each slot separately after verification; columns past a slot's length are
  marked invalid, so the attention mask (`attention.build_mask`) ignores them;
- rows that pad a slot's pass (a slot with fewer new tokens than the widest) are written as
  invalid columns past its length and overwritten later;
- only the first `active` slots take part in a pass; `place` copies a batch-1 cache (a request's
  own prefill) into a slot and `release` moves the last active slot into the freed one, so the
  active slots stay the prefix [0, active);
- spans follow the live lengths, not the buffers: a fixed-span pass (`key_span`) attends over the
  longest live slot's end rounded up to SPAN_STEP columns, and once the longest slot fits a quarter
  of the buffers, `release` shrinks them (never below the initial capacity), so one long request
  does not make every later pass attend over, or the process keep, its whole length.

It implements the interface `decoder.DecoderModel` uses (`reserve`, `write_meta`, `write_layer`,
`layer_view`, `advance`, `length`, `has_padding`, `positions`, `valid`) and knows nothing about
tokens, requests or verification.

    cache = RaggedKVCache(num_layers, max_batch, num_kv_heads, head_dim, capacity, dtype, device)
    slot = cache.place(prefill_cache)          # a request joins
    model(Rows.clean(ids, starts, valid), cache)
    cache.set_lengths([...])                   # per-slot crop after verification
    cache.release(slot)                        # a request leaves
"""

from __future__ import annotations

import torch
from torch import Tensor

from d3d.models.kv_cache import KVCache, allocate_buffers

SPAN_STEP = 128  # a fixed-span pass attends over its end rounded up to this many columns

class RaggedKVCache:
    """Keys/values of up to `max_batch` sequences, each with its own length."""

    def __init__(
        self,
        num_layers: int,
        max_batch: int,
        num_kv_heads: int,
        head_dim: int,
        capacity: int = 256,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        # [L, max_b, h_kv, cap, d] twice, then [max_b, cap] positions and validity
        self._keys, self._values, self._positions, self._valid = allocate_buffers(
            num_layers, max_batch, num_kv_heads, head_dim, capacity, dtype, device)
        self.lengths: list[int] = []  # columns held by each active slot (host side, one per slot)
        self.initial_capacity = capacity  # the buffers never shrink below it
        self._offsets: Tensor | None = None  # [active, 1] lengths at the start of the current pass

    @property
    def has_padding(self) -> bool:
        """Whether a pass needs the explicit mask. One slot is a plain contiguous cache (every
        column before its length is valid), so it takes the same kernel paths as `KVCache`."""
        return self.active != 1

    @property
    def active(self) -> int:
        return len(self.lengths)

    @property
    def max_batch(self) -> int:
        return self._keys.shape[1]

    @property
    def capacity(self) -> int:
        return self._keys.shape[3]

    @property
    def batch(self) -> int:
        return self.active

    def key_span(self, end: int) -> int:
        """Key columns a fixed-span pass ending at column `end` attends over (`Precision.fixed_key_span`):
        `end` rounded up to SPAN_STEP, at most the capacity. It follows the live lengths, and within a
        step of columns it does not depend on how many rows the pass has."""
        return min(self.capacity, -(-end // SPAN_STEP) * SPAN_STEP)

    @property
    def length(self) -> int:
        """Columns any active slot reaches (a pass's keys span [0, length + new rows))."""
        return max(self.lengths, default=0)

    @property
    def positions(self) -> Tensor:
        return self._positions[: self.active]  # [active, cap]

    @property
    def valid(self) -> Tensor:
        return self._valid[: self.active]  # [active, cap]

    # -- the interface DecoderModel uses ---------------------------------------------------

    def reserve(self, extra: int) -> None:
        """Grow the buffers (doubling) so that `extra` more columns fit after the longest slot."""
        need = self.length + extra
        if need <= self.capacity:
            return
        grow = max(need, 2 * self.capacity) - self.capacity
        pad5 = (0, 0, 0, grow)
        self._keys = torch.nn.functional.pad(self._keys, pad5)
        self._values = torch.nn.functional.pad(self._values, pad5)
        self._positions = torch.nn.functional.pad(self._positions, (0, grow))
        self._valid = torch.nn.functional.pad(self._valid, (0, grow))

    def _columns(self, n: int) -> Tensor:
        """Column index [active, n] of each slot's n new columns."""
        if self._offsets is None:
            self._offsets = torch.tensor(self.lengths, device=self._keys.device).view(-1, 1)
        return self._offsets + torch.arange(n, device=self._keys.device)

    def _uniform(self) -> int | None:
        """The common length of all active slots, if they share one (then writes are slices)."""
        first = self.lengths[0] if self.lengths else 0
        return first if all(length == first for length in self.lengths) else None

    def write_meta(self, positions: Tensor, valid: Tensor | None) -> None:
        """Record positions [active, n] (and validity) of each slot's n new columns."""
        self._offsets = None
        start, n = self._uniform(), positions.shape[1]
        if start is not None:
            self._positions[: self.active, start : start + n] = positions
            self._valid[: self.active, start : start + n] = True if valid is None else valid
            return
        cols = self._columns(n)
        rows = torch.arange(self.active, device=cols.device).view(-1, 1)
        self._positions[rows, cols] = positions
        self._valid[rows, cols] = True if valid is None else valid

    def write_layer(self, layer: int, k: Tensor, v: Tensor) -> None:
        """Write k, v [active, h_kv, n, d] of one layer at each slot's own length."""
        start, n = self._uniform(), k.shape[2]
        if start is not None:
            self._keys[layer, : self.active, :, start : start + n] = k
            self._values[layer, : self.active, :, start : start + n] = v
            return
        cols = self._columns(n)
        rows = torch.arange(self.active, device=cols.device).view(-1, 1)
        dtype = self._keys.dtype  # float32 under fp32 attention: index_put does not cast as a slice write does
        self._keys[layer][rows, :, cols] = k.transpose(1, 2).to(dtype)  # indexed view: [active, n, h_kv, d]
        self._values[layer][rows, :, cols] = v.transpose(1, 2).to(dtype)

    def layer_view(self, layer: int, upto: int) -> tuple[Tensor, Tensor]:
        """Keys and values [active, h_kv, upto, d] of one layer's first `upto` columns."""
        return self._keys[layer, : self.active, :, :upto], self._values[layer, : self.active, :, :upto]

    def advance(self, n: int) -> None:
        """Every active slot took n new columns (padding included; `set_lengths` trims them)."""
        self.lengths = [length + n for length in self.lengths]
        self._offsets = None

    # -- per-slot bookkeeping ---------------------------------------------------------------

    def set_lengths(self, lengths: list[int]) -> None:
        """Crop each active slot to its own length (never longer than it is)."""
        if len(lengths) != self.active or any(not 0 <= new <= old for new, old in zip(lengths, self.lengths)):
            raise ValueError(f"cannot crop slots of lengths {self.lengths} to {lengths}")
        self.lengths = list(lengths)
        self._offsets = None
        keep = torch.arange(self.capacity, device=self._valid.device) < torch.tensor(lengths, device=self._valid.device).view(-1, 1)
        self._valid[: self.active] &= keep

    def place(self, single: KVCache) -> int:
        """Copy a batch-1 cache (a request's prefill) into a new slot; returns the slot index."""
        if self.active == self.max_batch:
            raise ValueError(f"all {self.max_batch} slots are taken")
        n = single.length
        self.lengths.append(0)
        self.reserve(n)
        slot = self.active - 1
        self._valid[slot] = False
        self._keys[:, slot, :, :n] = single.keys[:, 0, :, :n]
        self._values[:, slot, :, :n] = single.values[:, 0, :, :n]
        self._positions[slot, :n] = single.positions[0, :n]
        self._valid[slot, :n] = single.valid[0, :n]
        self.lengths[slot] = n
        self._offsets = None
        return slot

    def release(self, slot: int) -> int | None:
        """Free `slot`; the last active slot moves into it. Returns the index that moved there, if any."""
        last = self.active - 1
        if not 0 <= slot <= last:
            raise ValueError(f"slot {slot} is not active ({self.active} active)")
        moved = None
        if slot != last:
            n = self.lengths[last]
            self._keys[:, slot, :, :n] = self._keys[:, last, :, :n]
            self._values[:, slot, :, :n] = self._values[:, last, :, :n]
            self._positions[slot] = self._positions[last]
            self._valid[slot] = self._valid[last]
            self.lengths[slot] = n
            moved = last
        self._valid[last] = False
        self.lengths.pop()
        self._offsets = None
        self._shrink()
        return moved

    def _shrink(self) -> None:
        """Halve the buffers (repeatedly) while the longest live slot fits a quarter of them."""
        keep = self.capacity
        while 4 * self.length <= keep and keep // 2 >= self.initial_capacity:
            keep //= 2
        if keep == self.capacity:
            return
        self._keys = self._keys[:, :, :, :keep].clone()
        self._values = self._values[:, :, :, :keep].clone()
        self._positions = self._positions[:, :keep].clone()
        self._valid = self._valid[:, :keep].clone()


def new_ragged_cache(model, max_batch: int, capacity: int = 256) -> RaggedKVCache:
    """An empty ragged cache shaped for `model` (a `DecoderModel`)."""
    s = model.spec
    return RaggedKVCache(len(model.layer_ids), max_batch, s.num_kv_heads, s.head_dim, capacity, model.cache_dtype, model.device)
