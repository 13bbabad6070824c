"""Weight averaging of drafters that share an architecture (`d3d average`).

Two runs continued from one drafter on different data mixes often each gain where the other
loses; their weight average (a "model soup", or WiSE-FT's interpolation when one of them is the
starting point) can keep both gains at no training cost. The average is taken tensor by tensor in
float32 over the dense weights (int8-stored drafters are dequantized first), with the given
non-negative weights normalized to sum to 1. Integer tensors (the drafting vocabulary) must be
equal in every drafter and are copied. The result is a dense drafter directory; its acceptance
table must be measured again (`d3d eval-drafter --save`), since no input's table describes it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.models.drafter import CONFIG_NAME, WEIGHTS_NAME, read_drafter_config, read_weights
from d3d.models.weight_storage import write_weights
from d3d.training.export import DTYPES

AVERAGE_KEY = "d3d_average"  # provenance block in the averaged drafter's drafter_config.json
PROVENANCE = ("training", "draft_vocab", "pruning", "trained", "run_block_size")  # config fields saying how, not
# what: may differ (the average's run block size is unmeasured: 0, the trained one)


@dataclass
class AverageReport:
    """What `d3d average` wrote, for its summary line."""

    out: Path  # the written drafter directory
    drafters: list[str]  # the averaged drafters, in order
    weights: list[float]  # their normalized weights
    tensors: int  # floating tensors averaged
    size: int  # bytes of the written weights file


def normalized_weights(count: int, weights: list[float] | None) -> list[float]:
    """`weights` scaled to sum to 1 (equal weights when None); a D3DError for a bad list."""
    if count < 2:
        raise D3DError(f"averaging needs at least two drafters, got {count}")
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise D3DError(f"{len(weights)} weights for {count} drafters: give one weight per --drafter")
    if not all(math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
        raise D3DError(f"weights must be finite and non-negative with a positive sum, got {weights}")
    total = sum(weights)
    return [w / total for w in weights]


def check_same_architecture(drafters: list[Path]) -> dict:
    """The first drafter's config file contents; a D3DError if any drafter's architecture differs."""
    metas = []
    for path in drafters:
        read_drafter_config(path)  # a clear error for anything but a drafter directory
        metas.append(json.loads((path / CONFIG_NAME).read_text()))
    first = {k: v for k, v in metas[0]["drafter"].items() if k not in PROVENANCE}
    for path, meta in zip(drafters[1:], metas[1:]):
        if meta["model_config"] != metas[0]["model_config"]:
            raise D3DError(f"{path} and {drafters[0]} have different model configs: they cannot be averaged")
        mine = {k: v for k, v in meta["drafter"].items() if k not in PROVENANCE}
        if mine != first:
            diff = sorted(k for k in mine.keys() | first.keys() if mine.get(k) != first.get(k))
            raise D3DError(f"{path} and {drafters[0]} differ in drafter settings ({', '.join(diff)}): "
                           "they cannot be averaged")
    return metas[0]


def average_states(states: list[dict[str, Tensor]], weights: list[float], names: list[str]) -> dict[str, Tensor]:
    """The weighted float32 average of floating tensors; integer tensors checked equal and copied."""
    keys = states[0].keys()
    for state, name in zip(states[1:], names[1:]):
        if state.keys() != keys:
            missing = sorted(keys ^ state.keys())[:3]
            raise D3DError(f"{name} and {names[0]} hold different tensors (e.g. {', '.join(missing)})")
    out = {}
    for key in keys:
        values = [s[key] for s in states]
        if any(v.shape != values[0].shape for v in values):
            raise D3DError(f"tensor {key} has different shapes across the drafters: they cannot be averaged")
        if values[0].is_floating_point():
            out[key] = sum(w * v.float() for w, v in zip(weights, values))
        elif all(torch.equal(v, values[0]) for v in values):
            out[key] = values[0]
        else:
            raise D3DError(f"integer tensor {key} (e.g. the drafting vocabulary) differs between the drafters")
    return out


def average_drafters(drafters: list[str], out: str, weights: list[float] | None = None,
                     dtype: str = "float32") -> AverageReport:
    """Write the weighted average of `drafters` as a dense drafter directory at `out` (module docstring)."""
    if dtype not in DTYPES:
        raise D3DError(f"unknown dtype '{dtype}' ({', '.join(DTYPES)})")
    paths = [Path(d) for d in drafters]
    norm = normalized_weights(len(paths), weights)
    meta = check_same_architecture(paths)
    target = Path(out)
    if any(target.resolve() == p.resolve() for p in paths):
        raise D3DError(f"--out {target} is one of the averaged drafters: write into another directory")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise D3DError(f"--out {target} exists and is not an empty directory")
    states = [read_weights(p / WEIGHTS_NAME) for p in paths]
    state = average_states(states, norm, [str(p) for p in paths])
    target.mkdir(parents=True, exist_ok=True)
    write_weights(target / WEIGHTS_NAME, state, "dense", DTYPES[dtype])
    meta["drafter"]["run_block_size"] = 0  # a speed measured on the inputs does not describe the average
    meta[AVERAGE_KEY] = {"drafters": [str(p) for p in paths], "weights": norm, "dtype": dtype}
    (target / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    floating = sum(1 for v in state.values() if v.is_floating_point())
    return AverageReport(target, [str(p) for p in paths], norm, floating, (target / WEIGHTS_NAME).stat().st_size)
