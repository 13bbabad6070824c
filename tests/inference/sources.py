"""Test-only draft sources with known behaviour: an oracle and a random proposer."""

from __future__ import annotations

import torch
from torch import Tensor

from d3d.inference.drafting import Draft, DraftSource


class OracleSource(DraftSource):
    """Proposes the target's own greedy continuation (known in advance): every draft is accepted."""

    def __init__(self, reference: list[int], block_size: int) -> None:
        self.reference = reference  # prompt + the target's greedy output
        self.block_size = block_size

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        n = committed.shape[1]
        assert committed[0].tolist() == self.reference[:n], "oracle fell off the reference"
        tokens = self.reference[n : n + num_tokens]
        tokens += [0] * (num_tokens - len(tokens))  # past the reference end: anything
        return Draft(torch.tensor(tokens))


class RandomSource(DraftSource):
    """Proposes tokens sampled from a fixed random distribution q per position (q is reported)."""

    def __init__(self, vocab: int, block_size: int, seed: int = 0, greedy: bool = False) -> None:
        g = torch.Generator().manual_seed(seed)
        self.q = torch.softmax(torch.randn(block_size - 1, vocab, generator=g, dtype=torch.float64) * 2, -1)
        self.block_size = block_size
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(seed + 1)

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        q = self.q[:num_tokens]
        if self.greedy:
            return Draft(q.argmax(-1))
        return Draft(torch.multinomial(q, 1, generator=self.gen)[:, 0], q)
