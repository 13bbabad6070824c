"""Export a causal-block drafter as a plain Hugging Face causal LM that vLLM's parallel drafting serves.

vLLM's parallel drafting (`--speculative-config '{"method": "draft_model", "parallel_drafting":
true, ...}'`, PARD) runs the draft model as an ordinary causal LM over the committed tokens, the
target's newest token and N-1 copies of a mask token, all in one pass, and takes draft token i
from row i of that tail. That is exactly a d3d block pass when the drafter's block attention is
causal (each block row sees the prefix, the anchor and the block rows before it) and its labels
are next-token (the anchor's row predicts the first drafted token). So such a drafter exports as
its own layers, renumbered 0..n-1, with the target's embeddings and LM head, in a checkpoint any
transformers `AutoModelForCausalLM` loads. vLLM reads the mask token id from the draft config's
`pard_token` field (docs/serving.md, "Serving with vLLM", cites the source).

A drafting vocabulary (`d3d draft-vocab`, a subset of rows of the LM head) has no counterpart in a
plain causal LM, and a Llama-family head has no bias to push the other tokens down. The export
therefore writes the full-vocabulary head with the drafter's rows in place and ZERO rows for every
token outside the drafting vocabulary: those tokens get logit exactly 0, so the export's logits
equal the drafter's on its vocabulary, and an outside token can win only where every drafting
logit is negative (d3d's drafter gives it -inf instead). Keeping the target's own rows there would
let the export propose tokens the drafter was never trained to rank. Either way the target
verifies every token, so serving stays lossless; only acceptance could differ.

A bidirectional drafter, an AR draft model and a same-position drafter are refused with the reason:
an engine running them under plain causal attention would draft something else than d3d does.

`--format d3d` (`export_d3d`) instead rewrites any drafter as a d3d drafter directory, its weights
in `--dtype` and stored `--storage dense` or `int8` (`d3d.models.weight_storage`): how a trained
drafter is made small for shipping. It copies the raw weights through the drafter's own reader and
writer, builds no model and needs no target. `drafter_config.json` is copied with a provenance block
(`EXPORT_KEY`). `acceptance.json` describes the weights it was measured on, so it is copied as is
only when the written weights equal the source's value for value (a bfloat16 -> float32 copy);
otherwise it is copied (confidence-based verification lengths still need a table, and the source's
is the closest there is) with a `MEASURED_BEFORE` block naming the weights it was measured on,
until `d3d eval-drafter --save` measures the new ones and replaces it.

    report = export_vllm(ExportConfig(drafter="runs/causal/drafter", out="exports/causal"))
    report = export_d3d(ExportConfig(drafter="runs/x/drafter", out="ship/", format="d3d", storage="int8"))

This module knows drafter checkpoints and the Hugging Face file layout; it runs no model and
imports nothing of vLLM.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import Tensor

from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import (
    ACCEPTANCE_FILE, CONFIG_NAME, WEIGHTS_NAME, DrafterConfig, load_drafter_body, read_acceptance_table,
    read_draft_vocab, read_drafter_config, read_weights,
)
from d3d.models.weight_storage import check_storage, write_weights
from d3d.training.objective import load_target_embeddings

FORMATS = ("vllm", "d3d")  # export formats `d3d export --format` knows
MASK_FIELD = "pard_token"  # the draft config field vLLM's parallel drafting reads the mask token id from
EXPORT_KEY = "d3d_export"  # provenance block in the exported config.json (drafter_config.json for --format d3d)
WEIGHTS_FILE = "model.safetensors"
MEASURED_BEFORE = "measured_before_conversion"  # block added to a copied acceptance.json whose weights changed
SIDE_FILES = ("generation_config.json",)  # copied from the target when it has them
ARCHITECTURES = {  # transformers class per model type the native runtime supports
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
}
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass
class ExportConfig:
    """One `d3d export` run."""

    drafter: str  # drafter directory (written by d3d train / d3d prune / d3d draft-vocab)
    out: str  # directory of the exported checkpoint (created; must be empty or an earlier export)
    target: str | None = None  # target giving the shared embeddings, LM head and tokenizer (None: the drafter's base model)
    dtype: str = "bfloat16"  # dtype of the stored weights (DTYPES)
    format: str = "vllm"  # FORMATS
    storage: str = "dense"  # how --format d3d stores the projections (weight_storage.STORAGES); vllm: dense only
    run_block_size: int | None = None  # --format d3d: the B inference runs by default (0: the trained one; None: the
    # source's), chosen by measured speed (docs/runtime.md, "Run block size")


@dataclass
class ExportReport:
    """What was written, for the command's summary."""

    out: Path  # the exported checkpoint
    layers: int  # decoder layers in it
    vocab_size: int  # rows of its LM head (the target's vocabulary)
    draft_vocab_size: int  # tokens with non-zero head rows (0: the whole vocabulary)
    mask_token_id: int  # written as `pard_token`
    max_speculative_tokens: int  # B-1: the most draft tokens one pass was trained to give


