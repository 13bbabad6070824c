"""Weight-only int8: fewer bytes per decode step, activations unchanged.

On a CPU a one-token step of a small model is bound by the bytes of weights it reads, so storing the
projections as int8 (one byte per weight instead of two) makes it cheaper. `quantize_decoder`
replaces every projection of a `DecoderModel` (the fused QKV, output, fused gate/up, down
projections and, unless told otherwise, the LM head) by an `Int8Linear`:

    w[o, i] ~= q[o, i] * scale[o],   q int8 in [-127, 127],   scale = max_i |w[o, i]| / 127

(per output channel, symmetric, rounded to nearest). Activations keep the model's dtype
(bfloat16 by default). On a CPU the product runs in torch's own int8 weight kernel
(`torch.ops.aten._weight_int8pack_mm`); elsewhere (CUDA, float64) it dequantizes on the fly.

The quantized model *is* the target of a run that asks for it: plain decoding and every speculative
mode use the same int8 weights, so greedy identity and the sampling distribution hold relative to
it, and the quality cost of quantization is measured separately (agreement with the dense target).
The token embeddings stay dense (a step reads one row of them). int4 is not offered: torch's CPU
int4 kernel (`_weight_int4pack_mm_for_cpu`) exists but needs group-wise scales and zero points and
a packed layout; that is left for later.

`quantize_decoder` also applies the third weight format, "packed" (dense bfloat16 weights prepacked
for oneDNN on a CPU, `packed.py`), which changes time only.

This module knows nothing about drafting or decoding.

    quantize_decoder(model, "int8")          # in place; model.weights == "int8"
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from d3d.errors import D3DError
from d3d.models.packed import check_packing, pack_decoder, packing_available, replace_projections

WEIGHT_FORMATS = ("dense", "int8", "packed")  # the runtime weight formats ("packed": `packed.py`)
WEIGHT_CHOICES = ("auto", *WEIGHT_FORMATS)  # values of every --weights flag: auto = packed where it runs, else dense
INT8_MAX = 127
KERNEL_DTYPES = (torch.float32, torch.bfloat16, torch.float16)  # activation dtypes of the CPU kernel


class Int8Linear(nn.Module):
    """A bias-optional linear layer with int8 weights [out, in] and per-output-channel scales [out]."""

    def __init__(self, qweight: Tensor, scale: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.register_buffer("qweight", qweight)  # [out, in] int8
        self.register_buffer("scale", scale)  # [out] in the activation dtype
        self.bias = None if bias is None else nn.Parameter(bias, requires_grad=False)  # [out]
        self.in_features, self.out_features = qweight.shape[1], qweight.shape[0]

    @classmethod
    def from_linear(cls, linear: nn.Linear) -> Int8Linear:
        """Quantize a dense layer (scales from its float32 weights, kept in its dtype)."""
        q, scale = quantize_rows(linear.weight.detach())
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(q, scale.to(linear.weight.dtype), bias)

    def forward(self, x: Tensor) -> Tensor:
        """x [..., in] -> [..., out] in x's dtype."""
        flat = x.reshape(-1, self.in_features)
        scale = self.scale if self.scale.dtype == x.dtype else self.scale.to(x.dtype)
        if flat.device.type == "cpu" and x.dtype in KERNEL_DTYPES:
            out = torch.ops.aten._weight_int8pack_mm(flat.contiguous(), self.qweight, scale)
        else:  # no int8 kernel here: dequantize on the fly (same weights, slower)
            out = F.linear(flat, self.qweight.to(x.dtype)) * scale
        if self.bias is not None:
            out = out + self.bias.to(out.dtype)
        return out.view(*x.shape[:-1], self.out_features)

    def dense_rows(self, ids: Tensor) -> Tensor:
        """The dequantized weight rows [len(ids), in] in float32 (exact top-logit recomputation)."""
        return self.qweight[ids].float() * self.scale[ids].float()[:, None]

    def select_rows(self, ids: Tensor) -> Int8Linear:
        """A layer computing only the outputs `ids` (a drafter's drafting vocabulary)."""
        bias = None if self.bias is None else self.bias.detach()[ids]
        return Int8Linear(self.qweight[ids].contiguous(), self.scale[ids].contiguous(), bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_rows(weight: Tensor) -> tuple[Tensor, Tensor]:
    """(q [out, in] int8, scale [out] float32) of a weight [out, in]: per output channel, symmetric,
    from its float32 values, rounded to nearest (the module docstring's rule; also how a drafter
    file stores int8 weights, `weight_storage.py`)."""
    weight = weight.float()
    scale = weight.abs().amax(1).clamp(min=torch.finfo(torch.float32).tiny) / INT8_MAX
    q = torch.round(weight / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
    return q.contiguous(), scale


def dense_rows(linear: nn.Module, ids: Tensor) -> Tensor:
    """Rows `ids` of a dense or int8 layer's weight, float32 [len(ids), in]."""
    if isinstance(linear, Int8Linear):
        return linear.dense_rows(ids)
    return linear.weight[ids].float()


def check_weights(weights: str) -> str:
    """`weights` itself if it is a known format, else a D3DError naming the choices."""
    if weights not in WEIGHT_FORMATS:
        raise D3DError(f"unknown weight format '{weights}' (choose from {', '.join(WEIGHT_FORMATS)})")
    return weights


def resolve_weights(weights: str, dtype: torch.dtype, device: torch.device | str, compiled: bool = False) -> str:
    """The weight format a `--weights` value means for a model in `dtype` on `device`: "auto" is
    "packed" where packing runs (bfloat16 on a CPU with native bfloat16: the same logits, faster
    passes) and "dense" elsewhere or under `torch.compile` (`compiled`: inductor packs frozen CPU
    weights itself); any other value is itself, checked."""
    if weights == "auto":
        return "packed" if packing_available(dtype, device) and not compiled else "dense"
    if check_weights(weights) == "packed":
        check_packing(dtype, device)  # before anything loads
    return weights


@torch.no_grad()
def quantize_decoder(model: nn.Module, weights: str, head: bool = True) -> nn.Module:
    """Replace the projections of a `DecoderModel` (in place) by int8 ones; `head`: the LM head too
    (False for a drafter whose head is the target's, already quantized). "dense" changes nothing;
    "packed" keeps the dense weights and prepacks them (`packed.py`: the same logits, faster)."""
    if check_weights(weights) == "dense":
        return model
    if weights == "packed":
        pack_decoder(model, head)
        model.weights = weights
        return model
    replace_projections(model, Int8Linear.from_linear, head)
    model.weights = weights
    return model


def weight_bytes(model: nn.Module) -> int:
    """Bytes of the weights a pass reads: every parameter and int8 buffer, shared ones once, the
    token embeddings left out unless the LM head reads them (a step reads a few rows of them)."""
    embed = model.model.embed_tokens.weight
    seen: set[int] = set()
    total = 0
    tensors = [t for t in model.parameters()] + [b for b in model.buffers() if b.dtype == torch.int8]
    tensors += [m.scale for m in model.modules() if isinstance(m, Int8Linear)]
    head_reads_embed = getattr(model.lm_head, "weight", None) is embed
    for t in tensors:
        if id(t) in seen or (t is embed and not head_reads_embed):
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total
