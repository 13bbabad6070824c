"""Optional `torch.compile` of the per-layer math of a step (`--compile`); eager stays the default.

What is compiled is each layer's MLP and RMSNorms and the final norm: their elementwise chains
(SiLU times up, the norm's square-mean-rsqrt-scale) are what inductor fuses on a CPU. The rest
of the step stays eager Python on purpose: attention writes the KV cache and builds masks whose
shapes change every step, and the decode loops branch on host values. Shapes are marked dynamic,
so a new row count or context length does not recompile. The first pass of each new shape class
compiles (tens of seconds on a CPU); `d3d bench` and `d3d cost` warm up before timing.

Compiled and eager steps compute the same model; the rounding of fused kernels may differ in the
last bits, so a run compares compiled modes with compiled plain decoding only (one model per run).

This module knows nothing about decoding.

    compile_layers(model)   # in place; model.compiled == True
"""

from __future__ import annotations

from torch import nn


def compile_layers(model: nn.Module) -> nn.Module:
    """Compile (in place) every layer's MLP and norms and the final norm of a `DecoderModel`."""
    for layer in model.model.layers:
        for module in (layer.mlp, layer.input_layernorm, layer.post_attention_layernorm):
            module.compile(dynamic=True)
    model.model.norm.compile(dynamic=True)
    model.compiled = True
    return model
