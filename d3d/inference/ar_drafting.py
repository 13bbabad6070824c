"""Classic speculative decoding's draft source: a small autoregressive model proposing k tokens.

The AR drafter is a shallow copy of the target trained with the AR loss alone (`d3d train
--diffusion-weight 0`, saved with `objective: "ar"`): the baseline D3D is compared against at
equal depth. It drafts one token per pass, k passes per round, where the D3D drafter drafts a whole
block in one pass; both go through the same verification, so the output is the target's exactly.

The drafter keeps its own KV cache of the committed tokens; the k drafted tokens are cached while
drafting and cropped away afterwards, so the next round starts from the verified prefix.

    source = ArDrafterSource(drafter.model, num_tokens=4, sampling=SamplingConfig())
    for chunk in speculative_decode(target, source, prompt_ids, cfg, stop, stats): ...
"""

from __future__ import annotations

import torch
from torch import Tensor

from d3d.inference.drafting import Draft, DraftSource
from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

DEFAULT_AR_DRAFT_TOKENS = 4  # k: tokens drafted per round


class ArDrafterSource(DraftSource):
    """Proposes up to `num_tokens` tokens, one drafter pass each, greedy or sampled from its q."""

    def __init__(
        self, model: DecoderModel, num_tokens: int, sampling: SamplingConfig, generator: torch.Generator | None = None
    ) -> None:
        if num_tokens < 1:
            raise ValueError(f"an AR drafter drafts at least 1 token per round, got {num_tokens}")
        self.model = model
        self.block_size = num_tokens + 1  # the engine asks for at most block_size - 1 tokens
        self.sampling = sampling
        self.generator = generator
        self.cache = model.new_cache()

    def start(self, capacity: int) -> None:
        self.cache.reset()
        self.cache.reserve(capacity)

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        n = committed.shape[1]
        new = committed[:, self.cache.length :]  # everything not yet cached, the anchor included
        logits = self.model(Rows.clean(new, self.cache.length), self.cache, logits_from=new.shape[1] - 1)[0, -1]
        tokens, probs = [], []
        for i in range(min(num_tokens, self.block_size - 1)):
            if i > 0:
                logits = self.model(Rows.clean(tokens[-1].view(1, 1), n + i - 1), self.cache)[0, -1]
            if self.sampling.greedy:
                tokens.append(logits.argmax(-1))
            else:
                p = probs_from_logits(logits[None], self.sampling)[0]
                tokens.append(sample(p[None], self.generator)[0])
                probs.append(p)
        self.cache.crop(n)  # drafted tokens leave the cache: the next round starts from the verified prefix
        return Draft(torch.stack(tokens), torch.stack(probs) if probs else None)