@dataclass
class DrafterExportReport:
    """What `--format d3d` wrote, for the command's summary."""

    out: Path  # the written drafter directory
    storage: str  # its weight storage
    dtype: str  # dtype of its dense tensors
    size: int  # bytes of its weights file
    source_size: int  # bytes of the source drafter's weights file
    acceptance: str  # "same weights", "measured before conversion" (a MEASURED_BEFORE block added) or "none"
    data: str | None = None  # the data the copied acceptance table was measured on, if it says
    run_block_size: int = 0  # the block size inference runs by default (0: the trained one)


def check_exportable(config: DrafterConfig, path: str | Path) -> None:
    """A D3DError saying why vLLM's parallel drafting would not reproduce this drafter's drafts."""
    if config.objective != "diffusion":
        raise D3DError(f"drafter {path} is an AR draft model, not a block drafter: vLLM serves it as a plain "
                       "draft model without parallel drafting, no export needed")
    if not config.causal_blocks:
        raise D3DError(f"drafter {path} uses bidirectional block attention: vLLM's parallel drafting runs the draft "
                       "model under causal attention, where a mask row cannot see the rows after it as it did in "
                       "training, so its drafts would change; train a drafter with --block-attention causal")
    if config.labels != "next-token":
        raise D3DError(f"drafter {path} uses {config.labels} labels: vLLM's parallel drafting takes the first draft "
                       "token from the anchor's row, which only next-token labels train; train with --labels next-token")


def export_vllm(cfg: ExportConfig) -> ExportReport:
    """Write the drafter at `cfg.drafter` as a plain causal LM checkpoint with vLLM's parallel-drafting fields."""
    if cfg.format != "vllm":
        raise D3DError(f"export_vllm writes --format vllm, not '{cfg.format}' ({', '.join(FORMATS)})")
    if cfg.dtype not in DTYPES:
        raise D3DError(f"unknown export dtype '{cfg.dtype}' ({', '.join(DTYPES)})")
    if cfg.run_block_size is not None:
        raise D3DError("--run-block-size is for --format d3d: vLLM takes the drafted tokens per step at serve time "
                       "(num_speculative_tokens)")
    if cfg.storage != "dense":
        raise D3DError(f"--storage {cfg.storage} is a d3d drafter storage: a vLLM export is a plain transformers "
                       "checkpoint with dense weights (use --format d3d for an int8-stored drafter)")
    config, model_config = read_drafter_config(cfg.drafter)
    check_exportable(config, cfg.drafter)
    out = _prepare_out_dir(Path(cfg.out), Path(cfg.drafter))
    target_dir = hub.resolve_model_dir(cfg.target or config.base_model)
    tokenizer = hub.load_tokenizer(target_dir)
    if config.tokenizer_fingerprint and config.tokenizer_fingerprint != hub.tokenizer_fingerprint(tokenizer):
        raise D3DError(f"drafter {cfg.drafter} was built for a different tokenizer than {target_dir}'s")
    body, _ = load_drafter_body(cfg.drafter, dtype=torch.float32)
    if config.shared_embeddings:
        load_target_embeddings(body, target_dir)
    draft_vocab = read_draft_vocab(cfg.drafter)
    tied = draft_vocab is None and body.spec.tie_word_embeddings
    _write_weights(exported_state(body, draft_vocab, tied, DTYPES[cfg.dtype]), out / WEIGHTS_FILE)
    meta = exported_config(model_config.to_dict(), config, tied, cfg.dtype, str(cfg.drafter))
    (out / "config.json").write_text(json.dumps(meta, indent=2) + "\n")
    tokenizer.save_pretrained(str(out))
    for name in SIDE_FILES:
        if (target_dir / name).is_file():
            shutil.copyfile(target_dir / name, out / name)
    size = 0 if draft_vocab is None else int(draft_vocab.numel())
    return ExportReport(out, len(config.layers), body.spec.vocab_size, size, config.mask_token_id, config.block_size - 1)


