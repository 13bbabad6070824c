"""How a drafter's weights file stores its tensors: dense, or its projections as int8 with scales.

Storage "int8" (`Drafter.save_pretrained(..., storage="int8")`, `d3d export --format d3d --storage
int8`) writes each 2-D weight of the decoder layers' linear projections (q, k, v, o, gate, up and
down under the checkpoint names the state dict keeps, `decoder.fuse_on_load`: names
`model.layers.*.weight` that are 2-D, which leaves out the 1-D norms) as

    q [out, in] int8 = round(w / scale[:, None]) clamped to [-127, 127],  scale [out] float32 = max_i |w[o, i]| / 127

per output channel, by `quantize.quantize_rows`: the rule `Int8Linear` uses at run time. Rows are
quantized one by one, so the fused QKV and gate/up projections built from these parts have the same
rows and scales, and a drafter stored int8 and then run with int8 weights (`quantize_decoder`) gets
its stored integers back (exactly in float32; one step off at most in bfloat16, which rounds
q * scale). The scale is stored under `NAME + SCALE_SUFFIX`
("model.layers.0.mlp.down_proj.weight.int8_scale"): a parameter or buffer of that name would need a
submodule called `weight` beside the parameter `weight`, which torch forbids, so the key never
collides with a real tensor. Every other tensor
(norms, biases, the embeddings of a drafter that stores its own, the int64 drafting vocabulary) is
stored as before. The file's metadata names the storage (`STORAGE_KEY`).

Reading decodes from the tensors themselves: an int8 tensor with its scale becomes float32
q * scale for the caller to cast, anything else is returned as stored, so files written before
this storage existed (no metadata field, no int8 tensors) read unchanged. An int8 tensor without
its scale, a scale without its int8 tensor, a mismatched shape, or a storage this version does not
know is a D3DError naming the file and key.

This is a storage format only: the weights a drafter runs with (dense or int8, `quantize.py`) are
chosen when it is loaded. This module knows nothing about models or decoding.

    write_weights(path / "model.safetensors", model.state_dict(), "int8", torch.bfloat16)
    state = decode_state(*read_tensors(path / "model.safetensors"), source="...")  # float32 projections
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor

from d3d.errors import D3DError
from d3d.models.quantize import quantize_rows

STORAGES = ("dense", "int8")  # values of `storage` / `--storage`
STORAGE_KEY = "d3d_weight_storage"  # safetensors metadata field naming the storage
STORAGE_METADATA = {"dense": "dense", "int8": "int8-per-channel"}  # its value per storage
SCALE_SUFFIX = ".int8_scale"  # key of an int8 weight's scales [out]: the weight's key + this


def check_storage(storage: str) -> str:
    """`storage` itself if known, else a D3DError naming the choices."""
    if storage not in STORAGES:
        raise D3DError(f"unknown weight storage '{storage}' (choose from {', '.join(STORAGES)})")
    return storage


def is_projection(name: str, tensor: Tensor) -> bool:
    """Whether `name` is a decoder layer's 2-D projection weight (what int8 storage quantizes)."""
    return name.startswith("model.layers.") and name.endswith(".weight") and tensor.dim() == 2


def encode_state(
    state: dict[str, Tensor], storage: str, dtype: torch.dtype | None = None
) -> tuple[dict[str, Tensor], dict[str, str]]:
    """(tensors, metadata) to write for `state` under `storage`; floating tensors that are stored
    dense are converted to `dtype` (None: kept), the int8 ones quantized from their own values."""
    check_storage(storage)
    tensors = {}
    for name, value in state.items():
        value = value.detach().cpu()
        if storage == "int8" and value.is_floating_point() and is_projection(name, value):
            tensors[name], tensors[name + SCALE_SUFFIX] = quantize_rows(value)
        else:
            tensors[name] = value.to(dtype) if dtype is not None and value.is_floating_point() else value
    return {k: v.contiguous() for k, v in tensors.items()}, {"format": "pt", STORAGE_KEY: STORAGE_METADATA[storage]}


def write_weights(
    file: Path, state: dict[str, Tensor], storage: str = "dense", dtype: torch.dtype | None = None
) -> None:
    """Write `state` to the safetensors `file` under `storage` (through a temporary file, then renamed)."""
    tensors, metadata = encode_state(state, storage, dtype)
    tmp = file.with_name(file.name + ".tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    tmp.replace(file)


def read_tensors(file: Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The tensors of a safetensors `file` as stored (no decoding) and its metadata."""
    with safe_open(str(file), "pt") as handle:
        return {k: handle.get_tensor(k) for k in handle.keys()}, handle.metadata() or {}


def decode_state(tensors: dict[str, Tensor], metadata: dict[str, str], source: str) -> dict[str, Tensor]:
    """The state stored as `tensors` (from the file `source`): int8 weights dequantized to float32."""
    stored = metadata.get(STORAGE_KEY, "dense")
    if stored not in STORAGE_METADATA.values():
        raise D3DError(f"{source} stores its weights as '{stored}', which this version of d3d cannot read "
                       f"(it reads {', '.join(STORAGE_METADATA.values())})")
    state = {}
    for name, value in tensors.items():
        if name.endswith(SCALE_SUFFIX):
            weight = tensors.get(name.removesuffix(SCALE_SUFFIX))
            if weight is None or weight.dtype != torch.int8:
                raise D3DError(f"{source}: scale {name} belongs to no int8 weight {name.removesuffix(SCALE_SUFFIX)}")
        elif value.dtype == torch.int8:
            state[name] = dequantize(name, value, tensors.get(name + SCALE_SUFFIX), source)
        else:
            state[name] = value
    return state


def dequantize(name: str, q: Tensor, scale: Tensor | None, source: str) -> Tensor:
    """float32 q [out, in] * scale [out] per row, or a D3DError naming `source` and the key."""
    if scale is None:
        raise D3DError(f"{source}: int8 weight {name} has no scale {name + SCALE_SUFFIX}")
    if q.dim() != 2 or tuple(scale.shape) != (q.shape[0],) or not scale.is_floating_point():
        raise D3DError(f"{source}: int8 weight {name} {list(q.shape)} needs one float scale per row, but "
                       f"{name + SCALE_SUFFIX} is {scale.dtype} {list(scale.shape)}")
    return q.float() * scale.float()[:, None]
