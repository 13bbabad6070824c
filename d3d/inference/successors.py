"""Successor branches of asynchronous drafting (docs/design.md "Asynchronous drafting", paper 3.4).

While the target verifies the block `[a, d_1..d_n]` (anchor a at position p), one packed drafter
pass prepares the next block for the likely verification outcomes:

    rejection branch (i, t)  for i = 1..C-1 and each of the F alternatives t at position i (the
                             drafter's most likely tokens other than d_i): a block [t, M..M]
                             anchored at p+i, conditioned on prefix + a + d_1..d_{i-1}
    full-acceptance branch   a block [d_n, M..M] anchored at p+n, conditioned on the whole block;
                             its first masked row guesses the target's bonus token g

Words. A verification outcome is (accepted, token): the number of draft tokens the target kept and
the token it appended (recovered at the first rejection, or the bonus). Each branch has a key, the
outcome it was prepared for: (i-1, t) for a rejection branch, (n, g) for full acceptance. A hit
is a branch whose key equals the outcome: the verified prefix plus the target's token is exactly
the branch's conditioning plus anchor. Its candidates are its masked rows' predictions, all B-1
of them for a rejection branch and the B-2 after the guess for full acceptance (the guess row is
the position the target has just filled).

Budget N_async = B((C-1)F + 2) tokens: the current block (B clean rows), (C-1)F rejection blocks
and one full-acceptance block. The current block's rows are clean, so the pass also caches them:
whatever the outcome, the drafter cache is ready once cropped to the verified prefix.

This module plans the branches, runs the pass through `Drafter.block_logits`, and looks outcomes
up. It knows nothing about processes, timing or verification (acceptance lives in `verify.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.models.drafter import Drafter
from d3d.models.kv_cache import KVCache


@dataclass(frozen=True)
class Budget:
    """How many successor branches one packed pass prepares."""

    coverage: int = 12  # C: rejection positions 1..C-1, plus the full-acceptance case
    fanout: int = 2  # F: alternative anchors per rejection position

    def validate(self) -> None:
        if self.coverage < 1 or self.fanout < 1:
            raise D3DError(f"budget needs C >= 1 and F >= 1, got C={self.coverage}, F={self.fanout}")

    def tokens(self, block_size: int) -> int:
        """N_async = B((C-1)F + 2): the nominal rows of one packed successor pass."""
        return block_size * ((self.coverage - 1) * self.fanout + 2)

    @staticmethod
    def parse(text: str) -> Budget:
        """'C,F' -> Budget; D3DError otherwise."""
        try:
            coverage, fanout = (int(x) for x in text.split(","))
        except ValueError:
            raise D3DError(f"budget must be 'auto' or 'C,F' (two integers), got '{text}'") from None
        budget = Budget(coverage, fanout)
        budget.validate()
        return budget

    def __str__(self) -> str:
        return f"C={self.coverage},F={self.fanout}"


@dataclass(frozen=True)
class BranchKey:
    """The verification outcome a branch was prepared for."""

    accepted: int  # draft tokens accepted before the target's token
    token: int  # the target's token: the branch's anchor (rejection) or its bonus guess (full acceptance)


@dataclass
class BranchPlan:
    """Which blocks the packed pass drafts; full acceptance (if any) is the last one."""

    anchors: Tensor  # [k] long: anchor token of each branch block
    offsets: Tensor  # [k] long: anchor position minus the current anchor's position (i, or n)
    keys: list[BranchKey]  # [k-1 or k] keys of the rejection branches (full acceptance's is known after the pass)
    full_acceptance: bool  # whether the last block is the full-acceptance branch


@dataclass
class Successors:
    """The packed pass's result: one key and one row of predictions per branch."""

    keys: list[BranchKey]  # [k]
    logits: Tensor  # [k, B-1, V] drafter logits of each branch's masked rows
    full_acceptance: bool  # whether the last branch is the full-acceptance one
    rows: int  # query rows of the pass (clean + block), the actual token budget spent


def alternative_tokens(draft: Tensor, logits: Tensor, fanout: int) -> Tensor:
    """The drafter's `fanout` most likely tokens other than the drafted one, per position.

    draft: [m] long, logits: [m, V] -> [m, fanout] long, most likely first (ranks 2..F+1 for a
    greedy draft; for a sampled draft, the top tokens with the sampled one left out).
    """
    top = logits.topk(fanout + 1, dim=-1).indices  # [m, F+1]
    keep = top != draft[:, None]
    keep[:, fanout] &= ~keep.all(dim=-1)  # drafted token not in the top F+1: drop rank F+1 instead
    return top[keep].view(-1, fanout)


def plan_branches(block: Tensor, logits: Tensor, budget: Budget, block_size: int) -> BranchPlan:
    """Branches for the current block [a, d_1..d_n] given the drafter's logits [n, V] at d_1..d_n.

    Rejection positions are capped at n; the full-acceptance branch needs B >= 3 (with B = 2 it
    would predict only the bonus, leaving no candidate to reuse).
    """
    n = block.numel() - 1
    m = min(budget.coverage - 1, n)
    alts = alternative_tokens(block[1 : m + 1], logits[:m], budget.fanout)  # [m, F]
    offsets = torch.arange(1, m + 1, device=block.device).repeat_interleave(budget.fanout)
    keys = [BranchKey(int(i) - 1, t) for i, t in zip(offsets.tolist(), alts.flatten().tolist(), strict=True)]
    anchors, full = alts.flatten(), n >= 1 and block_size >= 3
    if full:
        anchors = torch.cat([anchors, block[n:]])
        offsets = torch.cat([offsets, offsets.new_tensor([n])])
    return BranchPlan(anchors, offsets, keys, full)


def draft_successors(
    drafter: Drafter, cache: KVCache, block: Tensor, logits: Tensor, budget: Budget
) -> Successors | None:
    """Run the packed successor pass for block [n+1] = [a, d_1..d_n] with drafter logits [n, V].

    Cache invariant: on entry the cache holds exactly the tokens before a (so a sits at position
    cache.length); on exit it also holds a, d_1..d_n, and the caller crops it to the verified
    prefix. None when there is nothing to branch on (n = 0).
    """
    plan = plan_branches(block, logits, budget, drafter.block_size)
    if plan.anchors.numel() == 0:
        return None
    anchor_pos = cache.length
    out = drafter.block_logits(cache, block.view(1, -1), plan.anchors, plan.offsets + anchor_pos)
    keys = list(plan.keys)
    if plan.full_acceptance:
        keys.append(BranchKey(block.numel() - 1, int(out[-1, 0].argmax())))
    rows = block.numel() + plan.anchors.numel() * drafter.block_size
    return Successors(keys, out, plan.full_acceptance, rows)


def find_branch(keys: Sequence[BranchKey], accepted: int, token: int) -> int | None:
    """Index of the branch prepared for outcome (accepted, token), or None (a miss)."""
    for index, key in enumerate(keys):
        if key.accepted == accepted and key.token == token:
            return index
    return None


def branch_logits(successors: Successors, index: int) -> Tensor:
    """Logits [m, V] of the next round's candidates from branch `index` (m = B-1, or B-2 after
    the guess row for full acceptance)."""
    logits = successors.logits[index]
    full = successors.full_acceptance and index == len(successors.keys) - 1
    return logits[1:] if full else logits