def exported_state(body: DecoderModel, draft_vocab: Tensor | None, tied: bool, dtype: torch.dtype) -> dict[str, Tensor]:
    """The checkpoint's tensors: the body's (layers already numbered 0..n-1) and the LM head [V, h].

    With a drafting vocabulary `draft_vocab` [n] the head keeps those rows and zeros the others;
    a `tied` head (no drafting vocabulary, a tying base model) is left to the embeddings.
    """
    state = {name: value.detach() for name, value in body.state_dict().items()}
    head = state.pop("lm_head.weight")
    if draft_vocab is not None:
        full = torch.zeros_like(head)
        full[draft_vocab] = head[draft_vocab]
        head = full
    if not tied:
        state["lm_head.weight"] = head
    return {name: value.to(dtype).contiguous().clone() for name, value in state.items()}


def exported_config(base: dict, config: DrafterConfig, tied: bool, dtype: str, source: str) -> dict:
    """The transformers config.json of the export: the base model's, cut to the drafter's layers, plus
    the mask token under `pard_token` and a provenance block."""
    meta = dict(base)
    meta["architectures"] = [ARCHITECTURES[meta["model_type"]]]  # a drafter's base is always one of these
    meta["num_hidden_layers"] = len(config.layers)
    if isinstance(meta.get("layer_types"), list):  # per-layer attention kinds (Qwen2/3 sliding windows)
        meta["layer_types"] = [meta["layer_types"][i] for i in config.layers]
    meta["tie_word_embeddings"] = tied
    for key in [k for k in ("dtype", "torch_dtype") if k in meta] or ["torch_dtype"]:
        meta[key] = dtype
    meta[MASK_FIELD] = config.mask_token_id
    meta[EXPORT_KEY] = {
        "drafter": source, "base_layers": list(config.layers), "block_size": config.block_size,
        "max_speculative_tokens": config.block_size - 1, "labels": config.labels,
        "block_attention": config.block_attention, "draft_vocab_size": config.draft_vocab_size,
        "outside_draft_vocab": "zero head rows (logit 0)" if config.draft_vocab_size else "none",
    }
    return meta


