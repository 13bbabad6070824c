"""The batched engine's measured pass costs (`batch_costs.py`, `d3d cost --batch N`).

- The table interpolates linearly in the batch and in the width, and extrapolates past its edges.
- A round's gain is its tokens/s over plain steps' from the three batched passes.
- Measuring times every (batch, width) verification pass and every drafter pass, through the ragged
  caches, for the batch sizes and widths the table promises.
"""

from __future__ import annotations

import pytest
import torch

from d3d.inference.batch_costs import BatchCosts, batch_sizes, measure_batch_costs
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID


def linear_table(block: int = 8) -> BatchCosts:
    """verify(b, w) = 10 + b w, draft(b) = 2 + b: linear, so interpolation must be exact."""
    sizes = [1, 2, 4, 8]
    return BatchCosts({b: {w: 10.0 + b * w for w in (1, 2, 4, block)} for b in sizes}, {b: 2.0 + b for b in sizes})


def test_batch_sizes_are_powers_of_two_then_the_largest():
    assert batch_sizes(1) == [1]
    assert batch_sizes(8) == [1, 2, 4, 8]
    assert batch_sizes(6) == [1, 2, 4, 6]


def test_the_table_is_bilinear_between_and_past_its_points():
    table = linear_table()
    assert table.verify(3, 3) == pytest.approx(10 + 9)  # between measured batches and widths
    assert table.verify(8, 6) == pytest.approx(10 + 48)
    assert table.verify(12, 8) == pytest.approx(10 + 96)  # past the largest batch: the last slope
    assert table.plain(5) == pytest.approx(15)
    assert table.draft(6) == pytest.approx(8) and table.draft(16) == pytest.approx(18)


def test_a_rounds_gain_is_its_rate_over_plain_steps():
    table = linear_table()
    # 4 sequences, width 4: draft 6 + verify 26 = 32 s for 12 tokens; plain steps: 14 s for 4 tokens
    assert table.round_gain(4, 4, 12) == pytest.approx((12 / 32) / (4 / 14))


@pytest.fixture(scope="module")
def pair(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target, dtype=torch.float32)
    return target, drafter


def test_measuring_times_every_pass_of_the_batched_engine(pair):
    target, drafter = pair
    costs = measure_batch_costs(target, drafter, max_batch=3, repeats=1)
    assert sorted(costs.verify_table) == [1, 2, 3] and sorted(costs.draft_table) == [1, 2, 3]
    for row in costs.verify_table.values():
        assert sorted(row) == [1, 2, 3, 4]  # widths up to the block size only
        assert all(s > 0 for s in row.values())
    assert all(s > 0 for s in costs.draft_table.values())
