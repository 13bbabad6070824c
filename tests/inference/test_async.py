"""Asynchronous speculative decoding is lossless, and its hits are exactly the expected ones.

In-process backends (inline: serial; thread: concurrent) run the same state machine as the worker
process (tests/inference/test_async_worker.py)."""

from __future__ import annotations

import pytest
import torch

from d3d.inference.async_drafting import InlineBackend, SuccessorDrafter, ThreadBackend
from d3d.inference.async_engine import AsyncDecodeStats, async_speculative_decode
from d3d.inference.engine import GenerationConfig
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.inference.successors import Budget
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, assert_follows, count_positions, exact_marginals, greedy, prompt, small_vocab_target
from tests.inference.sources import ScriptedDrafter


def make_backend(kind: str, drafter):
    return InlineBackend(SuccessorDrafter(drafter)) if kind == "inline" else ThreadBackend(lambda: drafter)


def run_async(target, backend, prompt, budget, max_new=40, cfg=None, eos=()):
    cfg = cfg or GenerationConfig(max_new_tokens=max_new)
    stats = AsyncDecodeStats("async")
    stop = StopChecker(cfg.max_new_tokens, eos)
    out = [t for chunk in async_speculative_decode(target, backend, prompt, cfg, stop, stats, budget) for t in chunk]
    return out, stats


def lookups(stats: AsyncDecodeStats) -> int:
    """Rounds whose candidates came from a branch lookup (all but the first and a draftless last)."""
    return sum(e["kind"] == "verify" and e["source"] in ("hit", "miss") for e in stats.timeline)


@pytest.fixture(scope="module")
def target(tiny_llama_dir):
    return load_decoder(tiny_llama_dir)


@pytest.mark.parametrize("kind", ["inline", "thread"])
@pytest.mark.parametrize("block_size, budget", [(4, Budget(1, 1)), (4, Budget(2, 1)), (5, Budget(3, 2)),
                                                (4, Budget(16, 3)), (2, Budget(2, 2))])
def test_greedy_identical_with_untrained_drafter(tiny_llama_dir, target, kind, block_size, budget):
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], block_size, MASK_ID, "fp", target=target)
    backend = make_backend(kind, drafter)
    try:
        for seed in range(2):
            got, stats = run_async(target, backend, prompt(seed), budget)
            assert got == greedy(target, prompt(seed))
            assert stats.rounds >= 40 / block_size and stats.hits + stats.misses == lookups(stats) >= stats.rounds - 2
            assert stats.successor_passes >= lookups(stats)
    finally:
        backend.close()


@pytest.mark.parametrize("budget", [Budget(2, 2), Budget(3, 1)])
def test_thread_backend_samples_exactly_what_the_inline_backend_samples(target, budget):
    """Same seed, same sampled output and the same hits: where the drafting side runs changes no
    random draw (the process backend: test_async_worker.py). The scripted drafter samples among
    its five ranked tokens, so rounds end in hits and misses."""
    p = prompt(4)
    scripted = ScriptedDrafter(p[0].tolist() + greedy(target, p, max_new=40), 5, 97, SCENARIOS["mixed"])
    sampling = SamplingConfig(temperature=1.5, top_k=4)
    outputs, hits = [], 0
    for seed in range(3):
        cfg = GenerationConfig(max_new_tokens=30, sampling=sampling, seed=seed)
        runs = {}
        for kind in ("inline", "thread"):
            backend = make_backend(kind, scripted)
            try:
                out, stats = run_async(target, backend, p, budget, cfg=cfg)
            finally:
                backend.close()
            runs[kind] = (out, stats.hits, stats.misses, stats.accept_hist)
        assert runs["thread"] == runs["inline"]
        outputs.append(runs["inline"][0])
        hits += runs["inline"][1]
    assert hits > 0 and len({tuple(o) for o in outputs}) == 3  # successor branches used; really sampled


def test_greedy_identical_with_scripted_oracle(target):
    """A drafter that is always right: every round after the first is a full-acceptance hit."""
    p = prompt(3)
    want = greedy(target, p, max_new=48)
    oracle = ScriptedDrafter(p[0].tolist() + want, 6, 97)
    got, stats = run_async(target, InlineBackend(SuccessorDrafter(oracle)), p, Budget(3, 2), max_new=48)
    assert got == want
    assert stats.misses == 0 and stats.hits == lookups(stats) >= stats.rounds - 2
    assert stats.accept_hist[6] == 1  # first block: B-1 candidates, all accepted
    assert stats.tau > 4.5  # then B-2 candidates per round (the guess row is the bonus)


