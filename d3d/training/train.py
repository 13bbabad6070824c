"""`d3d train`: target-aligned drafter training on Accelerate (DESIGN.md "Training", paper 3.2).

The drafter is a subset of a pretrained causal LM's layers (by default the target's own). Each
micro-batch is a set of packed examples (`packing.py`); the loss is L_diff + lambda * L_AR with
a chunked vocabulary projection (`losses.py`). AdamW, cosine schedule with warmup, gradient
clipping and accumulation, bf16 where the device supports it; the same command runs as one CPU
process or under `accelerate launch` (DDP, FSDP, DeepSpeed). Only the main process logs, saves
the drafter and validates; every collective (state gathering, checkpointing) runs on all.

Run folder (`output_dir`):

    train_config.json               the run's config (checked when the run resumes)
    log.jsonl                       one JSON object per line; "kind": data | train | eval | resume | end
    checkpoints/step-00000500/      accelerate state (model, optimizer, scheduler, RNG) + trainer_state.json
    drafter/                        the latest inference-ready drafter (`Drafter.save_pretrained`)

Resuming is exact: rerun the same command with the same `output_dir`. The newest checkpoint is
loaded, and the data position is restored by skipping the consumed micro-batches of the current
epoch (batches are a pure function of seed, epoch and position, see `packing.py`). Checkpoints are
written to a hidden folder and renamed into place; the last `keep_checkpoints` are kept. Ctrl-C
saves a checkpoint at the last completed step before exiting.

Validation decodes the first `eval_prompts` dev prompts greedily with the synchronous engine
(`speculative_decode` + `DrafterSource`) and logs the real tau, plus the dev loss parts.

This module knows nothing about the command line (`train_cli.py`) or plotting (`plot.py`).

    from d3d.training.train import TrainConfig, train
    train(TrainConfig(data=["data/train.jsonl"], num_layers=4, num_anchors=16, max_steps=100))
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
import types
import typing
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from torch import Tensor, nn
from torch.utils.data import DataLoader
from tqdm import tqdm

from d3d.errors import D3DError
from d3d.inference.ar_drafting import DEFAULT_AR_DRAFT_TOKENS, ArDrafterSource
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, speculative_decode
from d3d.inference.pipeline import default_dtype
from d3d.inference.stopping import StopChecker
from d3d.jsonl import JsonlFile
from d3d.models import hub
from d3d.models.decoder import DecoderModel, build_from_state, load_decoder
from d3d.models.drafter import (
    LABEL_CONVENTIONS,
    SHARED_KEYS,
    Drafter,
    DrafterConfig,
    is_drafter_dir,
    load_drafter_body,
    read_drafter_config,
)
from d3d.inference.offline import offline_acceptance
from d3d.training.draft_vocab import frequent_tokens
from d3d.training.losses import LossConfig, VocabSubset, drafter_losses
from d3d.training.packing import (
    Example,
    PackedBatch,
    PackedDataset,
    PackingConfig,
    TokenBudgetBatchSampler,
    collate,
    data_files,
    load_examples,
    read_meta,
    steps_per_epoch,
)

MIXED_PRECISION = ("auto", "bf16", "fp16", "no")
MODEL_FIELDS = ("target", "init", "layers", "num_layers", "freeze_embeddings", "block_size", "labels",
                "draft_vocab_size")  # must match to resume
DEFAULT_LABELS = "same-position"  # label convention of a drafter trained from a pretrained model
STATE_FILE = "trainer_state.json"
CONFIG_FILE = "train_config.json"


@dataclass
class TrainConfig:
    """One training run. Defaults follow the paper (section 4) where it says; CPU recipes override."""

    data: list[str] = field(default_factory=list)  # training rows: JSONL/Parquet files or folders (`d3d data`)
    dev_data: list[str] = field(default_factory=list)  # validation rows; empty = hold out eval_prompts training rows
    target: str | None = None  # target model: hub id, directory or .gguf (None = embedded SmolLM2-135M-Instruct)
    init: str | None = None  # model or saved drafter whose layers initialise the drafter (None = the target)
    layers: list[int] | None = None  # layers of `init` kept, e.g. 0,1,2,3 (None = first num_layers; a drafter's all)
    num_layers: int = 0  # with layers unset: keep the first N layers of `init` (0 = all, the paper's full depth)
    block_size: int = 16  # B: one anchor + B-1 mask tokens
    labels: str | None = None  # block-row labels: same-position (the paper's) or next-token (None = init drafter's, else DEFAULT_LABELS)
    draft_vocab_size: int = 0  # project the loss onto the N tokens the target writes most in the data (0 = whole vocabulary)
    num_anchors: int = 128  # K: anchors sampled per response (clamped to T-1)
    lambda_ar: float = 1.0  # weight of the auxiliary AR loss (0 = diffusion only)
    diffusion_weight: float = 1.0  # weight of L_diff (0 with lambda_ar 1 = an AR drafter, the classic baseline)
    teacher: str | None = None  # frozen drafter directory to distil from (pruning recovery: + L_KL)
    kd_delta: float = 0.01  # margin delta of the adjusted teacher
    gamma: float | None = None  # decay of the position weights exp(-(j-1)/gamma) (None = 7 * B / 16)
    mask_token_id: int | None = None  # [M] token id (None = hub.choose_mask_token_id on the target's tokenizer)
    max_length: int = 2048  # prompt + response tokens kept per example (longer rows are cut)
    lr: float = 1e-5  # peak learning rate (paper: 1e-5)
    min_lr_ratio: float = 0.1  # cosine floor as a fraction of lr (paper: 1e-5 -> 1e-6)
    weight_decay: float = 0.0  # AdamW weight decay on matrices (paper: 0)
    warmup_steps: int | None = None  # linear warmup in optimizer steps (None = 1% of all steps, the paper's)
    epochs: int = 1  # passes over the data when max_steps is 0 (paper: 3)
    max_steps: int = 0  # optimizer steps to run (0 = derived from epochs)
    max_cpu_s: float = 0.0  # also stop once the training steps used this much CPU time (0 = no limit; fair budgets on a shared machine)
    batch_size: int = 1  # most examples per micro-batch on each process (paper: 1)
    max_batch_tokens: int = 0  # most padded rows (clean + block) per micro-batch (0 = no cap)
    grad_accum: int = 8  # micro-batches per optimizer step on each process (paper: 8)
    grad_clip: float = 1.0  # gradient-norm clipping threshold (0 = off)
    freeze_embeddings: bool = True  # freeze and share the target's embeddings and LM head (not stored)
    mixed_precision: str = "auto"  # auto (bf16 on a GPU that supports it, else no), bf16, fp16 or no
    loss_chunk_rows: int = 256  # rows per chunk of the vocabulary projection
    seed: int = 0  # data order and anchor sampling
    output_dir: str = "runs/drafter"  # checkpoints, log and the trained drafter
    save_every: int = 500  # optimizer steps between checkpoints (0 = only at the end)
    keep_checkpoints: int = 2  # checkpoints kept on disk (oldest deleted first)
    eval_every: int = 500  # optimizer steps between validations, also run at step 0 and at the end (0 = never)
    eval_prompts: int = 8  # dev prompts decoded per validation
    eval_max_new_tokens: int = 64  # tokens generated per validation prompt
    eval_real: bool = True  # validation also decodes eval_prompts prompts with the real target (real tau; slow on a CPU)
    eval_rows: int = 0  # dev rows of the offline acceptance logged at every validation (0 = all)
    threads: int = 0  # torch intra-op threads of this process (0 = torch's default)
    log_every: int = 1  # optimizer steps between train log lines
    log_file: str | None = None  # JSONL metrics (None = <output_dir>/log.jsonl)

    @classmethod
    def from_dict(cls, values: dict) -> TrainConfig:
        """A config from plain values (a JSON/YAML file or flags); strings are parsed per field type."""
        known = {f.name for f in fields(cls)}
        values = {k.replace("-", "_"): v for k, v in values.items()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise D3DError(f"unknown training setting(s): {', '.join(unknown)}")
        hints = typing.get_type_hints(cls)
        return cls(**{k: coerce_value(k, hints[k], v) for k, v in values.items()})

    def validate(self) -> None:
        checks = [
            (bool(self.data), "no training data given (pass --data FILE)"),
            (self.block_size >= 2, "block size must be at least 2"),
            (self.num_anchors >= 1, "num anchors must be at least 1"),
            (self.lambda_ar >= 0 and self.diffusion_weight >= 0, "lambda ar and diffusion weight must be >= 0"),
            (self.lambda_ar + self.diffusion_weight > 0 or self.teacher is not None, "every loss weight is 0"),
            (0 < self.kd_delta < 1, "kd delta must be in (0, 1)"),
            (self.gamma is None or self.gamma > 0, "gamma must be > 0"),
            (self.max_length >= 4, "max length must be at least 4"),
            (self.lr > 0 and 0 <= self.min_lr_ratio <= 1, "lr must be > 0 and min lr ratio in [0, 1]"),
            (self.epochs >= 1 and self.max_steps >= 0 and self.max_cpu_s >= 0, "epochs must be >= 1, max steps and max cpu s >= 0"),
            (self.batch_size >= 1 and self.grad_accum >= 1, "batch size and grad accum must be >= 1"),
            (self.max_batch_tokens >= 0 and self.grad_clip >= 0, "max batch tokens and grad clip must be >= 0"),
            (self.mixed_precision in MIXED_PRECISION, f"mixed precision must be one of {', '.join(MIXED_PRECISION)}"),
            (min(self.loss_chunk_rows, self.keep_checkpoints) >= 1, "loss chunk rows and keep checkpoints must be >= 1"),
            (min(self.save_every, self.eval_every, self.eval_prompts) >= 0, "save/eval settings must be >= 0"),
            (self.eval_max_new_tokens >= 1 and self.log_every >= 1, "eval max new tokens and log every must be >= 1"),
            (self.layers is None or (bool(self.layers) and min(self.layers) >= 0), "layers must be non-negative indices"),
            (self.num_layers >= 0 and (self.warmup_steps or 0) >= 0, "num layers and warmup steps must be >= 0"),
            (self.labels is None or self.labels in LABEL_CONVENTIONS, f"labels must be one of {', '.join(LABEL_CONVENTIONS)}"),
            (min(self.draft_vocab_size, self.eval_rows, self.threads) >= 0, "draft vocab size, eval rows, threads >= 0"),
        ]
        for ok, message in checks:
            if not ok:
                raise D3DError(message)

    @property
    def log_path(self) -> Path:
        return Path(self.log_file) if self.log_file else Path(self.output_dir) / "log.jsonl"


def coerce_value(name: str, hint, value):
    """`value` as the type `hint` of field `name`; a D3DError naming the field otherwise."""
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
    base = next(a for a in args if a is not type(None)) if optional else hint
    if value is None or (optional and isinstance(value, str) and value.strip().lower() in ("", "none")):
        if optional:
            return None
        raise D3DError(f"setting '{name}' cannot be empty")
    try:
        return _coerce(base, value)
    except (TypeError, ValueError):
        raise D3DError(f"setting '{name}': cannot read {value!r} as {getattr(base, '__name__', base)}") from None


def _coerce(base, value):
    if typing.get_origin(base) is list:
        (item,) = typing.get_args(base)
        items = [v for v in value.split(",") if v.strip()] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            items = [items]
        return [_coerce(item, v) for v in items]
    if base is bool:
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        if not isinstance(value, bool):
            raise TypeError(value)
        return value
    if base in (int, float) and isinstance(value, bool):
        raise TypeError(value)
    if base is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    return base(value.strip()) if isinstance(value, str) and base is not str else base(value)


# ---------------------------------------------------------------------------------------------
# What a run loads before its first step


@dataclass
class ModelFacts:
    """The target/drafter facts a run resolves once."""

    target_dir: Path  # local directory of the target
    init_dir: Path  # local directory the drafter's layers come from
    init_config: object  # transformers config of `init`
    layers: list[int]  # layers of `init` kept
    vocab_size: int  # shared by target and drafter
    mask_token_id: int  # [M]
    fingerprint: str  # target tokenizer fingerprint ("" when the target ships no tokenizer)
    eos_ids: tuple[int, ...]  # end-of-sequence ids (for validation decoding)
    init_drafter: DrafterConfig | None = None  # set when `init` is a saved drafter
    labels: str = DEFAULT_LABELS  # label convention of the block rows


def resolve_models(cfg: TrainConfig) -> ModelFacts:
    """Resolve target and init, check that they share a vocabulary and tokenizer, pick [M] and the layers."""
    target_dir = hub.resolve_model_dir(cfg.target)
    if cfg.init is not None and is_drafter_dir(cfg.init):
        return _resolve_drafter_init(cfg, target_dir)
    init_dir = target_dir if cfg.init is None else hub.resolve_model_dir(cfg.init)
    target_cfg, init_cfg = hub.load_config(target_dir), hub.load_config(init_dir)
    if init_cfg.vocab_size != target_cfg.vocab_size:
        raise D3DError(
            f"drafter init vocabulary ({init_cfg.vocab_size}) differs from the target's ({target_cfg.vocab_size})"
        )
    tokenizer = _optional_tokenizer(target_dir)
    fingerprint = hub.tokenizer_fingerprint(tokenizer) if tokenizer is not None else ""
    if init_dir != target_dir:
        init_tok = _optional_tokenizer(init_dir)
        if init_tok is not None and fingerprint and hub.tokenizer_fingerprint(init_tok) != fingerprint:
            raise D3DError(f"drafter init {cfg.init} has a different tokenizer than the target {cfg.target}")
    return ModelFacts(
        target_dir=target_dir, init_dir=init_dir, init_config=init_cfg,
        layers=_drafter_layers(cfg, init_cfg.num_hidden_layers), vocab_size=target_cfg.vocab_size,
        mask_token_id=_mask_token_id(cfg, tokenizer, target_cfg.vocab_size), fingerprint=fingerprint,
        eos_ids=hub.eos_token_ids(target_dir, tokenizer, target_cfg), labels=cfg.labels or DEFAULT_LABELS,
    )


def _resolve_drafter_init(cfg: TrainConfig, target_dir: Path) -> ModelFacts:
    """Facts for a run that continues a saved drafter (pruning recovery), checked against the target."""
    drafter_cfg, model_cfg = read_drafter_config(cfg.init)
    target_cfg = hub.load_config(target_dir)
    tokenizer = _optional_tokenizer(target_dir)
    fingerprint = hub.tokenizer_fingerprint(tokenizer) if tokenizer is not None else ""
    if drafter_cfg.vocab_size != target_cfg.vocab_size:
        raise D3DError(f"drafter {cfg.init} has vocabulary {drafter_cfg.vocab_size}, the target {target_cfg.vocab_size}")
    if fingerprint and drafter_cfg.tokenizer_fingerprint and drafter_cfg.tokenizer_fingerprint != fingerprint:
        raise D3DError(f"drafter {cfg.init} was built for another tokenizer than the target's")
    if drafter_cfg.block_size != cfg.block_size:
        raise D3DError(f"drafter {cfg.init} has block size {drafter_cfg.block_size}, the run {cfg.block_size}")
    if drafter_cfg.shared_embeddings and not cfg.freeze_embeddings:
        raise D3DError(f"drafter {cfg.init} shares the target's embeddings: keep --freeze-embeddings")
    layers = list(cfg.layers) if cfg.layers is not None else list(drafter_cfg.layers)
    bad = [i for i in layers if i not in drafter_cfg.layers]
    if bad:
        raise D3DError(f"layers {bad} are not layers of the drafter {cfg.init} ({drafter_cfg.layers})")
    mask = drafter_cfg.mask_token_id if cfg.mask_token_id is None else cfg.mask_token_id
    if mask != drafter_cfg.mask_token_id:
        raise D3DError(f"drafter {cfg.init} uses mask token {drafter_cfg.mask_token_id}, not {mask}")
    if cfg.labels is not None and cfg.labels != drafter_cfg.labels:
        raise D3DError(f"drafter {cfg.init} was trained with {drafter_cfg.labels} labels, not {cfg.labels}")
    return ModelFacts(
        target_dir=target_dir, init_dir=Path(cfg.init), init_config=model_cfg, layers=layers,
        vocab_size=target_cfg.vocab_size, mask_token_id=mask, fingerprint=fingerprint,
        eos_ids=hub.eos_token_ids(target_dir, tokenizer, target_cfg), init_drafter=drafter_cfg, labels=drafter_cfg.labels,
    )


def target_eos_ids(target_dir: Path) -> tuple[int, ...]:
    """The end-of-sequence ids of a resolved target directory (config, tokenizer, generation config)."""
    return hub.eos_token_ids(target_dir, _optional_tokenizer(target_dir))


def _optional_tokenizer(model_dir: Path):
    """The tokenizer, or None for a model directory that has none (tiny test models)."""
    try:
        return hub.load_tokenizer(model_dir)
    except D3DError:
        return None


def _drafter_layers(cfg: TrainConfig, available: int) -> list[int]:
    layers = list(cfg.layers) if cfg.layers is not None else list(range(min(cfg.num_layers or available, available)))
    bad = [i for i in layers if i >= available]
    if bad:
        raise D3DError(f"layers {bad} do not exist in the drafter init ({available} layers)")
    return layers


def _mask_token_id(cfg: TrainConfig, tokenizer, vocab_size: int) -> int:
    if cfg.mask_token_id is None and tokenizer is None:
        raise D3DError("the target has no tokenizer to choose the [M] token from: pass --mask-token-id")
    mask = cfg.mask_token_id if cfg.mask_token_id is not None else hub.choose_mask_token_id(tokenizer)
    if not 0 <= mask < vocab_size:
        raise D3DError(f"mask token id {mask} is outside the vocabulary (size {vocab_size})")
    return mask


def check_data_tokenizer(metas: Sequence[dict], fingerprint: str) -> None:
    """D3DError when the data's settings file (`<stem>.meta.json`) names a tokenizer other than the target's."""
    for meta in metas:
        recorded = _find_key(meta, "tokenizer_fingerprint")
        if recorded and fingerprint and recorded != fingerprint:
            raise D3DError(
                f"the training data was tokenized with a different tokenizer ({recorded}) than the target's "
                f"({fingerprint})"
            )


def _find_key(tree, key: str):
    """The first value stored under `key` anywhere in a JSON tree."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for value in tree:
            found = _find_key(value, key)
            if found is not None:
                return found
    return None


