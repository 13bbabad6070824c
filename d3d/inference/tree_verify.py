"""Lossless verification of a token tree of deterministic candidates: the tree's acceptance rule.

The target scores every node of the tree in one pass; row i of its logits is the target's
distribution of the token after the path root .. node i. Walking down from the root:

- greedy: at each node, descend into the child whose token is the target's argmax there; stop at
  a node with no such child and append the argmax. The accepted path is the longest path of the
  tree that equals the target's own greedy continuation.
- sampling (multi-candidate rejection for deterministic candidates, the single-draft rule of
  Leviathan et al. 2023 applied child by child with residual updates, as in SpecInfer, Miao et al.
  2023, arXiv:2305.09781, for one-hot proposals): at a node with target distribution p, set the
  residual p' = p and try its children c_1, c_2, .. in order. Accept c with probability
  p'(c) / sum(p') (the residual's mass on c); on rejection set p'(c) = 0 (the renormalisation is
  implicit: the test divides by the remaining mass). An accepted child becomes the next node. If
  every child is rejected (or the node is a leaf), emit a sample from p'.

Why it is exact: with distinct children, P(emit c_j) = prod_{i<j}(1 - p(c_i)/M_{i-1}) *
p(c_j)/M_{j-1}, where M_i = 1 - p(c_1) - .. - p(c_i); the product telescopes to M_{j-1}, so
P(emit c_j) = p(c_j). Any other token x is emitted after all m rejections (probability M_m) from
p' = p / M_m off the children, so P(emit x) = p(x). Each node therefore emits a token distributed
exactly as p, and descending into an accepted child continues from the target's distribution
given that token, so the emitted sequence follows the target token by token (docs/design.md,
"Tree verification"). It needs the children of a node to be distinct tokens (a trie) and the
tree to be fixed before the target's random draws.

Words as in `verify.py`: accepted (a tree node kept), recovered (the sample from the residual after
the children of the last node were rejected) and bonus (the sample at an accepted leaf: a leaf has
no children, so its residual is p itself).

Pure functions over tensors and the tree's shape (node tokens, children lists): this module knows
nothing about models, caches or how the tree was built. Two host syncs per round: the children's
probabilities and uniforms, and the emitted token. Tests: tests/inference/test_tree_verify.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample


@dataclass
class TreeVerifyResult:
    """What one tree verification appends to the sequence."""

    path: list[int]  # accepted nodes, root (node 0) first: [0, n_1, .., n_a]
    tokens: list[int]  # [a + 1] the accepted nodes' tokens, then the recovered or bonus token

    @property
    def num_accepted(self) -> int:
        return len(self.path) - 1


def verify_tree_greedy(tokens: list[int], children: list[list[int]], target_logits: Tensor) -> TreeVerifyResult:
    """The longest tree path equal to the target's argmax chain, then the target's argmax.

    tokens: [N] node tokens (node 0 the root); children: [N] lists of child indices;
    target_logits: [N, V], row i scoring the token after the path to node i.
    """
    best = target_logits.argmax(-1).tolist()  # [N], the one host sync
    node, path = 0, [0]
    while True:
        nxt = next((c for c in children[node] if tokens[c] == best[node]), None)
        if nxt is None:
            return TreeVerifyResult(path, [tokens[i] for i in path[1:]] + [best[node]])
        node = nxt
        path.append(node)


def verify_tree_sampling(
    tokens: list[int],
    children: list[list[int]],
    target_logits: Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> TreeVerifyResult:
    """Multi-candidate rejection sampling down the tree (module docstring). Shapes as in
    `verify_tree_greedy`; p = `probs_from_logits(target_logits, cfg)`; cfg samples (`verify_tree`
    dispatches greedy)."""
    p = probs_from_logits(target_logits, cfg)  # [N, V]
    n = len(tokens)
    parents = torch.zeros(n, dtype=torch.long)
    for node, kids in enumerate(children):
        parents[kids] = node
    token_ids = torch.tensor(tokens, device=p.device)
    p_node = p[parents.to(p.device), token_ids]  # [N] each node's probability under its parent's row
    u = torch.rand(n, generator=generator, dtype=p.dtype, device=p.device)
    p_node_h, u_h = torch.stack([p_node, u]).tolist()  # one host sync
    node, path = 0, [0]
    while True:
        rejected, accepted = [], None
        remaining = 1.0  # the residual's mass, 1 - p(rejected children)
        for child in children[node]:
            if u_h[child] * remaining < p_node_h[child]:
                accepted = child
                break
            rejected.append(child)
            remaining = max(remaining - p_node_h[child], 0.0)
        if accepted is None:
            break
        node = accepted
        path.append(node)
    emitted = int(sample(_residual(p[node], [tokens[c] for c in rejected]), generator))
    return TreeVerifyResult(path, [tokens[i] for i in path[1:]] + [emitted])


def _residual(p: Tensor, removed: list[int]) -> Tensor:
    """p [V] with the rejected children's tokens set to 0 (unnormalised: `sample` normalises); p
    itself where that leaves nothing, which cannot happen in exact arithmetic (a child holding all
    the remaining mass is always accepted)."""
    if not removed:
        return p
    residual = p.index_fill(0, torch.tensor(removed, device=p.device), 0.0)
    return torch.where(residual.sum() > 0, residual, p)


def verify_tree(
    tokens: list[int],
    children: list[list[int]],
    target_logits: Tensor,
    cfg: SamplingConfig,
    generator: torch.Generator | None = None,
) -> TreeVerifyResult:
    """Verify one token tree under cfg: greedy or multi-candidate rejection sampling."""
    if cfg.greedy:
        return verify_tree_greedy(tokens, children, target_logits)
    return verify_tree_sampling(tokens, children, target_logits, cfg, generator)
