"""Tree acceptance (`tree_verify.py`): exact tables for greedy, and a chi-square test that
multi-candidate rejection emits tokens with the target's exact distribution, node by node."""

from __future__ import annotations

import pytest
import torch

from d3d.inference.sampling import SamplingConfig, probs_from_logits
from d3d.inference.tree_verify import verify_tree, verify_tree_greedy
from tests.helpers import assert_follows

# root (0) -> tokens 3 (1), 5 (3), 1 (4); node 1 -> token 2 (2); node 4 -> token 0 (5)
TOKENS = [4, 3, 2, 5, 1, 0]
CHILDREN = [[1, 3, 4], [2], [], [], [5], []]
VOCAB = 6


def one_hot_logits(argmax: list[int]) -> torch.Tensor:
    """[N, VOCAB] logits whose row i has its maximum at argmax[i]."""
    logits = torch.zeros(len(argmax), VOCAB)
    logits[torch.arange(len(argmax)), torch.tensor(argmax)] = 5.0
    return logits


def test_greedy_follows_the_first_child_chain_to_a_leaf_then_the_bonus():
    result = verify_tree_greedy(TOKENS, CHILDREN, one_hot_logits([3, 2, 4, 0, 0, 0]))
    assert result.path == [0, 1, 2] and result.tokens == [3, 2, 4]


def test_greedy_takes_a_later_child_when_the_first_is_wrong():
    result = verify_tree_greedy(TOKENS, CHILDREN, one_hot_logits([1, 0, 0, 0, 0, 2]))
    assert result.path == [0, 4, 5] and result.tokens == [1, 0, 2]


def test_greedy_mismatch_at_the_root_emits_the_target_token_only():
    result = verify_tree_greedy(TOKENS, CHILDREN, one_hot_logits([4, 0, 0, 0, 0, 0]))
    assert result.path == [0] and result.tokens == [4] and result.num_accepted == 0


def test_greedy_stops_where_the_child_is_wrong():
    result = verify_tree_greedy(TOKENS, CHILDREN, one_hot_logits([5, 0, 0, 3, 0, 0]))
    assert result.path == [0, 3] and result.tokens == [5, 3]


def test_sampling_with_a_greedy_config_is_greedy():
    logits = one_hot_logits([1, 0, 0, 0, 0, 2])
    assert verify_tree(TOKENS, CHILDREN, logits, SamplingConfig()).tokens == [1, 0, 2]


def exact_two_tokens(probs: torch.Tensor) -> torch.Tensor:
    """Exact joint distribution [VOCAB, VOCAB + 1] of (first emitted token, second emitted token or
    'none' in the last column): a second token is emitted exactly when the first is a child's token."""
    child_of = {TOKENS[c]: c for c in CHILDREN[0]}
    joint = torch.zeros(VOCAB, VOCAB + 1, dtype=torch.float64)
    for first in range(VOCAB):
        if first in child_of:
            joint[first, :VOCAB] = probs[0, first] * probs[child_of[first]]
        else:
            joint[first, VOCAB] = probs[0, first]
    return joint


@pytest.mark.parametrize("sampling", [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=4),
                                      SamplingConfig(temperature=1.3, top_p=0.8)])
def test_tree_sampling_emits_the_target_distribution(sampling):
    """Logits mildly peaked so that every child is rejected often: the first token exercises the
    residual after one, two and three rejected children, the second the children's own rows."""
    logits = torch.randn(len(TOKENS), VOCAB, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    want = exact_two_tokens(probs_from_logits(logits, sampling))
    gen = torch.Generator().manual_seed(0)
    counts = torch.zeros(VOCAB, VOCAB + 1)
    for _ in range(6000):
        tokens = verify_tree(TOKENS, CHILDREN, logits, sampling, gen).tokens
        counts[tokens[0], tokens[1] if len(tokens) > 1 else VOCAB] += 1
    assert_follows(counts.flatten(), want.flatten(), str(sampling))
