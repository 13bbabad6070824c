"""Where one target step goes: per-op time of a k-row pass, the bytes it reads, the effective GB/s.

A one-token decode step of a small model on a CPU is bound by the bytes of weights it reads, so the
numbers that explain a step are: how long each kind of op takes (`torch.profiler`, self time, so
nested ops are not counted twice), how many bytes of weights and KV cache one pass reads, and the
rate that implies. Each size is timed without the profiler first (median of `repeats` passes after
`context` cached tokens, the cache cropped back after each), then profiled over the same passes.

This module knows nothing about drafting (and runs on the runtime of older commits too, to
profile "before"). `d3d cost --profile` prints one table per size, then one JSON line:

    d3d cost --profile --dtype bfloat16 [--weights int8] [--precision none] [--sizes 1,16]
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, dataclass

import torch
from torch.profiler import ProfilerActivity, profile

from d3d.inference.pass_costs import _timed_pass
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.models.quantize import weight_bytes

TOP_OPS = 15  # ops listed per table (the rest are summed into one line)


@dataclass
class OpTime:
    name: str  # aten op, e.g. "aten::mm"
    calls: float  # calls per pass
    ms: float  # self time per pass
    share: float  # of the profiled time per pass


@dataclass
class StepProfile:
    rows: int  # k: rows of the pass
    context: int  # cached tokens before it
    wall_ms: float  # median pass time, unprofiled
    weight_bytes: int  # bytes of weights one pass reads (`quantize.weight_bytes`)
    kv_bytes: int  # bytes of KV cache one pass reads (every layer's keys and values up to its end)
    gb_per_s: float  # (weight_bytes + kv_bytes) / wall time
    ops: list[OpTime]  # by self time, largest first


def _kv_bytes(model: DecoderModel, columns: int) -> int:
    s = model.spec
    element = torch.empty((), dtype=getattr(model, "cache_dtype", model.dtype)).element_size()  # older runtimes: no cache_dtype
    return 2 * len(model.layer_ids) * s.num_kv_heads * s.head_dim * columns * element


@torch.inference_mode()
def profile_step(model: DecoderModel, rows: int, context: int = 256, repeats: int = 20) -> StepProfile:
    """Time and profile `repeats` passes of `rows` rows after `context` cached tokens."""
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.spec.vocab_size, (1, context + rows), generator=gen).to(model.device)
    cache = model.new_cache(1, context + rows)
    model(Rows.clean(ids[:, :context], 0), cache, logits_from=context - 1)
    block = ids[:, context:]
    for _ in range(3):  # warm-up
        _timed_pass(model, cache, block)
    wall = statistics.median(_timed_pass(model, cache, block) for _ in range(repeats))
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if model.device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(repeats):
            _timed_pass(model, cache, block)
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total_us = sum(e.self_cpu_time_total for e in events) or 1.0
    ops = sorted((OpTime(e.key, e.count / repeats, e.self_cpu_time_total / repeats / 1e3, e.self_cpu_time_total / total_us)
                  for e in events), key=lambda op: -op.ms)
    weights, kv = weight_bytes(model), _kv_bytes(model, context + rows)
    return StepProfile(rows, context, wall * 1e3, weights, kv, (weights + kv) / wall / 1e9, ops)


def format_profile(p: StepProfile, top: int = TOP_OPS) -> str:
    """A table of the `top` ops by self time per pass, then the rest in one line."""
    head = (f"{p.rows}-row pass after {p.context} cached tokens: {p.wall_ms:.2f} ms, reads "
            f"{p.weight_bytes / 1e6:.1f} MB of weights + {p.kv_bytes / 1e6:.1f} MB of KV cache = {p.gb_per_s:.1f} GB/s")
    lines = [head, f"{'op':<40} {'calls':>7} {'ms':>8} {'share':>6}"]
    lines += [f"{op.name[:40]:<40} {op.calls:>7.1f} {op.ms:>8.3f} {op.share:>6.1%}" for op in p.ops[:top]]
    rest = p.ops[top:]
    if rest:
        lines.append(f"{f'({len(rest)} other ops)':<40} {sum(o.calls for o in rest):>7.1f} "
                     f"{sum(o.ms for o in rest):>8.3f} {sum(o.share for o in rest):>6.1%}")
    return "\n".join(lines)


def print_step_profiles(model: DecoderModel, sizes: list[int], context: int = 256, repeats: int = 20,
                        out=None) -> list[StepProfile]:
    """One table per pass size, then one JSON line (every op of every size); `out` is sys.stdout
    when None, read at call time so that a redirected stdout is honoured."""
    out = sys.stdout if out is None else out
    profiles = [profile_step(model, k, context, repeats) for k in sizes]
    precision = model.precision.describe() if hasattr(model.precision, "describe") else repr(model.precision)
    setting = (f"dtype {str(model.dtype).removeprefix('torch.')}, weights {getattr(model, 'weights', 'dense')}, "
               f"precision {precision}, {torch.get_num_threads()} threads")
    print(setting, file=out)
    for p in profiles:
        print("\n" + format_profile(p), file=out)
    print(json.dumps({"setting": setting, "profiles": [asdict(p) for p in profiles]}), file=out)
    return profiles
