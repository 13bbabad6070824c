"""The model flags that `d3d serve`, `d3d loadtest` and the soak test share.

Parsing only (argparse); importing it costs nothing. It knows nothing about what the flags load.
"""

from __future__ import annotations

import argparse

DTYPE_CHOICES = ("auto", "bfloat16", "float16", "float32")


def add_model_flags(p: argparse.ArgumentParser) -> None:
    """--target, --drafter, --dtype, --device."""
    p.add_argument("--target", default=None, help="hub id, local directory or .gguf (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--drafter", default=None, help="drafter directory (default: the one shipped for the target)")
    p.add_argument("--dtype", default="auto", choices=DTYPE_CHOICES, help="target dtype")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: cuda if available)")


def add_runtime_flags(p: argparse.ArgumentParser) -> None:
    """--precision and --weights: how the target computes (docs/runtime.md); also generate's, bench's and cost's."""
    p.add_argument("--precision", default="auto",
                   help="precision switches: auto (all below float32), none, all, or a comma list of exact-logits, "
                        "fp32-residual, fp32-attention, fixed-key-span (docs/runtime.md)")
    p.add_argument("--weights", default="auto", choices=["auto", "dense", "int8", "packed"],
                   help="int8: weight-only int8 projections (activations in --dtype) for the target and the drafter "
                        "(unless --drafter-weights says otherwise); that model is then the target of every mode. "
                        "packed: the dense bfloat16 weights prepacked for oneDNN on a CPU (the same logits bit for "
                        "bit, faster passes; needs --dtype bfloat16). auto (default): packed where it runs, else dense")


def add_drafter_weights_flag(p: argparse.ArgumentParser) -> None:
    """--drafter-weights: the drafter's runtime weight format (commands that load a drafter: generate, bench, serve)."""
    p.add_argument("--drafter-weights", default="auto", choices=["auto", "dense", "int8", "packed"],
                   help="the drafter's runtime weights: auto = the target's (--weights); int8 = weight-only int8 layer "
                        "projections (a shared LM head stays the target's); packed = prepacked bfloat16; int8 changes acceptance, "
                        "never the output (the target verifies every token)")
