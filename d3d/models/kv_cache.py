"""The native runtime's KV cache.

One preallocated buffer per model holds keys and values for every layer and a batch of
sequences, plus the position and validity of every cached column (left padding makes columns
invalid). Only clean (committed or speculatively committed) tokens are ever written; block rows
of a drafting pass are attended to but never cached. `crop` drops the tail after a rejection;
`keep_columns` keeps only the accepted path of a token tree, compacted to contiguous columns;
`keep_rows` drops finished sequences from a batch.

The cache knows nothing about tokens, drafting or verification: it stores tensors by column.
"""

from __future__ import annotations

import torch
from torch import Tensor


def allocate_buffers(
    num_layers: int, batch: int, num_kv_heads: int, head_dim: int, capacity: int, dtype: torch.dtype,
    device: torch.device | str,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Zeroed keys, values [L, b, h_kv, cap, d], positions [b, cap] (long) and validity [b, cap] (bool)."""
    shape = (num_layers, batch, num_kv_heads, capacity, head_dim)
    return (torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device),
            torch.zeros(batch, capacity, dtype=torch.long, device=device),
            torch.zeros(batch, capacity, dtype=torch.bool, device=device))


class KVCache:
    """Keys/values for `num_layers` layers and `batch` sequences sharing one column count."""

    def __init__(
        self,
        num_layers: int,
        batch: int,
        num_kv_heads: int,
        head_dim: int,
        capacity: int = 256,
        dtype: torch.dtype = torch.float32,
        device: torch.device | str = "cpu",
    ) -> None:
        self.keys, self.values, self.positions, self.valid = allocate_buffers(
            num_layers, batch, num_kv_heads, head_dim, capacity, dtype, device)
        self.length = 0
        self.has_padding = False

    @property
    def capacity(self) -> int:
        return self.keys.shape[3]

    def key_span(self, end: int) -> int:
        """Key columns a fixed-span pass ending at column `end` attends over (`Precision.fixed_key_span`):
        the whole capacity, which a decode run sizes once (prompt + budget + 1 in plain and speculative
        decoding alike), so that a 1-row step and a k-row verification see the same span."""
        return self.capacity

    @property
    def batch(self) -> int:
        return self.keys.shape[1]

    def reserve(self, extra: int) -> None:
        """Grow the buffers (doubling) so that `extra` more columns fit."""
        need = self.length + extra
        if need <= self.capacity:
            return
        new_cap = max(need, 2 * self.capacity)
        grow = new_cap - self.capacity
        pad5 = (0, 0, 0, grow)
        self.keys = torch.nn.functional.pad(self.keys, pad5)
        self.values = torch.nn.functional.pad(self.values, pad5)
        self.positions = torch.nn.functional.pad(self.positions, (0, grow))
        self.valid = torch.nn.functional.pad(self.valid, (0, grow))

    def write_meta(self, positions: Tensor, valid: Tensor | None) -> None:
        """Record positions [b, n] (and validity) of the n columns about to be appended."""
        n = positions.shape[1]
        self.positions[:, self.length : self.length + n] = positions
        if valid is None:
            self.valid[:, self.length : self.length + n] = True
        else:
            self.valid[:, self.length : self.length + n] = valid
            self.has_padding = self.has_padding or not bool(valid.all())

    def write_layer(self, layer: int, k: Tensor, v: Tensor) -> None:
        """Append k, v [b, h_kv, n, d] for one layer at the current length (length not advanced)."""
        n = k.shape[2]
        self.keys[layer, :, :, self.length : self.length + n] = k
        self.values[layer, :, :, self.length : self.length + n] = v

    def layer_view(self, layer: int, upto: int) -> tuple[Tensor, Tensor]:
        """Keys and values [b, h_kv, upto, d] of one layer's first `upto` columns."""
        return self.keys[layer, :, :, :upto], self.values[layer, :, :, :upto]

    def advance(self, n: int) -> None:
        self.length += n

    def crop(self, length: int) -> None:
        """Forget every column at index >= length (after a rejection, or a speculative write)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot crop a cache of length {self.length} to {length}")
        self.length = length

    def keep_columns(self, start: int, columns: list[int]) -> None:
        """Keep, of the columns from `start` on, only start + columns[i] (ascending), moved to start + i;
        forget the rest. After a token tree's pass this keeps the accepted path, contiguous. A
        path that is already contiguous (0, 1, ..., m-1) is a plain crop, no copy."""
        m = len(columns)
        if columns != list(range(m)):
            index = torch.tensor(columns, device=self.keys.device) + start
            self.keys[:, :, :, start : start + m] = self.keys.index_select(3, index)
            self.values[:, :, :, start : start + m] = self.values.index_select(3, index)
            self.positions[:, start : start + m] = self.positions.index_select(1, index)
            self.valid[:, start : start + m] = self.valid.index_select(1, index)
        self.crop(start + m)

    def keep_rows(self, rows: list[int]) -> None:
        """Keep only the sequences `rows` (ascending batch indices), in that order: a batch whose
        finished rows are dropped stops paying for them in every later pass."""
        if rows == list(range(self.batch)):
            return
        if not rows or rows != sorted(set(rows)) or rows[-1] >= self.batch:
            raise ValueError(f"rows to keep must be distinct ascending indices below {self.batch}: {rows}")
        index = torch.tensor(rows, device=self.keys.device)
        self.keys = self.keys.index_select(1, index)
        self.values = self.values.index_select(1, index)
        self.positions = self.positions.index_select(0, index)
        self.valid = self.valid.index_select(0, index)

    def reset(self) -> None:
        self.length = 0
        self.has_padding = False
