"""How much a k-token target pass costs relative to a 1-token decode step.

Speculative decoding's speedup is bounded by about tau / (cost of a B-token verification pass /
cost of a 1-token step), so this ratio is the ceiling on a given machine. Passes of all sizes are
timed interleaved (round-robin, median of repeats) on the same cached context, and the cache is
cropped back after each pass, so every pass sees the same prefix.

    d3d cost --sizes 1,2,4,8,16,32 --context 256
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel


def _timed_pass(model: DecoderModel, cache, ids: torch.Tensor) -> float:
    start = cache.length
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    t = time.perf_counter()
    model(Rows.clean(ids, start), cache)
    if model.device.type == "cuda":
        torch.cuda.synchronize(model.device)
    elapsed = time.perf_counter() - t
    cache.crop(start)
    return elapsed


@torch.inference_mode()
def measure_pass_costs(model: DecoderModel, sizes: list[int], context: int = 256, repeats: int = 20) -> dict[int, float]:
    """Median seconds of one pass of each size after `context` cached tokens (interleaved)."""
    gen = torch.Generator().manual_seed(0)
    vocab = model.spec.vocab_size
    prefix = torch.randint(0, vocab, (1, context), generator=gen).to(model.device)
    cache = model.new_cache(1, context + max(sizes))
    model(Rows.clean(prefix, 0), cache, logits_from=context - 1)
    block = torch.randint(0, vocab, (1, max(sizes)), generator=gen).to(model.device)
    times: dict[int, list[float]] = {k: [] for k in sizes}
    for k in sizes:  # warm-up
        _timed_pass(model, cache, block[:, :k])
    for _ in range(repeats):
        for k in sizes:
            times[k].append(_timed_pass(model, cache, block[:, :k]))
    return {k: statistics.median(v) for k, v in times.items()}


def report(costs: dict[int, float], out=sys.stdout) -> dict:
    base = costs[min(costs)]
    print(f"{'tokens':>6} {'ms':>9} {'x 1-token':>10}", file=out)
    for k, s in costs.items():
        print(f"{k:>6} {s * 1e3:>9.2f} {s / base:>10.2f}", file=out)
    result = {str(k): {"ms": round(s * 1e3, 3), "ratio": round(s / base, 3)} for k, s in costs.items()}
    print(json.dumps(result), file=out)
    return result