def load_data(
    cfg: TrainConfig, facts: ModelFacts, say: Callable[[str], None]
) -> tuple[list[Example], list[Example], dict]:
    """Training and dev examples; bad rows counted and reported once."""
    metas = read_meta(data_files(cfg.data) + (data_files(cfg.dev_data) if cfg.dev_data else []))
    if not metas:
        say("no <name>.meta.json beside the data: the data's tokenizer cannot be checked against the target's")
    check_data_tokenizer(metas, facts.fingerprint)
    train, report = load_examples(cfg.data, facts.vocab_size, cfg.max_length, cfg.num_anchors)
    say(f"training data: {report.summary()}")
    if cfg.dev_data:
        dev, dev_report = load_examples(cfg.dev_data, facts.vocab_size, cfg.max_length, cfg.num_anchors)
        say(f"dev data: {dev_report.summary()}")
    else:
        held = cfg.eval_prompts if cfg.eval_every > 0 and len(train) > cfg.eval_prompts else 0
        train, dev = train[: len(train) - held], train[len(train) - held :]
        if held:
            say(f"no dev data given: holding out the last {held} training rows for validation")
    if not train:
        raise D3DError(f"no usable training rows ({report.summary()})")
    return train, dev, asdict(report)


# ---------------------------------------------------------------------------------------------
# The model being trained


