"""Prepacked bfloat16 weights for a CPU: the same products, without repacking the weights every pass.

On a CPU, torch computes a bfloat16 `F.linear` with oneDNN, which first reorders the weight into
its blocked layout, on every call. For the small passes of decoding (1 to a few tens of rows) that
reorder costs about as much as the product itself: the weights are read twice and written once.
`pack_decoder` reorders each projection once, at load, (`torch.ops.mkldnn._reorder_linear_weight`)
and runs it with `torch.ops.mkldnn._linear_pointwise`, the pair torch's own inductor uses for frozen
CPU graphs. The kernel and the summation order are the ones `F.linear` reaches after its reorder,
so every logit is bit for bit the unpacked model's (`tests/models/test_packed.py`), and a packed
target is the same target: greedy output, sampling and acceptance are unchanged; only time is.

`PackedLinear` stays an `nn.Linear` (its `weight` and `bias` Parameters are kept and shared, so
tied embeddings, `state_dict`, exact top-logit recomputation and `.to(...)` see a dense layer); the
packed copy is a plain attribute beside them. A call it cannot serve (another dtype or device after
`.to(...)`, or autograd needing a gradient) runs `F.linear` on the kept weight instead.

It needs a CPU with native bfloat16 (`packing_available`); the run's weight format "packed" says so
(`quantize.WEIGHT_FORMATS`), and asking for it elsewhere is an error, not a silent dense run.

This module knows nothing about decoding.

    pack_decoder(model)   # in place; every projection and the LM head a PackedLinear
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from d3d.errors import D3DError

PACK_ROWS_HINT = 16  # the row count oneDNN tunes the packed layout for; any row count runs on it


def packing_available(dtype: torch.dtype, device: torch.device | str) -> bool:
    """Whether packed weights can run here: bfloat16 on a CPU with oneDNN's bfloat16 support."""
    if torch.device(device).type != "cpu" or dtype != torch.bfloat16:
        return False
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return False
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def check_packing(dtype: torch.dtype, device: torch.device | str) -> None:
    """A D3DError saying why packed weights cannot run here, if they cannot."""
    if not packing_available(dtype, device):
        raise D3DError(
            f"packed weights need bfloat16 on a CPU with native bfloat16 (oneDNN); this run is {dtype} "
            f"on {torch.device(device).type}: use --weights dense"
        )


class PackedLinear(nn.Linear):
    """A dense bfloat16 linear layer whose weight is also held in oneDNN's packed layout."""

    def __init__(self, linear: nn.Linear) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # shared Parameters, not copies
        with torch.no_grad():
            self.packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), PACK_ROWS_HINT)

    def forward(self, x: Tensor) -> Tensor:
        """x [..., in] -> [..., out]; the packed product when it applies, `F.linear` otherwise."""
        grad = torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad)
        if grad or x.dtype != self.packed.dtype or x.device != self.packed.device:
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")

    def __deepcopy__(self, memo: dict) -> PackedLinear:
        """A copy with its own weight and bias and the same packed tensor (oneDNN's opaque layout
        cannot be copied, and nothing writes to it): `bench`'s exact float32 copy of the target."""
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__ = {k: v if k == "packed" else copy.deepcopy(v, memo) for k, v in self.__dict__.items()}
        return new

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed"


def pack_linear(linear: nn.Linear) -> PackedLinear:
    """One layer packed (its weight must be bfloat16 on a CPU that packs)."""
    check_packing(linear.weight.dtype, linear.weight.device)
    return linear if isinstance(linear, PackedLinear) else PackedLinear(linear)


@torch.no_grad()
def replace_projections(model: nn.Module, convert: Callable[[nn.Linear], nn.Module], head: bool = True) -> nn.Module:
    """Replace (in place) every dense projection of a `DecoderModel`'s layers and, if `head`, its LM
    head by `convert(layer)`; layers already converted (int8, packed) stay as they are. The one walk
    of the weight formats (`quantize.quantize_decoder`)."""
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name, child in list(parent.named_children()):
                if type(child) is nn.Linear:
                    setattr(parent, name, convert(child))
    if head and type(model.lm_head) is nn.Linear:
        model.lm_head = convert(model.lm_head)
    return model


def pack_decoder(model: nn.Module, head: bool = True) -> nn.Module:
    """Pack (in place) every dense projection of a `DecoderModel` and, if `head`, its LM head (False
    for a drafter whose head is the target's). Layers already int8 (`quantize.py`) stay as they are."""
    check_packing(model.dtype, model.device)
    return replace_projections(model, PackedLinear, head)
