"""Token trees: prompt lookup, best-first drafter candidates, the trie layout, the node budget, the
ancestor-only attention of a tree pass, and the compacted cache after it."""

from __future__ import annotations

import itertools

import pytest
import torch

from d3d.inference.draft_length import Calibration
from d3d.inference.lookup import NgramIndex
from d3d.inference.pass_costs import PassCosts
from d3d.inference.tree import (
    DRAFTER, LOOKUP, LookupRates, TreePlanner, drafter_candidates, layout, merge_candidates, ranked_drafter_tokens,
)
from d3d.inference.tree_engine import target_rows
from d3d.models.attention import Rows
from d3d.models.decoder import load_decoder
from tests.helpers import prompt

# --- prompt lookup ------------------------------------------------------------------------------


def test_lookup_prefers_the_longest_then_the_latest_match():
    index = NgramIndex(max_ngram=3)
    index.extend([5, 6, 7, 1, 6, 7, 2, 9, 5, 6, 7])
    match = index.lookup(2)
    assert match.ngram == 3 and match.tokens == [1, 6]  # "5 6 7" occurred once, followed by 1 6
    index.extend([8, 6, 7])
    match = index.lookup(3)
    assert match.ngram == 2 and match.tokens == [8, 6, 7]  # "6 7": its latest occurrence is followed by 8


def test_lookup_continues_a_repetition_past_the_end_and_misses_cleanly():
    index = NgramIndex(max_ngram=2)
    index.extend([4, 1, 2, 1, 2])
    assert index.lookup(5).tokens == [1, 2, 1, 2, 1]  # an overlapping copy of period 2
    fresh = NgramIndex()
    fresh.extend([1, 2, 3])
    assert fresh.lookup(4) is None and index.lookup(0) is None


# --- candidates, trie and layout ---------------------------------------------------------------


def test_drafter_candidates_are_the_best_paths_in_order():
    scores = torch.rand(3, 3, generator=torch.Generator().manual_seed(0)).sort(1, descending=True).values / 3
    tokens = torch.arange(9).view(3, 3)
    got = drafter_candidates(scores, tokens, limit=10)
    brute = []
    for depth in range(1, 4):
        for ranks in itertools.product(range(3), repeat=depth):
            score = float(torch.tensor([scores[j, r] for j, r in enumerate(ranks)]).prod())
            brute.append((tuple(int(tokens[j, r]) for j, r in enumerate(ranks)), score))
    brute.sort(key=lambda c: -c[1])
    assert [p for p, _ in got] == [p for p, _ in brute[:10]]
    assert all(abs(a - b) < 1e-6 for (_, a), (_, b) in zip(got, brute))


def test_ranked_drafter_tokens_calibrates_the_top_token_and_shares_the_rest_by_probability():
    probs = torch.tensor([[0.0, 0.7, 0.3, 0.0], [0.25, 0.25, 0.5, 0.0]])
    calibration = Calibration(edges=(0.0, 0.4, 1.0), accept=(0.6, 0.2), identity=False)  # low confidence accepted more
    scores, tokens = ranked_drafter_tokens(probs, calibration, top_k=3)
    # row 0: the top token (0.7) is accepted at 0.2; token 2 holds all the drafter's remaining mass: 0.8
    assert tokens[0, :2].tolist() == [2, 1] and scores[0].tolist() == pytest.approx([0.8, 0.2, 0.0])
    # row 1: top token 2 (0.5) at 0.2; tokens 0 and 1 (0.25 each) share 0.8 in the drafter's proportions
    assert sorted(tokens[1, :2].tolist()) == [0, 1] and tokens[1, 2] == 2
    assert scores[1].tolist() == pytest.approx([0.4, 0.4, 0.2])
    identity, _ = ranked_drafter_tokens(probs, Calibration(), top_k=3)
    assert identity.flatten().tolist() == pytest.approx([0.7, 0.3, 0.0, 0.5, 0.25, 0.25])  # no table: the probabilities


def test_a_weak_second_guess_is_not_scored_at_the_top_tokens_rate():
    """The calibration table is the top token's acceptance by confidence: reading a 2% second
    guess through it (bin [0, 0.4) -> 0.5) would score it 25 times its chance and grow the tree."""
    probs = torch.tensor([[0.9, 0.02, 0.02, 0.02, 0.02, 0.02]])
    calibration = Calibration(edges=(0.0, 0.4, 1.0), accept=(0.5, 0.8), identity=False)
    scores, tokens = ranked_drafter_tokens(probs, calibration, top_k=6)
    assert tokens[0, 0] == 0 and scores[0, 0] == pytest.approx(0.8)
    assert scores[0, 1:].tolist() == pytest.approx([0.2 * 0.02 / 0.1] * 5)  # (1 - 0.8) x 0.02 / (1 - 0.9) = 0.04


