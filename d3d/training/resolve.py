"""What a training run resolves before its first step: the target and init models, the layers, [M],
the label convention and block attention, end-of-sequence ids, and the training and dev rows.

A saved drafter as `init` (pruning recovery) is checked against the target: vocabulary, tokenizer,
block size, mask token, label convention and block attention must match. This module builds no model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from d3d.errors import D3DError
from d3d.models import hub
from d3d.models.drafter import DrafterConfig, is_drafter_dir, read_drafter_config
from d3d.training.packing import Example, data_files, load_examples, read_meta
from d3d.training.train_config import DEFAULT_BLOCK_ATTENTION, DEFAULT_LABELS, TrainConfig


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
    block_attention: str = DEFAULT_BLOCK_ATTENTION  # how a block's rows see each other (bidirectional or causal)


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
    tokenizer = optional_tokenizer(target_dir)
    fingerprint = hub.tokenizer_fingerprint(tokenizer) if tokenizer is not None else ""
    if init_dir != target_dir:
        init_tok = optional_tokenizer(init_dir)
        if init_tok is not None and fingerprint and hub.tokenizer_fingerprint(init_tok) != fingerprint:
            raise D3DError(f"drafter init {cfg.init} has a different tokenizer than the target {cfg.target}")
    return ModelFacts(
        target_dir=target_dir, init_dir=init_dir, init_config=init_cfg,
        layers=_drafter_layers(cfg, init_cfg.num_hidden_layers), vocab_size=target_cfg.vocab_size,
        mask_token_id=_mask_token_id(cfg, tokenizer, target_cfg.vocab_size), fingerprint=fingerprint,
        eos_ids=hub.eos_token_ids(target_dir, tokenizer, target_cfg), labels=cfg.labels or DEFAULT_LABELS,
        block_attention=cfg.block_attention or DEFAULT_BLOCK_ATTENTION,
    )


def _resolve_drafter_init(cfg: TrainConfig, target_dir: Path) -> ModelFacts:
    """Facts for a run that continues a saved drafter (pruning recovery), checked against the target."""
    drafter_cfg, model_cfg = read_drafter_config(cfg.init)
    target_cfg = hub.load_config(target_dir)
    tokenizer = optional_tokenizer(target_dir)
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
    if cfg.block_attention is not None and cfg.block_attention != drafter_cfg.block_attention:
        raise D3DError(f"drafter {cfg.init} was trained with {drafter_cfg.block_attention} block attention, "
                       f"not {cfg.block_attention}")
    return ModelFacts(
        target_dir=target_dir, init_dir=Path(cfg.init), init_config=model_cfg, layers=layers,
        vocab_size=target_cfg.vocab_size, mask_token_id=mask, fingerprint=fingerprint,
        eos_ids=hub.eos_token_ids(target_dir, tokenizer, target_cfg), init_drafter=drafter_cfg, labels=drafter_cfg.labels,
        block_attention=drafter_cfg.block_attention,
    )


def target_eos_ids(target_dir: Path) -> tuple[int, ...]:
    """The end-of-sequence ids of a resolved target directory (config, tokenizer, generation config)."""
    return hub.eos_token_ids(target_dir, optional_tokenizer(target_dir))


def optional_tokenizer(model_dir: Path):
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
        dev, dev_report = load_examples(cfg.dev_data, facts.vocab_size, cfg.max_length, cfg.num_anchors,
                                        eval_only_ok=True)
        say(f"dev data: {dev_report.summary()}")
    else:
        held = cfg.eval_prompts if cfg.eval_every > 0 and len(train) > cfg.eval_prompts else 0
        train, dev = train[: len(train) - held], train[len(train) - held :]
        if held:
            say(f"no dev data given: holding out the last {held} training rows for validation")
    if not train:
        raise D3DError(f"no usable training rows ({report.summary()})")
    check_topk(cfg, train)
    return train, dev, asdict(report)


def check_topk(cfg: TrainConfig, train: Sequence[Example]) -> None:
    """D3DError when distillation from the stored top-k is asked for and no training row carries one."""
    if cfg.kd_weight > 0 and cfg.diffusion_weight > 0 and all(e.topk_ids is None for e in train):
        raise D3DError("--kd-weight needs the target's top-k per response position, and the training data has "
                       "none: generate it with `d3d data --top-k-logits 8`, or set --kd-weight 0")
