"""Validation metrics of a drafter during training and pruning: offline acceptance on greedy dev rows
(`d3d.inference.offline`, no target pass), real greedy synchronous tau, and the dev loss parts.
This module knows nothing about the training loop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from d3d.inference.ar_drafting import DEFAULT_AR_DRAFT_TOKENS, ArDrafterSource
from d3d.inference.drafting import DrafterSource
from d3d.inference.engine import DecodeStats, GenerationConfig, speculative_decode
from d3d.inference.offline import offline_acceptance
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter
from d3d.training.losses import LossConfig, VocabSubset, drafter_losses
from d3d.training.packing import Example, PackedBatch, PackedDataset, PackingConfig, collate


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
    diff = ar = kd = 0.0
    kd_examples = 0
    for i in range(len(data)):
        batch = {k: v.to(model.device) for k, v in collate([data[i]], packing.mask_token_id).items()}
        parts = drafter_losses(model, PackedBatch.from_dict(batch), loss, vocab=vocab)
        diff, ar = diff + float(parts.diff), ar + float(parts.ar)
        if parts.kd_rows is not None and int(parts.kd_rows):
            kd, kd_examples = kd + float(parts.kd), kd_examples + 1
    result = {"dev_loss_diff": diff / len(data), "dev_loss_ar": ar / len(data)}
    return result | ({"dev_loss_kd": kd / kd_examples} if kd_examples else {})