class DrafterObjective(nn.Module):
    """The drafter body and its loss in one module, so that DDP/FSDP/DeepSpeed wrap a single forward."""

    def __init__(self, model: DecoderModel, loss: LossConfig, teacher: DecoderModel | None = None,
                 vocab: VocabSubset | None = None) -> None:
        super().__init__()
        self.model = model
        self.loss = loss
        self._teacher = [teacher] if teacher is not None else []  # a list: not a submodule, never trained or saved
        self.register_buffer("vocab_ids", None if vocab is None else vocab.ids, persistent=False)  # [n] or None
        self.register_buffer("vocab_index", None if vocab is None else vocab.index, persistent=False)  # [vocab]

    @property
    def teacher(self) -> DecoderModel | None:
        return self._teacher[0] if self._teacher else None

    def _apply(self, fn, *args, **kwargs):  # .to(device) moves the teacher along
        if self._teacher:
            self._teacher[0]._apply(fn, *args, **kwargs)
        return super()._apply(fn, *args, **kwargs)

    def forward(self, **batch: Tensor) -> dict[str, Tensor]:
        vocab = None if self.vocab_ids is None else VocabSubset(self.vocab_ids, self.vocab_index)
        return drafter_losses(self.model, PackedBatch.from_dict(batch), self.loss, self.teacher, vocab).as_dict()


