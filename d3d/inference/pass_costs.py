"""Measured target pass costs t_v(k): what a k-row pass costs on this machine, in this dtype.

Speculative decoding trades one k-row verification for up to k tokens, so the adaptive
verification length (`draft_length.py`) needs t_v(k) for every k it may choose. Passes of all
sizes are timed interleaved (round-robin, median of repeats) after the same cached context, the
cache cropped back after each pass. `machine_pass_costs` caches the table per machine (CPU model or
GPU name, torch threads, torch version), target (its config) and dtype in
`~/.cache/d3d/pass_costs/`, so a run measures it once (a few seconds) and later runs read it.
A table measured while another job loaded the machine misleads every later run: `d3d cost --save`
(`save_machine_pass_costs`) measures it again and replaces it.

This module knows nothing about drafting or policy. `d3d cost` prints the same table.

    costs = machine_pass_costs(target.model)     # PassCosts; costs.seconds(16) / costs.seconds(1)
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

COST_SIZES = tuple(range(1, 17)) + (24, 32, 40, 48, 64)  # pass sizes of the cached table (k rows; 64: the largest token tree)
COST_CONTEXT = 256  # cached tokens before each timed pass
COST_REPEATS = 5  # timed passes per size (median)
CACHE_DIR = Path(os.environ.get("D3D_CACHE", Path.home() / ".cache" / "d3d")) / "pass_costs"


def interpolate_linear(points: dict[int, float], x: float) -> float:
    """points interpolated linearly at x; past either end, the slope of the nearest two points."""
    if x in points:
        return points[int(x)]
    xs = sorted(points)
    if len(xs) == 1:
        return points[xs[0]]
    if x < xs[0]:
        lo, hi = xs[0], xs[1]
    elif x > xs[-1]:
        lo, hi = xs[-2], xs[-1]
    else:
        lo = max(v for v in xs if v < x)
        hi = min(v for v in xs if v > x)
    return points[lo] + (points[hi] - points[lo]) * (x - lo) / (hi - lo)


@dataclass(frozen=True)
class PassCosts:
    """Median seconds of a k-row target pass, for the measured sizes k (linear in between)."""

    table: dict[int, float]  # k -> seconds, k >= 1

    def seconds(self, k: int) -> float:
        """t_v(k), interpolated linearly between measured sizes and extrapolated past the largest."""
        return interpolate_linear(self.table, k)

    def ratios(self) -> dict[int, float]:
        """t_v(k) / t_v(1) for every measured k."""
        base = self.seconds(1)
        return {k: s / base for k, s in sorted(self.table.items())}


def sync_device(device: torch.device) -> None:
    """Waits for the device's queued work (CUDA), so that a wall-clock interval covers it; a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed_pass(model: DecoderModel, cache, ids: torch.Tensor) -> float:
    start = cache.length
    sync_device(model.device)
    t = time.perf_counter()
    model(Rows.clean(ids, start), cache)
    sync_device(model.device)
    elapsed = time.perf_counter() - t
    cache.crop(start)
    return elapsed


@torch.inference_mode()
def measure_pass_costs(model: DecoderModel, sizes: list[int], context: int = COST_CONTEXT,
                       repeats: int = COST_REPEATS) -> dict[int, float]:
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


def machine_key(model: DecoderModel) -> str:
    """What a cached table must match: hardware, threads, torch, the target's shape, dtype and weight
    format (int8 and packed passes cost other times than dense ones; a dense key is as before)."""
    if model.device.type == "cuda":
        hardware = torch.cuda.get_device_name(model.device)
    else:
        hardware = _cpu_model() + f"/threads={torch.get_num_threads()}"
    spec = json.dumps(model.config.to_dict(), sort_keys=True, default=str)
    parts = [hardware, torch.__version__, str(model.dtype), str(model.device.type), spec, str(len(model.layer_ids)),
             repr(model.precision)]
    if getattr(model, "weights", "dense") != "dense":
        parts.append(f"weights={model.weights}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_pass_costs(model: DecoderModel, refresh: bool = False, log=None) -> PassCosts:
    """The cached t_v(k) table of this machine, target and dtype (measured once, then read)."""
    path = cache_path(model)
    if path.is_file() and not refresh:
        try:
            table = {int(k): float(v) for k, v in json.loads(path.read_text())["seconds"].items()}
            if set(COST_SIZES) <= set(table):  # a table from before sizes were added is measured again
                return PassCosts(table)
        except (ValueError, KeyError, TypeError):
            pass  # a torn or foreign file: measure again
    if log is not None:
        log(f"measuring target pass costs for k = 1..{max(COST_SIZES)} (once per machine and dtype): {path}")
    return save_machine_pass_costs(model)[1]


def cache_path(model: DecoderModel) -> Path:
    """Where this machine's table for `model` is cached."""
    return CACHE_DIR / f"{machine_key(model)}.json"


def save_machine_pass_costs(model: DecoderModel) -> tuple[Path, PassCosts]:
    """Measure the table now and replace the cached one (`d3d cost --save`: a table measured while
    another job loaded the machine misleads every later run until it is measured again)."""
    path = cache_path(model)
    table = measure_pass_costs(model, list(COST_SIZES))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"seconds": {str(k): v for k, v in table.items()}, "dtype": str(model.dtype),
                               "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
    tmp.replace(path)
    return path, PassCosts(table)


@torch.inference_mode()
def drafter_pass_seconds(drafter, target: DecoderModel, costs: PassCosts, repeats: int = COST_REPEATS) -> float:
    """t_d on a quiet machine: the drafter pass measured interleaved with a 1-row target step, as a
    ratio (so that other load on the machine cancels out), times the cached quiet t_v(1)."""
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, target.spec.vocab_size, (1, COST_CONTEXT + 1), generator=gen).to(target.device)
    cache = target.new_cache(1, COST_CONTEXT + 2)
    target(Rows.clean(ids[:, :COST_CONTEXT], 0), cache, logits_from=COST_CONTEXT - 1)
    ratios = []
    for _ in range(repeats):
        step = _timed_pass(target, cache, ids[:, COST_CONTEXT:])
        ratios.append(measure_drafter_pass(drafter, repeats=1) / step)
    return statistics.median(ratios) * costs.seconds(1)


@torch.inference_mode()
def measure_drafter_pass(drafter, context: int = COST_CONTEXT, repeats: int = COST_REPEATS) -> float:
    """Median seconds of one synchronous drafting pass (one block, one new clean token) after
    `context` cached tokens: the t_d of the verification-length policy. drafter: a `Drafter`."""
    gen = torch.Generator().manual_seed(0)
    vocab = drafter.model.spec.vocab_size
    ids = torch.randint(0, vocab, (1, context + 1), generator=gen).to(drafter.model.device)
    cache = drafter.new_cache()
    cache.reserve(context + 2)
    drafter.draft_logits(cache, ids[:, :context])
    times = []
    for _ in range(repeats + 1):
        cache.crop(context)
        sync_device(drafter.model.device)
        t = time.perf_counter()
        drafter.draft_logits(cache, ids)
        sync_device(drafter.model.device)
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])
