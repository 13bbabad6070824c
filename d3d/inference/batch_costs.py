"""Measured costs of the batched engine's own passes: what a round of b sequences costs here.

The server's batch gate (`batch_engine.BatchGate`) decides whether the whole batch drafts by
comparing a drafting round with b plain steps, costed from the single-sequence table (`pass_costs`)
and the one-sequence drafter pass scaled by rows. That prices drafting rounds too cheap: with the
shipped drafter at blocks of 8, eight sequences, bfloat16 on 2 CPU cores, the drafting half of a
round (the batched drafter pass, 27.5 ms, and the eight sequences' proposals from it, 1.4 ms each,
which no pass table counts) took 34-40 ms where that model said 16 ms, and the verification pass
72-76 ms where it said 66 ms. This module times the three passes a round is made of through the
ragged caches the server runs (`batch_engine.verify_logits`, `batch_engine.batched_block_logits`):

    plain(b)       a plain step of b sequences (one row each)
    verify(b, w)   a verification pass of b sequences, w rows each (anchor + w - 1 drafted)
    draft(b)       the drafter's batched pass for b sequences (a block each, after two new tokens),
                   and each sequence's proposal from it (its tokens and their confidences)

for b in powers of two up to the largest batch and w in `WIDTHS` up to the block size, interleaved
(round-robin, median of repeats), each sequence after a different cached context (the ragged case).
Between the measured points the table is linear in b and in w. `d3d cost --batch N` prints it.
Two gates that read it instead were measured in session 35 and neither beat the shipped one under
load (`docs/serving.md`, "The batch gate's cost model"), so the server does not read it yet.

    costs = measure_batch_costs(target, drafter, max_batch=8)
    costs.round_gain(batch=8, width=5, appended=15)   # a drafting round's tokens/s over plain steps'
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from d3d.inference.batch_engine import batched_block_logits, new_ragged_cache, position_confidence, verify_logits
from d3d.inference.pass_costs import COST_CONTEXT, COST_REPEATS, interpolate_linear, sync_device
from d3d.models.attention import Rows

WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16)  # verification widths measured (those up to the block size)
CATCH_UP = 2  # committed tokens the drafter takes in before each block (a typical accepted run + anchor)
CONTEXT_STEP = 16  # sequence i is cached after COST_CONTEXT - i * CONTEXT_STEP tokens (ragged)


def batch_sizes(max_batch: int) -> list[int]:
    """The batch sizes measured: powers of two below max_batch, and max_batch itself."""
    sizes, b = [], 1
    while b < max_batch:
        sizes.append(b)
        b *= 2
    return sizes + [max_batch]


@dataclass(frozen=True)
class BatchCosts:
    """Median seconds of the batched engine's passes, for the measured batch sizes and widths."""

    verify_table: dict[int, dict[int, float]]  # b -> w -> seconds of a b x w verification pass (w = 1: a plain step)
    draft_table: dict[int, float]  # b -> seconds of the drafter's batched pass

    def verify(self, batch: int, width: int) -> float:
        """verify(b, w): bilinear in the measured (b, w) grid, extrapolated past its edges."""
        per_batch = {b: interpolate_linear(row, width) for b, row in self.verify_table.items()}
        return interpolate_linear(per_batch, batch)

    def plain(self, batch: int) -> float:
        """A plain step of `batch` sequences."""
        return self.verify(batch, 1)

    def draft(self, batch: int) -> float:
        """The drafter's batched pass for `batch` sequences."""
        return interpolate_linear(self.draft_table, batch)

    def round_gain(self, batch: int, width: int, appended: int) -> float:
        """A drafting round's tokens/s over plain steps': `appended` tokens for draft(b) + verify(b, w)
        against b tokens for plain(b)."""
        return appended / self.break_even(batch, width)

    def break_even(self, batch: int, width: int) -> float:
        """The tokens a drafting round of b sequences, w rows each, must append (over the batch) to
        match plain steps: where round_gain is 1."""
        return batch * (self.draft(batch) + self.verify(batch, width)) / self.plain(batch)

    def to_json(self) -> dict:
        return {"verify": {str(b): {str(w): s for w, s in row.items()} for b, row in self.verify_table.items()},
                "draft": {str(b): s for b, s in self.draft_table.items()}}


def _filled_cache(model, batch: int, capacity: int, ids: torch.Tensor, drafter=None):
    """A ragged cache of `batch` slots of `model` (the target, or `drafter`'s layers), slot i
    holding the first COST_CONTEXT - i * CONTEXT_STEP ids, filled as the batched engine fills it."""
    cache = new_ragged_cache(model, batch, capacity)
    for i in range(batch):
        n = max(8, COST_CONTEXT - i * CONTEXT_STEP)
        if drafter is None:
            single = model.new_cache(1, n)
            model(Rows.clean(ids[:, :n], 0), single, logits_from=n - 1)
        else:
            single = drafter.new_cache(n)
            model.hidden_states(Rows.clean(ids[:, :n], 0), single)
        cache.place(single)
    return cache


def _timed(device: torch.device, cache, run) -> float:
    """Seconds of run(), the cache cropped back to its lengths afterwards."""
    lengths = list(cache.lengths)
    sync_device(device)
    t = time.perf_counter()
    run()
    sync_device(device)
    elapsed = time.perf_counter() - t
    cache.set_lengths(lengths)
    return elapsed


@torch.inference_mode()
def measure_batch_costs(target, drafter, max_batch: int, repeats: int = COST_REPEATS) -> BatchCosts:
    """Time every (b, w) verification pass and every b-sequence drafter pass, interleaved."""
    block = drafter.block_size
    widths = [w for w in WIDTHS if w <= block]
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, target.spec.vocab_size, (1, COST_CONTEXT + block + CATCH_UP), generator=gen).to(target.device)
    capacity = COST_CONTEXT + block + CATCH_UP + 8
    passes = []  # (key, cache, run)
    for b in batch_sizes(max_batch):
        t_cache = _filled_cache(target, b, capacity, ids)
        anchor_pos = list(t_cache.lengths)
        for w in widths:
            blocks = [ids[0, : w].tolist()] * b

            def run_verify(c=t_cache, blk=blocks, pos=anchor_pos):
                verify_logits(target, c, blk, pos)
            passes.append((("verify", b, w), t_cache, run_verify))
        d_cache = _filled_cache(drafter.model, b, capacity, ids, drafter)
        new_tokens = [ids[0, length : length + CATCH_UP].tolist() for length in d_cache.lengths]
        d_pos = [length + CATCH_UP - 1 for length in d_cache.lengths]

        def run_draft(c=d_cache, new=new_tokens, pos=d_pos):
            logits = batched_block_logits(drafter, c, new, pos)
            for row in logits:  # each sequence's proposal, as `BatchDecoder._propose` makes it greedily
                row.argmax(-1)
                position_confidence(None, row)
        passes.append((("draft", b, 0), d_cache, run_draft))
    times: dict[tuple, list[float]] = {key: [] for key, _, _ in passes}
    for key, cache, run in passes:  # warm-up
        _timed(target.device, cache, run)
    for _ in range(repeats):
        for key, cache, run in passes:
            times[key].append(_timed(target.device, cache, run))
    verify: dict[int, dict[int, float]] = {}
    draft: dict[int, float] = {}
    for (kind, b, w), values in times.items():
        if kind == "verify":
            verify.setdefault(b, {})[w] = statistics.median(values)
        else:
            draft[b] = statistics.median(values)
    return BatchCosts(verify, draft)