def build_drafter_body(cfg: TrainConfig, facts: ModelFacts) -> DecoderModel:
    """The init model's kept layers in float32; embeddings and LM head frozen (the target's) if asked."""
    if facts.init_drafter is not None:
        model, _ = load_drafter_body(facts.init_dir, facts.layers, torch.float32, "cpu")
        if facts.init_drafter.shared_embeddings:
            _load_target_embeddings(model, facts.target_dir)
    else:
        model = load_decoder(facts.init_dir, facts.layers, torch.float32, "cpu", facts.init_config)
    if cfg.freeze_embeddings:
        if facts.init_dir != facts.target_dir and facts.init_drafter is None:
            _load_target_embeddings(model, facts.target_dir)
        model.model.embed_tokens.weight.requires_grad_(False)
        model.lm_head.weight.requires_grad_(False)
    return model.train()


def _load_target_embeddings(model: DecoderModel, target_dir: Path) -> None:
    from safetensors import safe_open

    found: dict[str, Tensor] = {}
    for file in sorted(target_dir.glob("*.safetensors")):
        with safe_open(str(file), "pt") as handle:
            found |= {k: handle.get_tensor(k) for k in SHARED_KEYS if k in handle.keys()}
    if "model.embed_tokens.weight" not in found:
        raise D3DError(f"cannot share the target's embeddings: none found in {target_dir}")
    model.model.embed_tokens.weight = nn.Parameter(found["model.embed_tokens.weight"].float())
    head = found.get("lm_head.weight")
    model.lm_head.weight = model.model.embed_tokens.weight if head is None else nn.Parameter(head.float())


def load_teacher(cfg: TrainConfig, facts: ModelFacts) -> DecoderModel | None:
    """The frozen drafter to distil from, with the target's embeddings when it shares them."""
    if cfg.teacher is None:
        return None
    if not is_drafter_dir(cfg.teacher):
        raise D3DError(f"teacher is not a saved drafter (no drafter_config.json): {cfg.teacher}")
    body, config = load_drafter_body(cfg.teacher, None, torch.float32, "cpu")
    if config.vocab_size != facts.vocab_size or config.block_size != cfg.block_size:
        raise D3DError(f"teacher {cfg.teacher} differs from the run in vocabulary or block size")
    if config.shared_embeddings:
        _load_target_embeddings(body, facts.target_dir)
    return body.requires_grad_(False).eval()


