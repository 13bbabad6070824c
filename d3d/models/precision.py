"""How a low-precision model keeps greedy decisions stable: the `Precision` setting and its names.

A k-row verification and a 1-row decode step take different kernels, so in bfloat16 their results
round differently and a near tie can flip an argmax (docs/design.md, "Precision and near ties").
Each switch removes one source of that difference; none changes what the model computes in exact
arithmetic (float64 tests), and each costs time (docs/runtime.md, "Precision switches").

The setting is a value passed to `load_target(..., precision=...)`, spelled on the command line as
a preset or a comma-separated list of switch names:

    auto   every switch below float32, none in float32 (the default)
    none   no switch (fastest; greedy speculative output leaves plain decoding at more near ties)
    all    every switch, whatever the dtype
    exact-logits,fp32-residual,fp32-attention,fixed-key-span   any subset, by name

The environment variables `D3D_PRECISION_FIXES=0` (as `none`) and `D3D_FIXED_KEY_SPAN=0` (drop
`fixed-key-span`) still override `auto`, for runs scripted before the setting existed.

This module knows nothing about models or passes; `decoder.py` reads the fields.

    precision = parse_precision("fp32-residual,exact-logits", torch.bfloat16)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import torch

from d3d.errors import D3DError

REFINE_TOP = 8  # logits recomputed in float32 per row; far more than a low-precision rounding can reorder
SWITCHES = {  # command-line name -> Precision field
    "exact-logits": "refine_top",
    "fp32-residual": "residual_fp32",
    "fp32-attention": "attention_fp32",
    "fixed-key-span": "fixed_key_span",
}
PRESETS = ("auto", "none", "all")


@dataclass(frozen=True)
class Precision:
    """Which rounding differences between passes of different sizes a low-precision model removes.

    All switches are no-ops in float32 arithmetic except for their cost.
    """

    residual_fp32: bool = False  # keep the residual stream in float32 (projections stay in the model dtype)
    attention_fp32: bool = False  # attention scores, softmax and weighted sum in float32 (the KV cache is float32)
    fixed_key_span: bool = False  # cached passes attend over the cache's whole capacity (masked), so a
    # row's attention does not depend on how many rows its pass has; a 1-row step and a k-row
    # verification can still round a row differently elsewhere (the projections' matrix products
    # depend on the row count), so their low-precision logits are close, not bit for bit alike
    refine_top: int = 0  # recompute each row's top-m logits exactly in float32 from a float32 final norm (0 = off)

    @staticmethod
    def for_dtype(dtype: torch.dtype) -> Precision:
        """The `auto` preset: every switch below float32, none in float32."""
        return Precision.all() if dtype in (torch.bfloat16, torch.float16) else Precision()

    @staticmethod
    def all() -> Precision:
        return Precision(residual_fp32=True, attention_fp32=True, fixed_key_span=True, refine_top=REFINE_TOP)

    def names(self) -> list[str]:
        """The switches that are on, by command-line name."""
        return [name for name, field in SWITCHES.items() if getattr(self, field)]

    def describe(self) -> str:
        """One word or list for logs and results keys: "none" or the names of the switches on."""
        return ",".join(self.names()) or "none"


def parse_precision(text: str | Precision | None, dtype: torch.dtype) -> Precision:
    """The Precision for a `--precision` value (a preset or switch names, module doc) in `dtype`;
    None means "auto". A D3DError names an unknown word."""
    if isinstance(text, Precision):
        return text
    words = [w.strip().lower() for w in (text or "auto").split(",") if w.strip()] or ["auto"]
    if words == ["auto"]:
        return _auto_with_overrides(dtype)
    if words == ["none"]:
        return Precision()
    if words == ["all"]:
        return Precision.all()
    unknown = [w for w in words if w not in SWITCHES]
    if unknown:
        raise D3DError(f"unknown precision switch '{unknown[0]}' (choose a preset {', '.join(PRESETS)} "
                       f"or switches {', '.join(SWITCHES)})")
    on = {SWITCHES[w] for w in words}
    return Precision(**{f.name: (REFINE_TOP if f.name == "refine_top" else True) if f.name in on else f.default
                        for f in fields(Precision)})


def _auto_with_overrides(dtype: torch.dtype) -> Precision:
    """`auto`, with the two legacy environment overrides (module doc)."""
    if os.environ.get("D3D_PRECISION_FIXES", "1") == "0":
        return Precision()
    auto = Precision.for_dtype(dtype)
    if os.environ.get("D3D_FIXED_KEY_SPAN", "1") == "0":
        return Precision(auto.residual_fp32, auto.attention_fp32, False, auto.refine_top)
    return auto
