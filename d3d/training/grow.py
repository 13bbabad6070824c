"""Growing a trained drafter by whole layers that start as the identity (`d3d grow`).

Pruning (`prune.py`) takes a drafter down; growing takes one up without losing what it learned.
Each added layer is one of the target's own layers (its weights, the depth it sat at), with the two
projections that write into the residual stream, the attention's `o_proj` and the MLP's `down_proj`
(and their biases, if any), set to zero: the layer adds exactly 0 to the residual stream, so the grown
drafter's logits equal the original's bit for bit, in any dtype (block expansion, as in LLaMA Pro).
Training then opens the new layers up: the zeroed projections get a gradient at once (the layer's
attention and MLP outputs are live), and the rest of the layer starts from features the target
computes at that depth. The question it answers is whether the shipped depth is what limits
acceptance once the data has grown (docs/training.md, "Depth, chosen by measured speed").

The grown drafter keeps the original's drafting vocabulary, settings and acceptance table (same
function, same acceptance); its run block size goes back to 0 (the trained block), since a speed
measured on the shallower drafter does not describe the deeper one. Its weights are written dense
(an int8-stored original is dequantized first) in the dtype asked for, float32 by default: the
starting point of a training run (`init:` in a recipe).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import load_decoder
from d3d.models.drafter import ACCEPTANCE_FILE, CONFIG_NAME, WEIGHTS_NAME, read_drafter_config, read_weights
from d3d.models.weight_storage import write_weights
from d3d.training.export import DTYPES
from d3d.training.resolve import optional_tokenizer

GROW_KEY = "d3d_grow"  # provenance block in the grown drafter's drafter_config.json
ZEROED = ("self_attn.o_proj", "mlp.down_proj")  # the projections that write into the residual stream
MODEL_CONFIG_KEYS = ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "vocab_size")


@dataclass
class GrowReport:
    """What `d3d grow` wrote, for its summary line."""

    out: Path  # the grown drafter directory
    layers_before: list[int]  # the original drafter's layers (the target's layer ids)
    layers: list[int]  # the grown drafter's layers
    added: list[int]  # the target layers added as identity layers
    size: int  # bytes of the written weights file


def grown_layers(layers: list[int], add: list[int], num_target_layers: int) -> list[int]:
    """The drafter's layers with `add` inserted at their depth (sorted); a D3DError for a bad request."""
    if not add:
        raise D3DError("--add names no layer: give the target layer ids to add, e.g. --add 2,26")
    if len(set(add)) != len(add):
        raise D3DError(f"--add names a layer twice: {add}")
    outside = [i for i in add if not 0 <= i < num_target_layers]
    if outside:
        raise D3DError(f"layers {outside} do not exist in the target ({num_target_layers} layers: 0 to "
                       f"{num_target_layers - 1})")
    present = [i for i in add if i in layers]
    if present:
        raise D3DError(f"layers {present} are already layers of the drafter ({layers})")
    if list(layers) != sorted(layers):
        raise D3DError(f"the drafter's layers {layers} are not in the target's order: cannot place new ones")
    return sorted([*layers, *add])


def layer_state(state: dict[str, Tensor], index: int) -> dict[str, Tensor]:
    """Layer `index` of a decoder state dict, its tensors keyed by their name within the layer."""
    prefix = f"model.layers.{index}."
    return {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}


def identity_layer(state: dict[str, Tensor], index: int) -> dict[str, Tensor]:
    """Layer `index` of a decoder state dict (`layer_state`, copied) with `ZEROED` set to 0."""
    layer = {k: v.detach().clone() for k, v in layer_state(state, index).items()}
    for name in ZEROED:
        if f"{name}.weight" not in layer:
            raise D3DError(f"the target's layer has no {name}.weight: cannot make it the identity")
        for kind in ("weight", "bias"):
            if f"{name}.{kind}" in layer:
                layer[f"{name}.{kind}"].zero_()
    return layer


def check_target(meta: dict, target_dir: Path, fingerprint: str) -> int:
    """The target's layer count; a D3DError when its shapes or tokenizer are not the drafter's."""
    target_cfg = hub.load_config(target_dir)
    mine = meta["model_config"]
    differ = [k for k in MODEL_CONFIG_KEYS if mine.get(k) != getattr(target_cfg, k, None)]
    if differ:
        raise D3DError(f"the target {target_dir} differs from the drafter's model in {', '.join(differ)}: "
                       "grow a drafter with layers of its own target")
    tokenizer = optional_tokenizer(target_dir) if fingerprint else None
    if tokenizer is not None and hub.tokenizer_fingerprint(tokenizer) != fingerprint:
        raise D3DError(f"the target {target_dir} has another tokenizer than the drafter's")
    return int(target_cfg.num_hidden_layers)


def grow_drafter(drafter: str, add: list[int], out: str, target: str | None = None,
                 dtype: str = "float32") -> GrowReport:
    """Write `drafter` with the target's layers `add` inserted as identity layers at `out` (module docstring)."""
    if dtype not in DTYPES:
        raise D3DError(f"unknown dtype '{dtype}' ({', '.join(DTYPES)})")
    source, dest = Path(drafter), Path(out)
    config, _ = read_drafter_config(source)
    if dest.resolve() == source.resolve():
        raise D3DError(f"--out {dest} is the drafter itself: write into another directory")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise D3DError(f"--out {dest} exists and is not an empty directory")
    meta = json.loads((source / CONFIG_NAME).read_text())
    target_dir = hub.resolve_model_dir(target or config.base_model)
    layers = grown_layers(list(config.layers), list(add), check_target(meta, target_dir, config.tokenizer_fingerprint))
    old = read_weights(source / WEIGHTS_NAME)
    new_ids = sorted(add)
    added = load_decoder(target_dir, new_ids, torch.float32, "cpu").state_dict()
    state = {k: v for k, v in old.items() if not k.startswith("model.layers.")}
    for j, layer_id in enumerate(layers):
        part = (layer_state(old, config.layers.index(layer_id)) if layer_id in config.layers
                else identity_layer(added, new_ids.index(layer_id)))
        state |= {f"model.layers.{j}.{k}": v for k, v in part.items()}
    dest.mkdir(parents=True, exist_ok=True)
    write_weights(dest / WEIGHTS_NAME, state, "dense", DTYPES[dtype])
    meta["drafter"]["layers"] = layers
    meta["drafter"]["run_block_size"] = 0  # a speed measured on the shallower drafter does not describe this one
    meta[GROW_KEY] = {"drafter": str(source), "layers_before": list(config.layers), "added": new_ids,
                      "target": str(target or config.base_model), "dtype": dtype}
    (dest / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    if (source / ACCEPTANCE_FILE).is_file():  # same function, same acceptance
        shutil.copyfile(source / ACCEPTANCE_FILE, dest / ACCEPTANCE_FILE)
    return GrowReport(dest, list(config.layers), layers, new_ids, (dest / WEIGHTS_NAME).stat().st_size)
