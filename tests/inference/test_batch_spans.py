"""Attention spans follow the live lengths (`ragged_cache.RaggedKVCache.key_span`, `_shrink`).

After one long request has left the batch, a fixed-span pass (`Precision.fixed_key_span`) attends
over the live slots' end rounded up to SPAN_STEP, not over the capacity the long request grew, the
buffers shrink back, and the logits are those of a pass without a fixed span (float64).
"""

from __future__ import annotations

import copy

import torch

from d3d.inference.batch_engine import BatchDecoder, verify_logits
from d3d.inference.engine import GenerationConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.precision import Precision
from d3d.models.ragged_cache import SPAN_STEP
from tests.helpers import greedy, prompt


def test_after_a_long_request_leaves_spans_follow_the_live_lengths(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir).double()
    target.precision = Precision(fixed_key_span=True)
    decoder = BatchDecoder(target, None, max_batch=2, capacity=2 * SPAN_STEP)
    long = decoder.add(prompt(1, 6), GenerationConfig(max_new_tokens=300), StopChecker(300))
    while len(long.generated) < 290:
        decoder.step()
    short = decoder.add(prompt(2, 5), GenerationConfig(max_new_tokens=40), StopChecker(40))
    while not long.finished:
        decoder.step()
    cache = decoder.target_cache
    assert cache.capacity == 2 * SPAN_STEP and cache.length < SPAN_STEP  # grown past 300 columns, given back
    spans = []
    view = cache.layer_view
    cache.layer_view = lambda layer, upto: spans.append(upto) or view(layer, upto)
    decoder.step()
    assert spans and set(spans) == {SPAN_STEP}  # not the capacity
    del cache.layer_view
    # the same pass over a copy of the cache without the fixed span: the same logits
    ids, pos = [short.committed[-1:]], [len(short.committed) - 1]
    plain = copy.deepcopy(target)
    plain.precision = Precision()
    with torch.inference_mode():
        want = verify_logits(plain, copy.deepcopy(cache), ids, pos)
        got = verify_logits(target, cache, ids, pos)
    assert torch.allclose(got, want, rtol=0, atol=1e-12)
    while decoder.running:
        decoder.step()
    assert short.generated == greedy(target, prompt(2, 5), max_new=40)