def _prepare_out_dir(out: Path, drafter: Path) -> Path:
    """`out`, created; refused when it is the drafter itself or holds anything but an earlier export."""
    if out.resolve() == drafter.resolve() or (out / CONFIG_NAME).is_file():
        raise D3DError(f"--out {out} holds a drafter: export into another directory")
    if out.exists() and not out.is_dir():
        raise D3DError(f"--out {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not _is_export(out):
        raise D3DError(f"--out {out} is not empty: export into a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _is_export(path: Path, config_file: str = "config.json") -> bool:
    try:
        return EXPORT_KEY in json.loads((path / config_file).read_text())
    except (OSError, ValueError):
        return False


def _write_weights(state: dict[str, Tensor], file: Path) -> None:
    tmp = file.with_name(file.name + ".tmp")
    save_file(state, str(tmp), metadata={"format": "pt"})
    tmp.replace(file)


def export_d3d(cfg: ExportConfig) -> DrafterExportReport:
    """Write the drafter at `cfg.drafter` as a d3d drafter directory with its weights in `cfg.dtype`,
    stored as `cfg.storage`; its config and acceptance table come along (module docstring)."""
    if cfg.format != "d3d":
        raise D3DError(f"export_d3d writes --format d3d, not '{cfg.format}' ({', '.join(FORMATS)})")
    if cfg.dtype not in DTYPES:
        raise D3DError(f"unknown export dtype '{cfg.dtype}' ({', '.join(DTYPES)})")
    check_storage(cfg.storage)
    if cfg.target is not None:
        raise D3DError("--target is for --format vllm: --format d3d copies the drafter's own weights "
                       "and needs no target")
    source = Path(cfg.drafter)
    config, _ = read_drafter_config(source)  # a clear error for anything but a drafter directory
    meta = json.loads((source / CONFIG_NAME).read_text())
    if cfg.run_block_size is not None:
        replace(config, run_block_size=cfg.run_block_size).validate()  # one the drafter cannot run: a clear error
        meta["drafter"]["run_block_size"] = cfg.run_block_size
    table = read_acceptance_table(source / ACCEPTANCE_FILE)
    out = _prepare_drafter_out_dir(Path(cfg.out), source)
    state = read_weights(source / WEIGHTS_NAME)
    write_weights(out / WEIGHTS_NAME, state, cfg.storage, DTYPES[cfg.dtype])
    meta[EXPORT_KEY] = {"drafter": str(source), "storage": cfg.storage, "dtype": cfg.dtype}
    (out / CONFIG_NAME).write_text(json.dumps(meta, indent=2) + "\n")
    acceptance = "none"
    if table is None:
        (out / ACCEPTANCE_FILE).unlink(missing_ok=True)  # an earlier export's table belongs to other weights
    elif weights_equal(state, read_weights(out / WEIGHTS_NAME)):
        shutil.copyfile(source / ACCEPTANCE_FILE, out / ACCEPTANCE_FILE)
        acceptance = "same weights"
    else:  # an earlier conversion's block already names the weights it was measured on
        table.setdefault(MEASURED_BEFORE, {**meta[EXPORT_KEY], "note": "measured on the drafter's weights before "
                                           "this conversion; re-measure with d3d eval-drafter --save"})
        (out / ACCEPTANCE_FILE).write_text(json.dumps(table, indent=1) + "\n")
        acceptance = "measured before conversion"
    return DrafterExportReport(out, cfg.storage, cfg.dtype, (out / WEIGHTS_NAME).stat().st_size,
                               (source / WEIGHTS_NAME).stat().st_size, acceptance, (table or {}).get("data"),
                               int(meta["drafter"].get("run_block_size", 0)))


def weights_equal(a: dict[str, Tensor], b: dict[str, Tensor]) -> bool:
    """Whether two states hold the same tensors value for value, whatever their dtypes."""
    return a.keys() == b.keys() and all(torch.equal(a[k].double(), b[k].double()) for k in a)


def _prepare_drafter_out_dir(out: Path, drafter: Path) -> Path:
    """`out`, created; refused when it is the drafter itself or holds anything but an earlier d3d export."""
    if out.resolve() == drafter.resolve():
        raise D3DError(f"--out {out} is the drafter itself: export into another directory")
    if out.exists() and not out.is_dir():
        raise D3DError(f"--out {out} is a file, not a directory")
    if out.is_dir() and any(out.iterdir()) and not _is_export(out, CONFIG_NAME):
        raise D3DError(f"--out {out} is not empty: export into a new or empty directory")
    out.mkdir(parents=True, exist_ok=True)
    return out
