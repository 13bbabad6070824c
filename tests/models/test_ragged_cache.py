"""The ragged KV cache: batched passes with per-sequence lengths give each sequence's own logits
(float64, so any difference is a bug, not rounding), per-slot crops, joins and leaves."""

from __future__ import annotations

import pytest
import torch

from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.models.ragged_cache import new_ragged_cache
from d3d.inference.batch_engine import batched_block_logits, verify_logits

TOL = dict(atol=1e-10, rtol=1e-10)


@pytest.fixture(params=["tiny_llama_dir", "tiny_qwen3_dir"])
def model(request):
    return load_decoder(request.getfixturevalue(request.param)).double()


def ids(seed: int, n: int) -> torch.Tensor:
    return torch.randint(0, 96, (1, n), generator=torch.Generator().manual_seed(seed))


def prefilled(model, prompt: torch.Tensor):
    cache = model.new_cache(1, prompt.shape[1] + 4)
    model(Rows.clean(prompt, 0), cache)
    return cache


def alone(model, seq: torch.Tensor) -> torch.Tensor:
    """Logits [n, V] of one sequence in one pass, no cache."""
    return model(Rows.clean(seq, 0))[0]


@torch.no_grad()
def test_ragged_verification_pass_matches_each_sequence_alone(model):
    prompts = [ids(1, 9), ids(2, 4), ids(3, 13)]
    blocks = [ids(4, 5)[0].tolist(), ids(5, 1)[0].tolist(), ids(6, 3)[0].tolist()]  # ragged widths
    cache = new_ragged_cache(model, max_batch=4, capacity=8)  # forces growth
    for p in prompts:
        cache.place(prefilled(model, p))
    logits = verify_logits(model, cache, blocks, [p.shape[1] for p in prompts])
    for r, (p, blk) in enumerate(zip(prompts, blocks)):
        want = alone(model, torch.cat([p, torch.tensor([blk])], 1))[p.shape[1] :]
        torch.testing.assert_close(logits[r, : len(blk)], want, **TOL)


@torch.no_grad()
def test_per_slot_crop_then_next_round_matches_alone(model):
    """Round 1 writes blocks of different widths, each slot keeps a different prefix, round 2 continues."""
    prompts = [ids(7, 6), ids(8, 10)]
    cache = new_ragged_cache(model, max_batch=2)
    for p in prompts:
        cache.place(prefilled(model, p))
    first = [ids(9, 6)[0].tolist(), ids(10, 2)[0].tolist()]
    verify_logits(model, cache, first, [6, 10])
    keep = [3, 1]  # slot 0 keeps 3 of its 6 rows, slot 1 keeps 1 of 2
    cache.set_lengths([6 + keep[0], 10 + keep[1]])
    second = [ids(11, 4)[0].tolist(), ids(12, 3)[0].tolist()]
    logits = verify_logits(model, cache, second, cache.lengths)
    for r in range(2):
        seq = prompts[r][0].tolist() + first[r][: keep[r]] + second[r]
        want = alone(model, torch.tensor([seq]))[-len(second[r]) :]
        torch.testing.assert_close(logits[r, : len(second[r])], want, **TOL)


@torch.no_grad()
def test_release_moves_last_slot_and_keeps_its_state(model):
    prompts = [ids(13, 5), ids(14, 8), ids(15, 3)]
    cache = new_ragged_cache(model, max_batch=3)
    for p in prompts:
        cache.place(prefilled(model, p))
    assert cache.release(0) == 2  # slot 2 moves into slot 0
    assert cache.lengths == [3, 8]
    nxt = [[7], [9]]
    logits = verify_logits(model, cache, nxt, cache.lengths)
    for r, p in enumerate([prompts[2], prompts[1]]):
        want = alone(model, torch.cat([p, torch.tensor([nxt[r]])], 1))[-1]
        torch.testing.assert_close(logits[r, 0], want, **TOL)
    assert cache.release(1) is None and cache.lengths == [4]  # the pass cached its row


def test_invalid_crop_and_full_cache_raise(model):
    cache = new_ragged_cache(model, max_batch=1)
    cache.place(prefilled(model, ids(16, 4)))
    with pytest.raises(ValueError):
        cache.set_lengths([5])  # longer than the slot
    with pytest.raises(ValueError):
        cache.place(prefilled(model, ids(17, 4)))


@torch.no_grad()
def test_batched_drafting_matches_single_sequence_drafting(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir).double()
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, 96, "fp", target=target, dtype=torch.float64)
    seqs = [ids(18, 11)[0].tolist(), ids(19, 5)[0].tolist()]
    cached = [7, 4]  # tokens already in each slot's drafter cache; the rest are fed this pass
    cache = new_ragged_cache(drafter.model, max_batch=2)
    for s, c in zip(seqs, cached):
        cache.place(prefilled(drafter.model, torch.tensor([s[:c]])))
    logits = batched_block_logits(drafter, cache, [s[c:] for s, c in zip(seqs, cached)], [len(s) - 1 for s in seqs])
    assert cache.lengths == [len(s) for s in seqs]
    for r, s in enumerate(seqs):
        want = drafter.draft_logits(drafter.new_cache(), torch.tensor([s]))[0]
        torch.testing.assert_close(logits[r], want, **TOL)


@torch.no_grad()
def test_low_precision_ragged_pass_writes_its_float32_cache(tiny_llama_dir):
    """bfloat16 weights with float32 attention keep a float32 cache; ragged lengths write it by index
    (the served path at batch >= 2), which must cast like the slice write of equal lengths does."""
    from d3d.models.precision import Precision

    model = load_decoder(tiny_llama_dir, dtype=torch.bfloat16)
    model.precision = Precision.for_dtype(torch.bfloat16)
    assert model.cache_dtype == torch.float32
    prompts = [ids(11, 7), ids(12, 3)]  # different lengths: the indexed write
    cache = new_ragged_cache(model, max_batch=2)
    for p in prompts:
        cache.place(prefilled(model, p))
    blocks = [ids(13, 4)[0].tolist(), ids(14, 2)[0].tolist()]
    logits = verify_logits(model, cache, blocks, [p.shape[1] for p in prompts])
    for r, (p, blk) in enumerate(zip(prompts, blocks)):
        want = alone(model, torch.cat([p, torch.tensor([blk])], 1))[p.shape[1] :].float()
        torch.testing.assert_close(logits[r, : len(blk)].float(), want, atol=0.05, rtol=0.05)