def drafter_from_state(
    state: dict[str, Tensor], cfg: TrainConfig, facts: ModelFacts, dtype: torch.dtype, device, target: DecoderModel | None,
    vocab_ids: Tensor | None = None,
) -> Drafter:
    """An inference drafter from the training module's (gathered) state dict; `vocab_ids` = its drafting vocabulary."""
    body_state = {k.removeprefix("model."): v.detach() for k, v in state.items() if not k.startswith("vocab_")}
    external = SHARED_KEYS if cfg.freeze_embeddings else ()
    body_state = {k: v for k, v in body_state.items() if k not in external}
    body = build_from_state(facts.init_config, facts.layers, body_state, dtype, device, external, "training state")
    base = facts.init_drafter.base_model if facts.init_drafter is not None else cfg.init or cfg.target
    config = DrafterConfig(
        base_model=base or hub.DEFAULT_TARGET, layers=list(facts.layers), block_size=cfg.block_size,
        mask_token_id=facts.mask_token_id, shared_embeddings=cfg.freeze_embeddings, vocab_size=facts.vocab_size,
        tokenizer_fingerprint=facts.fingerprint, trained=True,
        objective="ar" if cfg.diffusion_weight == 0 and cfg.teacher is None else "diffusion", labels=facts.labels,
    )
    drafter = Drafter(body, config)
    if cfg.freeze_embeddings and target is not None:
        drafter.share_embeddings_with(target)
    if vocab_ids is not None:
        drafter.set_draft_vocab(vocab_ids)
        drafter.config.draft_vocab = {"size": int(vocab_ids.numel()), "data": list(cfg.data), "by": "d3d train"}
    return drafter.eval()


def training_vocab(examples: Sequence[Example], size: int, facts: ModelFacts) -> tuple[VocabSubset, float]:
    """The `size` tokens the target writes most in the training responses (plus eos), and their coverage."""
    counts = Counter()
    for example in examples:
        counts.update(example.response_ids.tolist())
    ids = frequent_tokens(counts, size, facts.eos_ids, facts.vocab_size)
    covered = sum(counts[t] for t in ids) / max(1, sum(counts.values()))
    return VocabSubset.from_ids(torch.tensor(ids), facts.vocab_size), covered


# ---------------------------------------------------------------------------------------------
# Validation


def measure_tau(
    target: DecoderModel, drafter: Drafter, prompts: Sequence[np.ndarray], max_new_tokens: int, eos_ids: Sequence[int]
) -> dict:
    """Greedy synchronous speculative decoding of each prompt; tau = tokens appended per round.

    A block drafter drafts B-1 tokens in one pass; an AR draft model (objective "ar") drafts
    `DEFAULT_AR_DRAFT_TOKENS` tokens, one pass each.
    """
    context = int(getattr(target.config, "max_position_embeddings", 0) or 1 << 30)
    usable = [p for p in prompts if 0 < len(p) < context - max_new_tokens]
    rounds = appended = new = 0
    for ids in usable:
        stats = DecodeStats("sync")
        prompt = torch.as_tensor(np.asarray(ids), dtype=torch.long, device=target.device)[None]
        gen = GenerationConfig(max_new_tokens=max_new_tokens)
        if drafter.config.objective == "ar":
            source = ArDrafterSource(drafter.model, DEFAULT_AR_DRAFT_TOKENS, gen.sampling)
        else:
            source = DrafterSource(drafter, gen.sampling)
        for _ in speculative_decode(target, source, prompt, gen, StopChecker(max_new_tokens, eos_ids), stats):
            pass
        rounds, appended, new = rounds + stats.rounds, appended + stats.round_tokens, new + stats.new_tokens
    return {"tau": appended / rounds if rounds else 0.0, "rounds": rounds, "new_tokens": new, "prompts": len(usable)}


def offline_metrics(drafter: Drafter, dev: Sequence[Example]) -> dict:
    """Offline acceptance (`d3d.inference.offline`) of the dev rows, as validation log fields."""
    result = offline_acceptance(drafter, [(e.prompt_ids, e.response_ids) for e in dev])
    return {"offline_tau": result.tau_sim, "offline_mean_accepted": result.mean_accepted,
            "offline_alpha": result.alpha, "offline_rows": result.rows}


@torch.no_grad()
def dev_losses(model: DecoderModel, dev: Sequence[Example], packing: PackingConfig, loss: LossConfig, seed: int,
               vocab: VocabSubset | None = None) -> dict:
    """Mean L_diff / L_AR over dev examples, each packed alone with anchors seeded as in epoch 0."""
    if not dev:
        return {}
    data = PackedDataset(dev, packing, seed)
    diff = ar = 0.0
    for i in range(len(data)):
        batch = {k: v.to(model.device) for k, v in collate([data[i]], packing.mask_token_id).items()}
        parts = drafter_losses(model, PackedBatch.from_dict(batch), loss, vocab=vocab)
        diff, ar = diff + float(parts.diff), ar + float(parts.ar)
    return {"dev_loss_diff": diff / len(data), "dev_loss_ar": ar / len(data)}


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class Progress:
    """Where a run stands; saved with every checkpoint."""

    step: int = 0  # optimizer steps done
    epoch: int = 0  # epoch being consumed
    batches: int = 0  # micro-batches of `epoch` this process consumed up to the last optimizer step
    rows: int = 0  # real query rows trained on, all processes, as of the last train log line
    tokens: int = 0  # response tokens trained on (each example's once per pass), as of the last train log line
    seconds: float = 0.0  # training wall time so far (validation and saving excluded)
    cpu_seconds: float = 0.0  # CPU time of those training steps (this process, every thread)


