"""Test-only draft sources and drafters with known behaviour: an oracle, a random proposer, the
target as its own drafter, and a scripted drafter for the asynchronous state machine."""

from __future__ import annotations

import torch
from torch import Tensor

from d3d.inference.drafting import Draft, DraftSource
from d3d.models.attention import Rows


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


class TargetAsDrafter:
    """A stand-in `Drafter` with B = 2 whose one drafted position gets the target's own next-token
    logits, so a `DrafterSource` over it has q == p: with a correct q every draft is accepted."""

    block_size = 2

    def __init__(self, target) -> None:
        self.target = target

    def new_cache(self) -> FakeCache:
        return FakeCache()

    def draft_logits(self, cache, committed: Tensor, rows: int | None = None) -> Tensor:
        """[1, 1, V]: the target's logits after committed [1, n] (recomputed in full, no cache)."""
        return self.target(Rows.clean(committed, 0), logits_from=committed.shape[1] - 1)[:, :rows]


class FakeCache:
    """The part of `KVCache` the asynchronous state machine uses: a column count."""

    def __init__(self) -> None:
        self.length = 0

    def reset(self) -> None:
        self.length = 0

    def reserve(self, extra: int) -> None:
        pass

    def crop(self, length: int) -> None:
        assert 0 <= length <= self.length, f"crop to {length} of {self.length}"
        self.length = length


class ScriptedDrafter:
    """A stand-in `Drafter` whose predictions depend only on the absolute position, so every
    verification outcome and every hit is known in advance.

    At position j its top token is reference[j], except at the positions in `wrong`: there it
    proposes a wrong token first, and its best alternatives contain reference[j] iff wrong[j] is
    True. Every pass checks the cache invariant of `async_drafting.py`. After `fail_after`
    passes it raises (a crashing worker).
    """

    def __init__(self, reference: list[int], block_size: int, vocab: int, wrong: dict[int, bool] | None = None,
                 fail_after: int | None = None, mask_id: int = 0) -> None:
        from types import SimpleNamespace

        self.reference, self.block_size, self.vocab = reference, block_size, vocab
        self.wrong = wrong or {}
        self.fail_after, self.passes = fail_after, 0
        self.config = SimpleNamespace(mask_token_id=mask_id, trained=False)
        self.model = SimpleNamespace(device=torch.device("cpu"), spec=SimpleNamespace(vocab_size=vocab))

    def prior_tau(self) -> float | None:
        """No measured tau: the budget model falls back to its untrained prior."""
        return None

    def new_cache(self) -> FakeCache:
        return FakeCache()

    def scores(self, position: int) -> Tensor:
        """Logits [V] at an absolute position."""
        r = self.reference[position] if position < len(self.reference) else 0
        order = [r] + [(r + k) % self.vocab for k in range(1, 5)]
        if position in self.wrong:
            rest = order[1:] if self.wrong[position] else order[2:]
            order = [order[1], r, *order[2:]] if self.wrong[position] else [order[1], *rest]
        logits = torch.full((self.vocab,), -20.0)
        for rank, token in enumerate(order):
            logits[token] = 10.0 - rank
        if position in self.wrong and not self.wrong[position]:
            logits[r] = -30.0  # far outside any fan-out
        return logits

    def block_logits(self, cache: FakeCache, clean: Tensor, anchors: Tensor, anchor_pos: Tensor,
                     rows: int | None = None) -> Tensor:
        self.passes += 1
        if self.fail_after is not None and self.passes > self.fail_after:
            raise RuntimeError("scripted drafter failure")
        known = cache.length + clean.shape[1]  # positions with a clean token after this pass
        assert int(anchor_pos.max()) <= known, "a block anchored beyond the clean prefix"
        if anchors.numel() == 1 and clean.shape[1] == 0:
            assert int(anchor_pos[0]) == cache.length, "sync draft: the cache must hold exactly the tokens before the anchor"
        cache.length = known
        bs = self.block_size
        out = torch.stack([torch.stack([self.scores(int(p) + j) for j in range(1, bs)]) for p in anchor_pos])
        return out[:, :rows]
