"""Tree decoding is lossless: greedy output equals plain greedy decoding for trees of every shape,
and sampled output follows the target's distribution under temperature, top-k and top-p."""

from __future__ import annotations

import pytest
import torch

from d3d.errors import D3DError
from d3d.inference.engine import GenerationConfig, autoregressive_decode
from d3d.inference.pass_costs import PassCosts
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.inference.tree import TreePlanner
from d3d.inference.tree_engine import TreeConfig, TreeStats, parse_branches, tree_decode
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, assert_follows, count_positions, exact_marginals, prompt, small_vocab_target
from tests.helpers import run_decode as run


def run_tree(target, drafter, p, planner, branches=("drafter", "lookup"), cfg=None, max_new=40, top_k=4):
    cfg = cfg or GenerationConfig(max_new_tokens=max_new)
    stats = TreeStats("tree")
    chunks = tree_decode(target, drafter, p, cfg, StopChecker(cfg.max_new_tokens, ()), stats, planner,
                         TreeConfig(branches=branches, top_k=top_k))
    return [t for chunk in chunks for t in chunk], stats


@pytest.mark.parametrize("nodes, top_k", [(1, 1), (3, 2), (12, 4), (63, 8)])
def test_greedy_identical_for_every_tree_shape(target_dir, nodes, top_k):
    """Fixed node counts from a chain of one to 63 nodes (several children per node from top_k 2
    on), both branches: every output equals plain greedy decoding."""
    target = load_decoder(target_dir)
    drafter = Drafter.from_base(target_dir, [0, 1], 8, MASK_ID, "fp", target=target)
    want, _ = run(autoregressive_decode, target, prompt(0))
    got, stats = run_tree(target, drafter, prompt(0), TreePlanner(PassCosts({1: 1.0}), fixed=nodes), top_k=top_k)
    assert got == want
    assert stats.new_tokens == 40 and sum(stats.wins.values()) == stats.rounds


@pytest.mark.parametrize("branches", [("drafter",), ("lookup",)])
def test_greedy_identical_with_one_branch(tiny_llama_dir, branches):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 8, MASK_ID, "fp", target=target)
    want, _ = run(autoregressive_decode, target, prompt(1))
    got, stats = run_tree(target, drafter, prompt(1), TreePlanner(PassCosts({1: 1.0}), fixed=12), branches)
    assert got == want
    other = "lookup" if branches == ("drafter",) else "drafter"
    assert stats.wins.get(other, 0) == stats.wins.get("both", 0) == 0
    assert (stats.drafter_rounds > 0) == (branches == ("drafter",))


def test_greedy_identical_with_the_cost_model_choosing_the_tree(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1, 2, 3], 16, MASK_ID, "fp", target=target)
    costs = PassCosts({1: 1.0, 16: 1.4, 64: 3.0})
    for seed in range(3):
        want, _ = run(autoregressive_decode, target, prompt(seed), max_new=60)
        got, stats = run_tree(target, drafter, prompt(seed), TreePlanner(costs, draft_s=0.2), max_new=60)
        assert got == want
        assert stats.tau > 1 and stats.tree_nodes > 0 and stats.nodes_hist


def test_tree_branches_are_checked():
    assert parse_branches("lookup, drafter") == ("lookup", "drafter")
    with pytest.raises(D3DError, match="--tree-branches"):
        parse_branches("drafter,ngram")
    with pytest.raises(D3DError, match="--tree-branches"):
        parse_branches(",")


WARPED = SamplingConfig(temperature=0.9, top_k=8, top_p=0.95)


@pytest.mark.parametrize("sampling", [
    WARPED,
    pytest.param(SamplingConfig(temperature=1.0), marks=pytest.mark.slow),
    pytest.param(SamplingConfig(temperature=0.7, top_k=5), marks=pytest.mark.slow),
    pytest.param(SamplingConfig(temperature=1.2, top_p=0.85), marks=pytest.mark.slow),
])
def test_tree_sampling_preserves_target_distribution(tmp_path, sampling):
    """A peaked 12-token float64 target, the target itself as a next-token drafter (B = 4, its top
    3 tokens per position, so the first child often holds much of p) and prompt lookup: 8-node
    trees with up to 3 children per node. The first generated positions then come from accepted
    children, residuals after one or more rejected children, and bonus tokens; position 0 is the
    prefill's sample. (Each warping alone: tests/inference/test_tree_verify.py, and the slow marks.)"""
    target = small_vocab_target(tmp_path, head_scale=2.5)
    drafter = Drafter.from_base(tmp_path, [0], 4, 11, "fp", target=target, dtype=torch.float64, labels="next-token")
    depth, n_runs = 4, 800
    p = torch.tensor([[1, 2, 1]])
    want = exact_marginals(target, p, sampling, depth)
    outputs = []
    for seed in range(n_runs):
        cfg = GenerationConfig(max_new_tokens=depth, sampling=sampling, seed=seed)
        out, _ = run_tree(target, drafter, p, TreePlanner(PassCosts({1: 1.0}), fixed=8), cfg=cfg, top_k=3)
        outputs.append(out)
    counts = count_positions(outputs, depth, 12)
    for k in range(depth):
        assert_follows(counts[k], want[k], f"position {k}")