class JsonlLog:
    """Append-only JSON-lines metrics (main process only); a resumed run drops lines past its checkpoint."""

    def __init__(self, path: Path, enabled: bool) -> None:
        self.path, self.enabled = path, enabled
        self.file = JsonlFile(path, what="training log")
        self.kept: list[dict] = []  # the records a resumed run keeps (set by `start`)

    def start(self, resume_step: int | None) -> None:
        if not self.enabled:
            return
        records = self.file.read() if resume_step is not None else []
        self.kept = [r for r in records if r.get("step", 0) <= resume_step]
        self.file.rewrite(self.kept)

    def last(self, kind: str) -> dict | None:
        """The last record of `kind` kept by `start` (a resumed run's history)."""
        return next((r for r in reversed(self.kept) if r.get("kind") == kind), None)

    def write(self, record: dict) -> None:
        if self.enabled:
            self.file.append(record)


class Trainer:
    """One training run: state, loop, validation and checkpoints (driven by `train`)."""

    def __init__(self, cfg: TrainConfig, accelerator: Accelerator, facts: ModelFacts) -> None:
        self.cfg, self.accelerator, self.facts = cfg, accelerator, facts
        self.out = Path(cfg.output_dir)
        self.main = accelerator.is_main_process
        self.progress = Progress()
        self.log = JsonlLog(cfg.log_path, self.main)
        self.packing = PackingConfig(cfg.block_size, cfg.num_anchors, facts.mask_token_id, facts.labels)
        self.loss = LossConfig(cfg.block_size, cfg.lambda_ar, cfg.gamma, cfg.loss_chunk_rows, cfg.diffusion_weight,
                               cfg.kd_delta, facts.labels)
        self.vocab: VocabSubset | None = None  # the drafting vocabulary the loss projects onto
        self.eval_target: DecoderModel | None = None
        self.last_eval_step = -1
        self.last_tau: float | None = None  # the latest validation tau (recorded in the saved drafter)
        self.on_step: Callable[[Trainer], None] | None = None

    def say(self, message: str) -> None:
        if self.main:
            tqdm.write(f"[d3d] {message}", file=sys.stderr)

    # -- setup ------------------------------------------------------------------------------

    def setup(self) -> None:
        cfg = self.cfg
        train_rows, self.dev, report = load_data(cfg, self.facts, self.say)
        self.data_report = report
        self.dataset = PackedDataset(train_rows, self.packing, cfg.seed)
        self.sampler = TokenBudgetBatchSampler(self.dataset.lengths(), cfg.batch_size, cfg.max_batch_tokens, cfg.seed)
        loader = DataLoader(self.dataset, batch_sampler=self.sampler, collate_fn=self._collate)
        self.total_steps = self._total_steps()
        if cfg.draft_vocab_size:
            self.vocab, covered = training_vocab(train_rows, cfg.draft_vocab_size, self.facts)
            self.data_report["draft_vocab_coverage"] = round(covered, 4)
            self.say(f"drafting vocabulary: {self.vocab.ids.numel()} tokens, {covered:.1%} of the response tokens")
        module = DrafterObjective(build_drafter_body(cfg, self.facts), self.loss, load_teacher(cfg, self.facts),
                                  self.vocab)
        optimizer = torch.optim.AdamW(_param_groups(module, cfg.weight_decay), lr=cfg.lr)
        scheduler = self._scheduler(optimizer)
        prepared = self.accelerator.prepare(module, optimizer, loader, scheduler)
        self.module, self.optimizer, self.loader, self.scheduler = prepared
        self.trainable = [p for p in self.module.parameters() if p.requires_grad]

    def _collate(self, examples):
        return collate(examples, self.packing.mask_token_id)

    def _total_steps(self) -> int:
        if self.cfg.max_steps:
            return self.cfg.max_steps
        n, accum = self.accelerator.num_processes, self.cfg.grad_accum
        return sum(steps_per_epoch(self.sampler, e, n, accum) for e in range(self.cfg.epochs))

    def _scheduler(self, optimizer):
        from transformers import get_cosine_with_min_lr_schedule_with_warmup

        warmup = self.cfg.warmup_steps if self.cfg.warmup_steps is not None else math.ceil(0.01 * self.total_steps)
        return get_cosine_with_min_lr_schedule_with_warmup(
            optimizer, warmup, self.total_steps, min_lr_rate=self.cfg.min_lr_ratio
        )

    # -- resume -----------------------------------------------------------------------------

    def resume_or_start(self) -> None:
        latest = latest_checkpoint(self.out)
        if self.main:
            self._remove_partial_saves()
        self._check_config(resuming=latest is not None)
        self.accelerator.wait_for_everyone()
        if latest is None:
            self.log.start(None)
            self.log.write({"kind": "data", "step": 0, **self.data_report, "total_steps": self.total_steps})
            return
        self.accelerator.load_state(str(latest))
        self.progress = Progress(**json.loads((latest / STATE_FILE).read_text())["progress"])
        self.last_eval_step = self.progress.step  # do not re-validate the step we resume at
        self.log.start(self.progress.step)
        last_eval = self.log.last("eval")
        self.last_tau = last_eval["tau"] if last_eval else None
        self.log.write({"kind": "resume", "step": self.progress.step, "checkpoint": latest.name})
        self.say(f"resumed from {latest} (step {self.progress.step}, epoch {self.progress.epoch})")

    def _remove_partial_saves(self) -> None:
        for partial in (self.out / "checkpoints").glob(".*.partial"):
            shutil.rmtree(partial, ignore_errors=True)

    def _check_config(self, resuming: bool) -> None:
        """Refuse to resume a run of another model; every process reads before the main one rewrites."""
        file = self.out / CONFIG_FILE
        current = asdict(self.cfg)
        if resuming and file.is_file():
            saved = json.loads(file.read_text())
            changed = [k for k in current if saved.get(k) != current[k]]
            blocking = [k for k in changed if k in MODEL_FIELDS]
            if blocking:
                raise D3DError(f"{self.out} holds a run with different {', '.join(blocking)}: use another --output-dir")
            if changed:
                self.say(f"resuming with changed settings: {', '.join(changed)}")
        self.accelerator.wait_for_everyone()
        if self.main:
            self.out.mkdir(parents=True, exist_ok=True)
            file.write_text(json.dumps(current, indent=2) + "\n")

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        bar = tqdm(total=self.total_steps, initial=self.progress.step, disable=not self.main, desc="train",
                   dynamic_ncols=True)
        self.meter = StepMeter()
        try:
            if self.progress.step == 0 and self.cfg.eval_every > 0:
                self.evaluate()
            while not self.done:
                self._run_epoch(bar)
        finally:
            bar.close()

    def _run_epoch(self, bar) -> None:
        epoch, skip = self.progress.epoch, self.progress.batches
        loader = self.accelerator.skip_first_batches(self.loader, skip) if skip else self.loader
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)  # Accelerate's loaders re-apply their own epoch counter when iterated
        self.dataset.set_epoch(epoch)
        self.sampler.set_epoch(epoch)
        seen, started, started_cpu = skip, time.perf_counter(), time.process_time()
        for batch in loader:
            grad_norm = self._micro_step(batch)
            seen += 1
            if not self.accelerator.sync_gradients:
                continue
            elapsed = time.perf_counter() - started
            self.progress.seconds += elapsed
            self.progress.cpu_seconds += time.process_time() - started_cpu
            self.progress.step, self.progress.batches = self.progress.step + 1, seen
            self.meter.end_step(elapsed, grad_norm)
            bar.update(1)
            self._after_step(bar)
            if self.done:
                return
            started, started_cpu = time.perf_counter(), time.process_time()
        self.progress.epoch, self.progress.batches = self.progress.epoch + 1, 0

    def _micro_step(self, batch: dict[str, Tensor]) -> Tensor | None:
        """Forward, backward and (at an accumulation boundary) the optimizer step; the grad norm if clipped."""
        with self.accelerator.accumulate(self.module):
            parts = self.module(**batch)
            self.accelerator.backward(parts["total"])
            grad_norm = None
            if self.accelerator.sync_gradients and self.cfg.grad_clip > 0:
                grad_norm = self.accelerator.clip_grad_norm_(self.trainable, self.cfg.grad_clip)
            self.optimizer.step()
            if self.accelerator.sync_gradients:
                self.scheduler.step()
            self.optimizer.zero_grad()
        self.meter.add(parts)
        return grad_norm

    @property
    def done(self) -> bool:
        """All steps run, or the CPU-time budget spent."""
        spent = self.cfg.max_cpu_s > 0 and self.progress.cpu_seconds >= self.cfg.max_cpu_s
        return self.progress.step >= self.total_steps or spent

    def _after_step(self, bar) -> None:
        step, last = self.progress.step, self.done
        saving = (self.cfg.save_every and step % self.cfg.save_every == 0) or last
        if step % self.cfg.log_every == 0 or saving:  # a checkpoint's counters include every step before it
            self._log_train(bar)
        if self.cfg.eval_every and (step % self.cfg.eval_every == 0 or last):
            self.evaluate()
        if saving:
            self.save_checkpoint()
        if self.on_step is not None:
            self.on_step(self)

    def _log_train(self, bar) -> None:
        values = self.meter.collect(self.accelerator)
        self.progress.rows += int(values.pop("rows_total"))
        self.progress.tokens += int(values.pop("tokens_total"))
        record = {"kind": "train", "step": self.progress.step, "epoch": self.progress.epoch, **values,
                  "lr": self.scheduler.get_last_lr()[0], "rows_seen": self.progress.rows,
                  "tokens_seen": self.progress.tokens, "elapsed_s": round(self.progress.seconds, 3),
                  "cpu_s": round(self.progress.cpu_seconds, 2)}
        self.log.write(record)
        bar.set_postfix(loss=f"{values['loss']:.3f}", diff=f"{values['loss_diff']:.3f}", ar=f"{values['loss_ar']:.3f}")

    # -- validation and saving (collective: every process calls them) -------------------------

    def evaluate(self) -> None:
        if self.last_eval_step == self.progress.step or not self.dev:
            return
        self.last_eval_step = self.progress.step
        state = self.accelerator.get_state_dict(self.module)
        if self.main:
            self._evaluate_on_main(state)
        self.accelerator.wait_for_everyone()

    def _evaluate_on_main(self, state: dict[str, Tensor]) -> None:
        started = time.perf_counter()
        target = self._eval_target()
        vocab_ids = None if self.vocab is None else self.vocab.ids
        drafter = drafter_from_state(state, self.cfg, self.facts, target.dtype, target.device, target, vocab_ids)
        result = offline_metrics(drafter, self.dev[: self.cfg.eval_rows or None])
        if self.cfg.eval_real:
            prompts = [e.prompt_ids for e in self.dev[: self.cfg.eval_prompts]]
            result |= measure_tau(target, drafter, prompts, self.cfg.eval_max_new_tokens, self.facts.eos_ids)
        result |= dev_losses(drafter.model, self.dev[: self.cfg.eval_prompts], self.packing, self.loss, self.cfg.seed,
                             self.vocab)
        result = {"kind": "eval", "step": self.progress.step, "tokens_seen": self.progress.tokens, **result,
                  "eval_s": round(time.perf_counter() - started, 2)}
        self.last_tau = result.get("tau", result["offline_tau"])
        self.log.write(result)
        real = f"validation tau {result['tau']:.3f} over {result['prompts']} prompts, " if "tau" in result else ""
        self.say(f"step {self.progress.step}: {real}offline tau {result['offline_tau']:.3f} over "
                 f"{result['offline_rows']} rows, dev loss diff {result['dev_loss_diff']:.3f} ar {result['dev_loss_ar']:.3f}")

    def _eval_target(self) -> DecoderModel:
        if self.eval_target is None:
            device = self.accelerator.device
            dtype = torch.float32 if device.type == "cpu" else default_dtype(device)  # the data's dtype on a CPU
            self.eval_target = load_decoder(self.facts.target_dir, dtype=dtype, device=device)
        return self.eval_target

    def save_checkpoint(self) -> None:
        root = self.out / "checkpoints"
        final = root / f"step-{self.progress.step:08d}"
        if final.exists():
            return
        partial = root / f".{final.name}.partial"
        if self.main:
            shutil.rmtree(partial, ignore_errors=True)
            root.mkdir(parents=True, exist_ok=True)
        self.accelerator.wait_for_everyone()
        self.accelerator.save_state(str(partial))
        if self.main:
            state = {"progress": asdict(self.progress), "total_steps": self.total_steps}
            (partial / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        self.save_drafter()
        if self.main:
            partial.rename(final)
            _prune_checkpoints(root, self.cfg.keep_checkpoints)
        self.accelerator.wait_for_everyone()

    def save_drafter(self) -> Path:
        """Write the inference-ready drafter to <output_dir>/drafter (collective; main writes)."""
        state = self.accelerator.get_state_dict(self.module)
        final = self.out / "drafter"
        if self.main:
            dtype = torch.bfloat16 if self.accelerator.mixed_precision == "bf16" else torch.float32
            drafter = drafter_from_state(state, self.cfg, self.facts, dtype, "cpu", None,
                                         None if self.vocab is None else self.vocab.ids.cpu())
            drafter.config.training = {**asdict(self.cfg), "steps": self.progress.step, "rows_seen": self.progress.rows,
                                       "validation_tau": self.last_tau}
            partial = self.out / ".drafter.partial"
            shutil.rmtree(partial, ignore_errors=True)
            drafter.save_pretrained(partial)
            _replace_dir(partial, final)
        return final

    def save_on_interrupt(self) -> None:
        """Checkpoint the last completed optimizer step (gradients of a half-accumulated step are dropped)."""
        if self.progress.step == 0:
            self.say("interrupted before the first optimizer step: nothing to save")
            return
        self.accelerator.step = 0  # the accumulation counter restarts at a step boundary on resume
        self.save_checkpoint()
        self.say(f"interrupted: checkpoint saved at step {self.progress.step}; rerun the same command to resume")


class StepMeter:
    """Sums of per-micro-batch loss parts between log lines, kept on the device (no per-step sync)."""

    KEYS = ("total", "diff", "ar", "rows", "diff_rows", "ar_rows", "kl", "dropped")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sums: Tensor | None = None  # [len(KEYS)] sums over micro-batches
        self.micro = 0  # micro-batches since the last log line
        self.steps = 0  # optimizer steps since the last log line
        self.seconds = 0.0  # their wall time
        self.grad_norm: Tensor | float | None = None  # of the latest step

    def add(self, parts: dict[str, Tensor]) -> None:
        zero = parts["total"].new_zeros(())
        values = torch.stack([parts.get(k, zero).detach().float() for k in self.KEYS])
        self.sums = values if self.sums is None else self.sums + values
        self.micro += 1

    def end_step(self, seconds: float, grad_norm: Tensor | float | None) -> None:
        self.steps += 1
        self.seconds += seconds
        self.grad_norm = grad_norm

    def collect(self, accelerator: Accelerator) -> dict:
        """Means over micro-batches and processes since the last call (one deliberate host sync)."""
        means = accelerator.reduce(self.sums / self.micro, reduction="mean").tolist()
        totals = accelerator.reduce(self.sums.clone(), reduction="sum").tolist()
        steps = max(self.steps, 1)
        record = {
            "loss": means[0], "loss_diff": means[1], "loss_ar": means[2],
            "grad_norm": None if self.grad_norm is None else float(self.grad_norm),
            "rows_per_step": totals[3] / steps, "diff_rows_per_step": totals[4] / steps,
            "ar_rows_per_step": totals[5] / steps, "step_s": round(self.seconds / steps, 4), "rows_total": totals[3],
            "tokens_total": totals[5],
        }
        if totals[6]:
            record["loss_kl"] = means[6]
        if totals[7]:
            record["dropped_labels_per_step"] = totals[7] / steps  # outside the drafting vocabulary
        self.reset()
        return record


def _param_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    trainable = [p for p in module.parameters() if p.requires_grad]
    return [
        {"params": [p for p in trainable if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0},
    ]


def latest_checkpoint(out: Path) -> Path | None:
    done = [p for p in (out / "checkpoints").glob("step-*") if (p / STATE_FILE).is_file()]
    return max(done, key=lambda p: p.name) if done else None


def _prune_checkpoints(root: Path, keep: int) -> None:
    done = sorted(p for p in root.glob("step-*") if p.is_dir())
    for old in done[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def _replace_dir(new: Path, final: Path) -> None:
    """Move `new` to `final`, replacing it; a crash leaves either the old or the new folder (or both)."""
    old = final.parent / f".{final.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    new.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def resolve_mixed_precision(choice: str) -> str:
    if choice != "auto":
        return choice
    return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"


def train(cfg: TrainConfig, on_step: Callable[[Trainer], None] | None = None) -> Path:
    """Run (or resume) training; returns the directory of the trained drafter.

    `on_step` is called on every process after each optimizer step (tests use it to interrupt).
    """
    cfg.validate()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    accelerator = Accelerator(
        gradient_accumulation_steps=cfg.grad_accum, mixed_precision=resolve_mixed_precision(cfg.mixed_precision),
        step_scheduler_with_optimizer=False,
    )
    with accelerator.main_process_first():  # the first GGUF conversion happens once
        facts = resolve_models(cfg)
    trainer = Trainer(cfg, accelerator, facts)
    trainer.on_step = on_step
    trainer.setup()
    trainer.resume_or_start()
    try:
        trainer.run()
    except KeyboardInterrupt:
        trainer.save_on_interrupt()
        raise
    if trainer.cfg.eval_every:
        trainer.evaluate()
    trainer.save_checkpoint()
    trainer.log.write({"kind": "end", "step": trainer.progress.step, "rows_seen": trainer.progress.rows,
                       "train_s": round(trainer.progress.seconds, 2)})
    trainer.say(f"done: drafter saved to {trainer.out / 'drafter'}")
    return trainer.out / "drafter"
