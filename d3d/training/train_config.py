"""The settings of one `d3d train` run (`TrainConfig`) and how plain values (flags, YAML) become them.

Every field has a default and a one-line comment; `d3d train --help` is built from them
(`train_cli.py`). This module knows nothing about models or data.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path

from d3d.errors import D3DError
from d3d.models.drafter import BLOCK_ATTENTION, LABEL_CONVENTIONS
from d3d.training.losses import POSITION_WEIGHTING


MIXED_PRECISION = ("auto", "bf16", "fp16", "no")
DRAFT_VOCAB_SOURCES = ("data", "init")  # where draft_vocab_from takes the drafting vocabulary from


MODEL_FIELDS = ("target", "init", "layers", "num_layers", "freeze_embeddings", "block_size", "labels",
                "block_attention", "draft_vocab_size", "draft_vocab_from")  # must match to resume


DEFAULT_LABELS = "next-token"  # label convention of a drafter trained from a pretrained model (measured better, docs/training.md)
DEFAULT_BLOCK_ATTENTION = "bidirectional"  # the paper's; "causal" drafters can be exported to vLLM (docs/training.md)


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
    labels: str | None = None  # block-row labels: next-token or same-position (the paper's); none = the init drafter's, else next-token
    block_attention: str | None = None  # block rows see: their whole block (bidirectional, the paper's) or rows up to themselves (causal, vLLM-exportable); none = the init drafter's, else bidirectional
    draft_vocab_size: int = 0  # project the loss onto the N tokens the target writes most in the data (0 = whole vocabulary)
    draft_vocab_from: str = "data"  # the drafting vocabulary: data (ranked on this run's rows) or init (the init drafter's own, of draft_vocab_size tokens; no re-ranking cost when continuing a drafter)
    num_anchors: int = 128  # K: anchors sampled per response (clamped to T-1)
    lambda_ar: float = 1.0  # weight of the auxiliary AR loss (0 = diffusion only)
    diffusion_weight: float = 1.0  # weight of L_diff (0 with lambda_ar 1 = an AR drafter, the classic baseline)
    ce_weight: float = 1.0  # weight of the block rows' hard-label cross-entropy within L_diff (0 = distillation alone)
    kd_weight: float = 0.0  # weight of distillation from the target's stored top-k within L_diff (needs `d3d data --top-k-logits`; PARD-2: 10 with ce 1)
    position_weighting: str = "exp"  # block position weights: exp (the paper's exp(-(j-1)/gamma)) or survival (product of the drafter's own q(correct) before j)
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
    start_batch: int = 0  # micro-batches of epoch 0 skipped by a fresh run: continue another run's data order (its steps x grad_accum, one process)
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
            (self.ce_weight >= 0 and self.kd_weight >= 0, "ce weight and kd weight must be >= 0"),
            (self.ce_weight + self.kd_weight > 0 or self.diffusion_weight == 0,
             "ce weight and kd weight are both 0: the block rows would train on nothing"),
            (self.position_weighting in POSITION_WEIGHTING,
             f"position weighting must be one of {', '.join(POSITION_WEIGHTING)}"),
            (0 < self.kd_delta < 1, "kd delta must be in (0, 1)"),
            (self.gamma is None or self.gamma > 0, "gamma must be > 0"),
            (self.max_length >= 4, "max length must be at least 4"),
            (self.lr > 0 and 0 <= self.min_lr_ratio <= 1, "lr must be > 0 and min lr ratio in [0, 1]"),
            (self.epochs >= 1 and self.max_steps >= 0 and self.max_cpu_s >= 0, "epochs must be >= 1, max steps and max cpu s >= 0"),
            (self.start_batch >= 0, "start batch must be >= 0"),
            (self.batch_size >= 1 and self.grad_accum >= 1, "batch size and grad accum must be >= 1"),
            (self.max_batch_tokens >= 0 and self.grad_clip >= 0, "max batch tokens and grad clip must be >= 0"),
            (self.mixed_precision in MIXED_PRECISION, f"mixed precision must be one of {', '.join(MIXED_PRECISION)}"),
            (min(self.loss_chunk_rows, self.keep_checkpoints) >= 1, "loss chunk rows and keep checkpoints must be >= 1"),
            (min(self.save_every, self.eval_every, self.eval_prompts) >= 0, "save/eval settings must be >= 0"),
            (self.eval_max_new_tokens >= 1 and self.log_every >= 1, "eval max new tokens and log every must be >= 1"),
            (self.layers is None or (bool(self.layers) and min(self.layers) >= 0), "layers must be non-negative indices"),
            (self.num_layers >= 0 and (self.warmup_steps or 0) >= 0, "num layers and warmup steps must be >= 0"),
            (self.labels is None or self.labels in LABEL_CONVENTIONS, f"labels must be one of {', '.join(LABEL_CONVENTIONS)}"),
            (self.block_attention is None or self.block_attention in BLOCK_ATTENTION,
             f"block attention must be one of {', '.join(BLOCK_ATTENTION)}"),
            (min(self.draft_vocab_size, self.eval_rows, self.threads) >= 0, "draft vocab size, eval rows, threads >= 0"),
            (self.draft_vocab_from in DRAFT_VOCAB_SOURCES,
             f"draft vocab from must be one of {', '.join(DRAFT_VOCAB_SOURCES)}"),
            (self.draft_vocab_from == "data" or (self.draft_vocab_size > 0 and self.init is not None),
             "draft vocab from init needs --init (a saved drafter with a drafting vocabulary) and --draft-vocab-size"),
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
