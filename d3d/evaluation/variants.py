"""Modes on another build of the same target, in the same benchmark run: `MODE@VARIANT`.

    ar@float32           plain decoding of the target in float32
    ar@int8  sync@int8   plain and D3D decoding with weight-only int8 projections (the run's dtype)
    tree@int8            tree decoding (also tree-drafter@..., tree-lookup@...) on the int8 target
    sync@float32+int8    a dtype and a weight format together

A variant names a dtype (`bfloat16`, `float16`, `float32`), a weight format (`dense`, `int8`), or
both joined by "+"; what it does not name is the run's. Each variant loads its own target (and
drafter) once, in a `Pipeline` beside the run's, with the run's drafter, block size and
verification length and tree branches; the run's precision setting when the dtype is the run's,
else `auto`.

Which output a mode is compared with:

- a speculative mode on a variant is lossless relative to that variant's target, so its
  `identical` and near-tie agreement compare it with `ar@VARIANT` (added to the run when missing);
- `ar@VARIANT` and `llamacpp` compute with other weights or kernels than the run's target: they
  are compared with the run's `ar` as agreement only (identical prompts, shared prefix), which is
  the quality cost of that dtype, of quantization or of llama.cpp (never counted as a divergence).

Every mode's speed is also given against the fastest plain decoding of the run (`ar` or any
`ar@VARIANT`), per token: `speedup_vs_fastest_plain` = the mode's tokens/s / the fastest plain
mode's tokens/s, so a speculative mode in bfloat16 is not flattered by a slow bfloat16 baseline.

This module knows nothing about the results file or the table.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from torch import Tensor

from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import DTYPES, Pipeline, load_target
from d3d.models.quantize import WEIGHT_FORMATS

SEPARATOR = "@"
VARIANT_BASES = ("ar", "sync", "async", "tree", "tree-drafter", "tree-lookup")  # modes that run on a variant's target
CROSS_TARGET_MODES = ("llamacpp",)  # compared with the run's ar as agreement only (besides ar@VARIANT)


def parse_variant(text: str) -> tuple[str | None, str | None] | None:
    """(dtype name or None, weight format or None) of a variant, or None if `text` is not one."""
    dtype = weights = None
    for part in text.split("+"):
        if part in DTYPES and dtype is None:
            dtype = part
        elif part in WEIGHT_FORMATS and weights is None:
            weights = part
        else:
            return None
    return dtype, weights


def split_variant(mode: str) -> tuple[str, str | None]:
    """("sync", "int8") for "sync@int8"; (mode, None) for any mode that is not on a variant."""
    base, _, suffix = mode.partition(SEPARATOR)
    if base in VARIANT_BASES and suffix and parse_variant(suffix) is not None:
        return base, suffix
    return mode, None


def with_references(modes: list[str]) -> list[str]:
    """`modes` with `ar@VARIANT` inserted before the first mode on each variant that lacks it."""
    out: list[str] = []
    for mode in modes:
        variant = split_variant(mode)[1]
        if variant is not None and f"ar{SEPARATOR}{variant}" not in out:
            out.append(f"ar{SEPARATOR}{variant}")
        out.append(mode)
    return list(dict.fromkeys(out))


def reference_of(mode: str) -> str:
    """The mode whose output `mode` must equal: `ar@VARIANT` on a variant, else the run's `ar`."""
    base, variant = split_variant(mode)
    return f"ar{SEPARATOR}{variant}" if variant is not None and base != "ar" else "ar"


def cross_target(mode: str) -> bool:
    """Whether `mode` runs another model than the run's target (agreement with ar only)."""
    base, variant = split_variant(mode)
    return mode in CROSS_TARGET_MODES or (variant is not None and base == "ar")


def pipeline_for(pipe: Pipeline, mode: str) -> Pipeline:
    """The pipeline a mode runs on: its variant's (loaded once, kept on `pipe`), else `pipe` itself."""
    variant = split_variant(mode)[1]
    if variant is None:
        return pipe
    cache = pipe.__dict__.setdefault("_variants", {})
    if variant not in cache:
        cache[variant] = _load_variant(pipe, variant)
    return cache[variant]


def _load_variant(pipe: Pipeline, variant: str) -> Pipeline:
    dtype_name, weights = parse_variant(variant)  # type: ignore[misc]
    run = pipe.target
    dtype = DTYPES[dtype_name] if dtype_name else run.dtype
    precision = run.model.precision if run.model is not None and dtype == run.dtype else "auto"
    compiled = getattr(run.model, "compiled", False)
    target = load_target(run.name, run.device, dtype, precision, weights or run.weights, compiled)
    other = Pipeline(target, pipe.drafter_spec, pipe.block_size, copy.copy(pipe.async_config), pipe.ar_drafter_spec,
                     pipe.ar_draft_tokens)
    other.draft_length = pipe.draft_length
    other.tree_branches = pipe.tree_branches
    return other


Runner = Callable[[Pipeline, Tensor, GenerationConfig], tuple[list[int], DecodeStats]]


def variant_runner(mode: str, base_runner: Runner) -> Runner:
    """A bench mode runner for `mode` = `BASE@VARIANT`: BASE's own runner (`base_runner`, e.g. tree
    decoding with one branch for tree-lookup) on the variant's pipeline."""

    def run(pipe: Pipeline, prompt_ids: Tensor, cfg: GenerationConfig) -> tuple[list[int], DecodeStats]:
        return base_runner(pipeline_for(pipe, mode), prompt_ids, cfg)

    return run


def close_variants(pipe: Pipeline) -> None:
    """Stop the drafting workers of every variant pipeline."""
    for other in pipe.__dict__.get("_variants", {}).values():
        other.close()


def agreement_with_ar(tokens: list[list[int]], ar_tokens: list[list[int]]) -> dict:
    """How far a cross-target mode's outputs follow the run's ar: identical prompts, and the mean
    share of ar's tokens produced before the first difference."""
    shares = []
    for out, ref in zip(tokens, ar_tokens):
        same = next((i for i, (a, b) in enumerate(zip(out, ref)) if a != b), min(len(out), len(ref)))
        shares.append(same / len(ref) if ref else 1.0)
    return {"identical_prompts": sum(o == r for o, r in zip(tokens, ar_tokens)),
            "shared_prefix": round(sum(shares) / len(shares), 4) if shares else None}


def add_fastest_plain(summary: dict) -> None:
    """Per mode: `speedup_vs_fastest_plain` against the fastest plain mode of the run (per token),
    and, when llama.cpp ran, `speedup_vs_llamacpp` (per token)."""
    plain = {m: s["tokens_per_s"] for m, s in summary.items() if split_variant(m)[0] == "ar" and s["tokens_per_s"]}
    fastest = max(plain, key=plain.get) if plain else None
    llama = summary.get("llamacpp", {}).get("tokens_per_s")
    for s in summary.values():
        rate = s["tokens_per_s"] or 0.0
        s["fastest_plain"] = fastest
        s["speedup_vs_fastest_plain"] = round(rate / plain[fastest], 4) if fastest else None
        if llama:
            s["speedup_vs_llamacpp"] = round(rate / llama, 4)
