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
    """Candidate tokens for one round.

    Contract: `probs` is the distribution q each token was actually drawn from, after the
    source's own warping, so q(tokens[i]) > 0 for every i. A token reported with q = 0 would
    always be accepted and break losslessness; runs with D3D_CHECK_DRAFTS=1 (the tests) check it
    in `verify.verify_sampling`.
    """

    tokens: Tensor  # [n] long, n <= B-1: candidates for positions anchor_pos+1 .. anchor_pos+n
    probs: Tensor | None = None  # [n, vocab] the proposal distribution q; None = greedy (one-hot)
    confidence: Tensor | None = None  # [n] each position's largest q, a function of the prefix only (None: unknown)

    def truncated(self, m: int) -> Draft | None:
        """The first m candidates (None when m = 0: no speculation this round)."""
        if m == 0:
            return None
        if m >= self.tokens.shape[0]:
            return self
        cut = lambda t: None if t is None else t[:m]  # noqa: E731
        return Draft(self.tokens[:m], cut(self.probs), cut(self.confidence))


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
        logits = self.drafter.draft_logits(self.cache, committed, num_tokens)[0]  # [n, V]
        if self.sampling.greedy:
            tokens, confidence = self.drafter.most_likely(logits)
            return Draft(tokens, confidence=confidence)
        probs = probs_from_logits(logits, self.sampling)
        # confidence is each position's largest q, known before sampling: a choice of how many tokens
        # to verify that looked at the sampled tokens' own q would bias the output (draft_length.py)
        return Draft(sample(probs, self.generator), probs, probs.max(-1).values)