def simulate(prompt_len: int, max_new: int, wrong: dict[int, bool], bs: int, budget: Budget) -> tuple[int, int, int]:
    """(hits, misses, rounds) that the rules of DESIGN.md predict for a `ScriptedDrafter`."""
    anchor, produced, available = prompt_len, 1, bs - 1
    hits = misses = rounds = 0
    while produced < max_new:
        n = min(bs - 1, max_new - produced - 1, available)
        rounds += 1
        rejected = next((i for i in range(1, n + 1) if anchor + i in wrong), None)
        accepted = n if rejected is None else rejected - 1
        produced, anchor = produced + accepted + 1, anchor + accepted + 1
        if produced >= max_new or max_new - produced - 1 == 0:
            rounds += max_new - produced  # a last single-token round without a draft
            break
        if rejected is None:
            hit = bs >= 3 and n >= 1 and anchor not in wrong
            available = bs - 2 if hit else bs - 1
        else:
            hit = rejected <= budget.coverage - 1 and wrong[anchor]
            available = bs - 1
        hits, misses = hits + hit, misses + (not hit)
    return hits, misses, rounds


SCENARIOS = {
    "all right": {},
    "all wrong, caught": {j: True for j in range(200)},
    "all wrong, not caught": {j: False for j in range(200)},
    "mixed": {j: j % 3 == 0 for j in range(200) if j % 4 in (1, 2)},
}


@pytest.mark.parametrize("kind", ["inline", "thread"])
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("budget", [Budget(1, 1), Budget(2, 1), Budget(3, 2)])
def test_hit_accounting_matches_a_scripted_drafter(target, kind, scenario, budget):
    p, bs, max_new = prompt(4), 5, 40
    want = greedy(target, p, max_new=max_new)
    wrong = {j: v for j, v in SCENARIOS[scenario].items() if j > p.shape[1]}
    scripted = ScriptedDrafter(p[0].tolist() + want, bs, 97, wrong)
    backend = make_backend(kind, scripted)
    try:
        got, stats = run_async(target, backend, p, budget, max_new=max_new)
    finally:
        backend.close()
    assert got == want
    assert (stats.hits, stats.misses, stats.rounds) == simulate(p.shape[1], max_new, wrong, bs, budget)
    if scenario == "all wrong, caught":
        assert stats.hits == (lookups(stats) if budget.coverage >= 2 else 0)
    if scenario == "all wrong, not caught":
        assert stats.hits == 0


@pytest.mark.parametrize("eos_at", [6, 11])  # 6: inside a block (tokens dropped), 11: at a block's end
def test_eos_stops_at_the_same_token(target, eos_at):
    ref = greedy(target, prompt(5), max_new=30)
    eos = ref[eos_at]
    want = ref[: ref.index(eos) + 1]
    oracle = ScriptedDrafter(prompt(5)[0].tolist() + ref, 4, 97)
    got, stats = run_async(target, InlineBackend(SuccessorDrafter(oracle)), prompt(5), Budget(2, 1), max_new=30, eos=[eos])
    assert got == want and stats.stop_reason == "eos"
    assert stats.round_tokens == len(got) - 1  # the tokens after the eos in its block are not counted


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.3), SamplingConfig(temperature=0.8, top_k=6, top_p=0.9)])
def test_sampling_preserves_target_distribution(tmp_path, sampling):
    """Every generated token follows the target exactly, also those verified against a successor
    branch's q after a hit (most rounds after the first here). Every generated token is counted:
    candidates, recovered tokens and bonus tokens (a round whose every candidate was accepted)."""
    target = small_vocab_target(tmp_path, layers=2, head_scale=2.5)  # peaked
    drafter = Drafter.from_base(tmp_path, [0], 4, 11, "fp", dtype=torch.float64)  # its own head, to sharpen alone
    with torch.no_grad():  # a drafter that is related to the target but often wrong
        drafter.model.lm_head.weight.mul_(2.5)
    n_runs, depth = 800, 5
    p = torch.tensor([[1, 2, 3]])
    want = exact_marginals(target, p, sampling, depth)
    backend = InlineBackend(SuccessorDrafter(drafter))
    outputs, hits, lookups, bonuses = [], 0, 0, 0
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        out, stats = run_async(target, backend, p, Budget(3, 3), cfg=cfg)
        outputs.append(out)
        hits, lookups = hits + stats.hits, lookups + stats.hits + stats.misses
        bonuses += sum(e["kind"] == "verify" and 1 < e["rows"] == e["accepted"] + 1 for e in stats.timeline)
    assert hits > 100 and lookups - hits > 50  # both paths are exercised
    assert bonuses > 100  # bonus tokens (every draft of a round accepted) are among the counted positions
    counts = count_positions(outputs, depth, 12)
    for k in range(depth):
        assert_follows(counts[k], want[k], f"position {k}")