def test_merged_trie_layout_is_depth_first_with_shared_nodes_flagged():
    drafted = [((7,), 0.6), ((7, 8), 0.3), ((5,), 0.2)]
    looked_up = [((7,), 0.5), ((7, 9), 0.4), ((7, 9, 1), 0.35)]
    nodes = merge_candidates(drafted, looked_up)
    assert nodes[0] == ((7,), 0.6, DRAFTER | LOOKUP)
    tree = layout(3, nodes)
    assert tree.tokens == [3, 7, 9, 1, 8, 5]
    assert tree.parents == [-1, 0, 1, 2, 1, 0]
    assert tree.sources == [0, DRAFTER | LOOKUP, LOOKUP, LOOKUP, DRAFTER, DRAFTER]
    assert tree.depths == [0, 1, 2, 3, 2, 1] and not tree.is_chain
    assert tree.children() == [[1, 5], [2, 4], [3], [], [], []]
    want = torch.tensor([[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0],
                         [1, 1, 0, 0, 1, 0], [1, 0, 0, 0, 0, 1]], dtype=torch.bool)
    assert torch.equal(tree.ancestors(), want)


def test_planner_spends_nodes_only_while_they_pay():
    costs = PassCosts({1: 1.0, 2: 1.1, 8: 1.4, 64: 4.0})
    planner = TreePlanner(costs)
    assert planner.best_count([0.9, 0.8, 0.05, 0.01], t_d=0.0) == 2  # the 0.05 node is not worth 0.04 s
    assert planner.best_count([0.05], t_d=0.0) == 0  # a plain step
    scores, tokens = torch.tensor([[0.9, 0.05], [0.9, 0.05]]), torch.tensor([[1, 2], [3, 4]])
    tree = planner.plan(0, scores, tokens, None, depth=2)
    assert tree.tokens == [0, 1, 3] and tree.is_chain


def test_lookup_rates_count_only_verified_depths():
    rates = LookupRates()
    rates.observe(verified=4, accepted=1)  # depth 1 accepted, depth 2 rejected, 3 and 4 never tested
    assert rates.proposed[:4] == [1, 1, 0, 0] and rates.accepted[:2] == [1, 0]
    prior = rates.rates(4)[3]
    assert rates.rates(4)[0] > prior > rates.rates(4)[1]


# --- the tree pass and the compacted cache ------------------------------------------------------


def tree_fixture(tiny_llama_dir, dtype=torch.float64):
    target = load_decoder(tiny_llama_dir, dtype=dtype)
    nodes = merge_candidates([((11,), 0.9), ((11, 12), 0.8), ((13,), 0.7), ((11, 14), 0.6), ((13, 15), 0.5),
                              ((11, 12, 16), 0.4)], [])
    return target, layout(10, nodes)


def test_tree_pass_logits_equal_each_path_run_as_a_chain(tiny_llama_dir):
    target, tree = tree_fixture(tiny_llama_dir)
    p = prompt(1)
    cache = target.new_cache(1, 64)
    target(Rows.clean(p, 0), cache)
    start = cache.length
    logits = target(target_rows(tree, start, torch.device("cpu")), cache)[0]  # [N, V]
    assert cache.length == start + tree.size
    for node in range(tree.size):
        path = [node]
        while tree.parents[path[-1]] >= 0:
            path.append(tree.parents[path[-1]])
        ids = torch.tensor([[tree.tokens[i] for i in reversed(path)]])
        alone = target(Rows.clean(torch.cat([p, ids], 1), 0))[0, -1]
        torch.testing.assert_close(logits[node], alone, rtol=0, atol=1e-10)


def test_compacted_cache_equals_plain_decoding_of_the_accepted_tokens(tiny_llama_dir):
    target, tree = tree_fixture(tiny_llama_dir)
    p = prompt(2)
    for path in ([0, 1, 2, 3], [0, 5, 6], [0, 1, 4], [0]):  # the contiguous first chain, and detours
        cache = target.new_cache(1, 16)  # small: the tree pass grows it
        target(Rows.clean(p, 0), cache)
        start = cache.length
        target(target_rows(tree, start, torch.device("cpu")), cache)
        cache.keep_columns(start, path)
        plain = target.new_cache(1, 64)
        target(Rows.clean(p, 0), plain)
        for node in path:  # plain decoding, one token per step
            target(Rows.clean(torch.tensor([[tree.tokens[node]]]), plain.length), plain)
        assert cache.length == plain.length == start + len(path)
        end = cache.length
        assert torch.equal(cache.positions[:, :end], plain.positions[:, :end])
        assert bool(cache.valid[:, :end].all())
        torch.testing.assert_close(cache.keys[:, :, :, :end], plain.keys[:, :, :, :end], rtol=0, atol=1e-10)
        torch.testing.assert_close(cache.values[:, :, :, :end], plain.values[:, :, :, :end], rtol=0, atol=1e-10)
