"""Modes on another build of the same target, in the same benchmark run: `MODE@VARIANT`.

    ar@float32           plain decoding of the target in float32
    ar@int8  sync@int8   plain and D3D decoding with weight-only int8 projections (the run's dtype)
    tree@int8            tree decoding (also tree-drafter@..., tree-lookup@...) on the int8 target
    sync@float32+int8    a dtype and a weight format together

    sync@b8              D3D decoding drafting blocks of 8 with the run's drafter and target
    sync@int8+b8         ... on the int8 target

A variant names a dtype (`bfloat16`, `float16`, `float32`), a weight format (`dense`, `int8`), a
block size (`bN`: the drafter runs blocks of N rows, anchor included, as `--block-size N` does),
or several joined by "+"; what it does not name is the run's. Each variant loads its own drafter
(and, when it names a dtype or weight format, its own target) once, in a `Pipeline` beside the
run's, with the run's drafter, verification length and tree branches; the run's precision setting
when the dtype is the run's, else `auto`. A block-size-only variant shares the run's target, so
its reference is the run's `ar` and `ar@bN` is not a mode.

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
import re
from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from d3d.inference.engine import DecodeStats, GenerationConfig
from d3d.inference.pipeline import DTYPES, Pipeline, load_target
from d3d.models.quantize import WEIGHT_FORMATS

SEPARATOR = "@"
VARIANT_BASES = ("ar", "sync", "async", "tree", "tree-drafter", "tree-lookup")  # modes that run on a variant's target
CROSS_TARGET_MODES = ("llamacpp",)  # compared with the run's ar as agreement only (besides ar@VARIANT)


@dataclass(frozen=True)
class Variant:
    """What a `MODE@VARIANT` suffix changes; None keeps the run's setting."""

    dtype: str | None = None  # a DTYPES name
    weights: str | None = None  # a WEIGHT_FORMATS name
    block_size: int | None = None  # the drafter's block size B (bN)

    @property
    def same_target(self) -> bool:
        """Whether the variant runs the run's own target (it changes only the drafting)."""
        return self.dtype is None and self.weights is None


def parse_variant(text: str) -> Variant | None:
    """The variant a suffix names, or None if `text` is not one (each setting at most once)."""
    found: dict[str, object] = {}
    for part in text.split("+"):
        setting = _setting(part)
        if setting is None or setting[0] in found:
            return None
        found[setting[0]] = setting[1]
    return Variant(**found)  # type: ignore[arg-type]


def _setting(part: str) -> tuple[str, object] | None:
    """(Variant field, value) that one `+`-separated part of a suffix names, or None."""
    if part in DTYPES:
        return "dtype", part
    if part in WEIGHT_FORMATS:
        return "weights", part
    block = re.fullmatch(r"b(\d+)", part)
    if block and int(block.group(1)) >= 2:
        return "block_size", int(block.group(1))
    return None


def split_variant(mode: str) -> tuple[str, str | None]:
    """("sync", "int8") for "sync@int8"; (mode, None) for any mode that is not on a variant
    (`ar` on a block-size-only variant is not one: it would be the run's `ar` again)."""
    base, _, suffix = mode.partition(SEPARATOR)
    variant = parse_variant(suffix) if base in VARIANT_BASES and suffix else None
    if variant is not None and not (base == "ar" and variant.same_target):
        return base, suffix
    return mode, None


def own_reference(variant: str | None) -> bool:
    """Whether modes on `variant` are compared with `ar@VARIANT` (their own target), not the run's ar."""
    parsed = parse_variant(variant) if variant is not None else None
    return parsed is not None and not parsed.same_target


def with_references(modes: list[str]) -> list[str]:
    """`modes` with `ar@VARIANT` inserted before the first mode on each variant that lacks it."""
    out: list[str] = []
    for mode in modes:
        variant = split_variant(mode)[1]
        if own_reference(variant) and f"ar{SEPARATOR}{variant}" not in out:
            out.append(f"ar{SEPARATOR}{variant}")
        out.append(mode)
    return list(dict.fromkeys(out))


def reference_of(mode: str) -> str:
    """The mode whose output `mode` must equal: `ar@VARIANT` on a variant, else the run's `ar`."""
    base, variant = split_variant(mode)
    return f"ar{SEPARATOR}{variant}" if own_reference(variant) and base != "ar" else "ar"


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
    v = parse_variant(variant)
    assert v is not None
    run = pipe.target
    if v.same_target:
        target = run
    else:
        dtype = DTYPES[v.dtype] if v.dtype else run.dtype
        precision = run.model.precision if run.model is not None and dtype == run.dtype else "auto"
        compiled = getattr(run.model, "compiled", False)
        target = load_target(run.name, run.device, dtype, precision, v.weights or run.weights, compiled)
    block_size = v.block_size or pipe.block_size
    other = Pipeline(target, pipe.drafter_spec, block_size, copy.copy(pipe.async_config), pipe.ar_drafter_spec,
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
