"""The packed successor pass equals every branch run alone; branch planning and lookup tables."""

from __future__ import annotations

import pytest
import torch

from d3d.errors import D3DError
from d3d.inference.successors import (
    BranchKey,
    Budget,
    Successors,
    alternative_tokens,
    branch_logits,
    draft_successors,
    find_branch,
    plan_branches,
)
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID


@pytest.fixture(params=[("tiny_llama_dir", "same-position"), ("tiny_qwen3_dir", "same-position"),
                        ("tiny_llama_dir", "next-token")])
def drafter64(request):
    model_dir, labels = request.param
    model_dir = request.getfixturevalue(model_dir)
    target = load_decoder(model_dir)
    return Drafter.from_base(model_dir, [0, 2], 5, MASK_ID, "fp", target=target, labels=labels).double()


def prefilled(drafter: Drafter, prefix: torch.Tensor):
    cache = drafter.new_cache()
    drafter.model(Rows.clean(prefix, 0), cache, logits_from=prefix.shape[1] - 1)
    return cache


@torch.no_grad()
def test_packed_pass_equals_every_branch_alone(drafter64):
    g = torch.Generator().manual_seed(0)
    p, bs = 9, drafter64.block_size
    prefix = torch.randint(0, 90, (1, p), generator=g)
    block = torch.randint(0, 90, (bs,), generator=g)  # [a, d_1..d_4]
    logits = torch.randn(bs - 1, 97, generator=g, dtype=torch.float64)
    cache = prefilled(drafter64, prefix)
    succ = draft_successors(drafter64, cache, block, logits, Budget(4, 2))
    assert len(succ.keys) == 3 * 2 + 1 and succ.full_acceptance
    assert succ.rows == bs + 7 * bs
    assert cache.length == p + bs  # the current block is now cached, speculatively
    plan = plan_branches(block, logits, Budget(4, 2), bs)
    seq = torch.cat([prefix[0], block])
    for b, (anchor, off) in enumerate(zip(plan.anchors.tolist(), plan.offsets.tolist(), strict=True)):
        alone_cache = drafter64.new_cache()  # prefix + a + d_1..d_{off-1}, then the branch alone
        alone = drafter64.block_logits(alone_cache, seq[: p + off].view(1, -1), torch.tensor([anchor]), torch.tensor([p + off]))
        torch.testing.assert_close(succ.logits[b], alone[0], atol=1e-10, rtol=1e-10)
    # the speculatively cached block equals a plain causal pass over prefix + block
    fresh = drafter64.new_cache()
    drafter64.model(Rows.clean(seq.view(1, -1), 0), fresh)
    torch.testing.assert_close(cache.keys[:, :, :, : p + bs], fresh.keys[:, :, :, : p + bs], atol=1e-10, rtol=1e-10)
    assert succ.keys[-1] == BranchKey(bs - 1, int(succ.logits[-1, 0].argmax()))


@torch.no_grad()
def test_branches_never_see_each_other(drafter64):
    g = torch.Generator().manual_seed(1)
    p, bs = 7, drafter64.block_size
    prefix, block = torch.randint(0, 90, (1, p), generator=g), torch.randint(0, 90, (1, bs), generator=g)
    anchors, pos = torch.tensor([11, 12, 13, int(block[0, -1])]), torch.tensor([p + 1, p + 1, p + 2, p + bs - 1])
    base = drafter64.block_logits(prefilled(drafter64, prefix), block, anchors, pos)
    changed = anchors.clone()
    changed[1] = 40  # another anchor token for branch 1 only
    other = drafter64.block_logits(prefilled(drafter64, prefix), block, changed, pos)
    keep = [0, 2, 3]
    torch.testing.assert_close(other[keep], base[keep], atol=0, rtol=0)
    assert not torch.allclose(other[1], base[1])


def test_alternatives_skip_the_drafted_token():
    logits = torch.tensor([[5.0, 4, 3, 2, 1], [5.0, 4, 3, 2, 1], [5.0, 4, 3, 2, 1]])
    draft = torch.tensor([0, 2, 4])  # rank 1, rank 3, outside the top F+1
    assert alternative_tokens(draft, logits, 2).tolist() == [[1, 2], [0, 1], [0, 1]]
    assert alternative_tokens(draft, logits, 1).tolist() == [[1], [0], [0]]
    assert alternative_tokens(draft[:0], logits[:0], 2).shape == (0, 2)


@pytest.mark.parametrize(
    "n, budget, block_size, rejection_offsets, full",
    [
        (4, Budget(4, 2), 5, [1, 1, 2, 2, 3, 3], True),
        (2, Budget(12, 1), 16, [1, 2], True),  # coverage capped at the candidates there are
        (4, Budget(1, 3), 5, [], True),  # C = 1: full acceptance only
        (1, Budget(3, 1), 2, [1], False),  # B = 2: full acceptance would leave no candidate
    ],
)
def test_plan_branches(n, budget, block_size, rejection_offsets, full):
    block = torch.arange(10, 11 + n)
    logits = torch.randn(n, 20, generator=torch.Generator().manual_seed(n))
    plan = plan_branches(block, logits, budget, block_size)
    assert plan.full_acceptance == full
    assert plan.offsets.tolist() == rejection_offsets + ([n] if full else [])
    assert [k.accepted for k in plan.keys] == [i - 1 for i in rejection_offsets]
    assert plan.anchors[: len(rejection_offsets)].tolist() == [k.token for k in plan.keys]
    if full:
        assert int(plan.anchors[-1]) == int(block[-1])


KEYS = [BranchKey(0, 7), BranchKey(0, 8), BranchKey(1, 7), BranchKey(3, 5)]


@pytest.mark.parametrize(
    "accepted, token, index",
    [
        (0, 7, 0),  # rejected at position 1, target chose the best alternative
        (0, 8, 1),  # ... the second alternative
        (1, 7, 2),  # rejected at position 2
        (3, 5, 3),  # full acceptance, bonus guessed right
        (0, 9, None),  # the target's token is no alternative
        (2, 7, None),  # rejection position not covered
        (3, 6, None),  # full acceptance, bonus guessed wrong
    ],
)
def test_find_branch(accepted, token, index):
    assert find_branch(KEYS, accepted, token) == index


def test_full_acceptance_branch_hands_out_one_candidate_fewer():
    logits = torch.arange(2 * 4 * 3, dtype=torch.float32).view(2, 4, 3)
    succ = Successors([BranchKey(0, 1), BranchKey(4, 2)], logits, True, 0)
    assert branch_logits(succ, 0).shape == (4, 3)
    torch.testing.assert_close(branch_logits(succ, 1), logits[1, 1:])


def test_budget_tokens_and_parsing():
    assert Budget(12, 2).tokens(16) == 16 * (11 * 2 + 2)
    assert Budget(1, 1).tokens(16) == 32
    assert Budget.parse("3,2") == Budget(3, 2)
    for bad in ("3", "a,b", "0,1", "2,0"):
        with pytest.raises(D3DError, match="budget"):
            Budget.parse(bad)
