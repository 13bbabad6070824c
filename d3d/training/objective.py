"""The module a training run optimises: the drafter body and its loss in one `nn.Module` (so that
DDP/FSDP/DeepSpeed wrap a single forward), how it is built from the init model, the frozen teacher
of pruning recovery, the drafting vocabulary the loss projects onto, and the inference drafter
rebuilt from its state. This module knows nothing about optimisers, schedules or checkpoints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor, nn

from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.decoder import DecoderModel, build_from_state, load_decoder
from d3d.models.drafter import SHARED_KEYS, Drafter, DrafterConfig, is_drafter_dir, load_drafter_body, read_draft_vocab
from d3d.training.draft_vocab import frequent_tokens
from d3d.training.losses import LossConfig, VocabSubset, drafter_losses
from d3d.training.packing import Example, PackedBatch
from d3d.training.resolve import ModelFacts
from d3d.training.train_config import TrainConfig


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
            load_target_embeddings(model, facts.target_dir)
    else:
        model = load_decoder(facts.init_dir, facts.layers, torch.float32, "cpu", facts.init_config)
    if cfg.freeze_embeddings:
        if facts.init_dir != facts.target_dir and facts.init_drafter is None:
            load_target_embeddings(model, facts.target_dir)
        model.model.embed_tokens.weight.requires_grad_(False)
        model.lm_head.weight.requires_grad_(False)
    return model.train()


def load_target_embeddings(model: DecoderModel, target_dir: Path) -> None:
    """Give `model` the embeddings and LM head stored in the target's safetensors (float32; tied if the target ties)."""
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
        load_target_embeddings(body, facts.target_dir)
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
        block_attention=facts.block_attention,
    )
    drafter = Drafter(body, config)
    if cfg.freeze_embeddings and target is not None:
        drafter.share_embeddings_with(target)
    if vocab_ids is not None:
        drafter.set_draft_vocab(vocab_ids)
        drafter.config.draft_vocab = {"size": int(vocab_ids.numel()), "data": list(cfg.data), "by": "d3d train"}
    return drafter.eval()


def training_vocab(examples: Sequence[Example], size: int, facts: ModelFacts,
                   fixed: Tensor | None = None) -> tuple[VocabSubset, float]:
    """The `size` tokens the target writes most in the training responses (plus eos), or the `fixed`
    ids as given (`init_vocab_ids`), and their coverage of the responses."""
    counts = Counter()
    for example in examples:
        counts.update(example.response_ids.tolist())
    ids = frequent_tokens(counts, size, facts.eos_ids, facts.vocab_size) if fixed is None else fixed.tolist()
    covered = sum(counts[t] for t in ids) / max(1, sum(counts.values()))
    return VocabSubset.from_ids(torch.tensor(ids), facts.vocab_size), covered


def init_vocab_ids(cfg: TrainConfig, facts: ModelFacts) -> Tensor:
    """The init drafter's own drafting vocabulary (`draft_vocab_from: init`); D3DError if it has none
    or its size is not `draft_vocab_size` (plus the end-of-sequence ids, as `training_vocab` adds them)."""
    ids = read_draft_vocab(cfg.init) if cfg.init is not None and is_drafter_dir(cfg.init) else None
    if ids is None:
        raise D3DError(f"draft vocab from init: {cfg.init} is not a saved drafter with a drafting vocabulary")
    if not cfg.draft_vocab_size <= ids.numel() <= cfg.draft_vocab_size + len(facts.eos_ids):
        raise D3DError(f"draft vocab from init: {cfg.init} drafts from {ids.numel()} tokens, "
                       f"the run asks for {cfg.draft_vocab_size} (and the end-of-sequence ids)")
    return ids.long()
