"""Measured pass costs: every reported t_v(k) is the median of real k-row passes over the same
cached context, timed interleaved; `PassCosts` interpolates between the sizes measured."""

from __future__ import annotations

import time

import pytest

from d3d.inference.pass_costs import PassCosts, measure_pass_costs
from d3d.models.decoder import load_decoder


def test_each_cost_is_the_median_of_real_passes_of_that_size(tiny_llama_dir):
    model = load_decoder(tiny_llama_dir)
    calls = []  # (start, end, rows, cached columns before the pass)
    forward = model.forward

    def logged(rows, cache=None, logits_from=0):
        before, start = cache.length, time.perf_counter()
        out = forward(rows, cache, logits_from)
        calls.append((start, time.perf_counter(), rows.num_rows, before))
        return out

    model.forward = logged
    sizes, context, repeats = [1, 3, 8], 20, 3
    costs = measure_pass_costs(model, sizes, context=context, repeats=repeats)
    assert list(costs) == sizes
    assert calls[0][2:] == (context, 0)  # the prefill of the context
    timed = calls[1:]
    assert [c[2] for c in timed] == sizes * (repeats + 1)  # a warm-up round, then interleaved repeats
    assert all(c[3] == context for c in timed)  # every pass sees the same cached context (cropped back)
    for k in sizes:
        index = [i for i, c in enumerate(timed) if c[2] == k][1:]  # the repeats, not the warm-up
        shortest = min(timed[i][1] - timed[i][0] for i in index)
        # a timed pass ends before the next one starts: its elapsed time is at most that gap
        longest = max((timed[i + 1][0] if i + 1 < len(timed) else time.perf_counter()) - timed[i][0] for i in index)
        assert shortest <= costs[k] <= longest + 1e-4, (k, shortest, costs[k], longest)


def test_pass_costs_interpolate_between_measured_sizes():
    costs = PassCosts({1: 1.0, 4: 2.5, 8: 4.5})
    assert costs.seconds(4) == 2.5 and costs.seconds(2) == pytest.approx(1.5) and costs.seconds(6) == pytest.approx(3.5)
    assert costs.seconds(12) == pytest.approx(6.5)  # past the table: the last slope
    assert costs.ratios() == {1: 1.0, 4: 2.5, 8: 4.5}


def test_the_cached_table_is_per_weight_format(tiny_llama_dir):
    """An int8 or packed target's passes cost other times: each format has its own cached table, and
    a dense target keeps the key it always had (tables measured before formats existed stay valid)."""
    from d3d.inference.pass_costs import machine_key
    from d3d.models.quantize import quantize_decoder

    dense = load_decoder(tiny_llama_dir)
    key = machine_key(dense)
    assert machine_key(load_decoder(tiny_llama_dir)) == key
    assert machine_key(quantize_decoder(load_decoder(tiny_llama_dir), "int8")) not in (key, None)
    dense.weights = "packed"  # the format's name is what the key reads
    assert machine_key(dense) != key
