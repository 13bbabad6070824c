"""Where candidate blocks come from.

`DraftSource` is the small interface the speculative decoder talks to: `start` a sequence,
`propose` up to B-1 candidate tokens after the last committed token (the anchor). The D3D drafter
is one source; tests add an oracle and a random source; the asynchronous decoder (successor
drafting during verification) is another. A source knows nothing about verification.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.models.drafter import Drafter


@dataclass
class Draft:
    """Candidate tokens for one round."""

    tokens: Tensor  # [n] long, n <= B-1: candidates for positions anchor_pos+1 .. anchor_pos+n
    probs: Tensor | None = None  # [n, vocab] the proposal distribution q; None = greedy (one-hot)


class DraftSource(ABC):
    """Proposes candidate blocks for the speculative decoder."""

    block_size: int

    def start(self, capacity: int) -> None:
        """Forget any previous sequence; `capacity` bounds the sequence length to come."""

    @abstractmethod
    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        """Propose `num_tokens` (<= B-1) tokens following committed [1, n] (last = anchor)."""


class DrafterSource(DraftSource):
    """The D3D drafter proposing one block per pass, greedy or sampled from its own q."""

    def __init__(self, drafter: Drafter, sampling: SamplingConfig, generator: torch.Generator | None = None) -> None:
        self.drafter = drafter
        self.block_size = drafter.block_size
        self.sampling = sampling
        self.generator = generator
        self.cache = drafter.new_cache()

    def start(self, capacity: int) -> None:
        self.cache.reset()
        self.cache.reserve(capacity)

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        logits = self.drafter.draft_logits(self.cache, committed)[0, :num_tokens]  # [n, V]
        if self.sampling.greedy:
            return Draft(logits.argmax(-1))
        probs = probs_from_logits(logits, self.sampling)
        return Draft(sample(probs, self.generator), probs)
