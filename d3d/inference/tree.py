"""Token trees for tree verification: candidates from the drafter's block and from prompt lookup.

One drafter pass gives a distribution at every block position (positions 1..B-1 after the
anchor), but chain decoding verifies only its top-1 path. A token tree verifies, in one target
pass, many paths at once:

- drafter nodes: a path (t_1..t_d) picks, at each depth j, one of the drafter's `top_k` tokens at
  block position j. Its score is the product over the path of the tokens' *calibrated*
  probabilities (the drafter's probability through the acceptance table of `draft_length.py`, so
  a score estimates the chance that the target accepts the whole path). `drafter_candidates`
  enumerates paths best-first with a heap (each popped path pushes its best child and its next
  sibling), so the top paths come out in order without scoring all top_k^d of them.
- lookup nodes: the prompt-lookup continuation (`lookup.py`) as one chain; its score at depth d is
  the product of `LookupRates`, the acceptance per depth measured on this generation's earlier
  rounds (a prior before any).

Both lists are merged into one trie (a path proposed by both keeps the higher score and both
source flags), sorted by score, and cut to the node budget: `TreePlanner` picks the number of
nodes N that maximises the expected tokens per second of the round,

    E(N)    = 1 + sum of the N best scores               (the expected accepted depth, + 1)
    rate(N) = E(N) / (t_d + t_v(N + 1))                   (t_v: the measured pass-cost table)

A prefix of a path never scores below the path (scores are products of numbers <= 1), so every cut
of the sorted list is a tree. The chosen nodes are laid out depth-first with each node's children
in score order: parents precede children, and the best path is the contiguous rows 0, 1, .., d.

Lossless whatever the tree: its shape depends only on the drafter's distributions, the committed
tokens and finished rounds, never on the target's draws of this round (docs/design.md). This
module knows nothing about models or verification; `tree_engine.py` runs the rounds and
`tree_verify.py` accepts.

    planner = TreePlanner(costs, calibration)
    scores, tokens = ranked_drafter_tokens(drafter_probs, calibration)
    tree = planner.plan(anchor, scores, tokens, lookup=match, depth=15)   # a TokenTree, root = anchor
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import torch
from torch import Tensor

from d3d.inference.draft_length import GAIN_SMOOTHING, MAX_SKIP, MIN_DRAFTED_ROUNDS, Calibration
from d3d.inference.lookup import LookupMatch
from d3d.inference.pass_costs import PassCosts

DRAFTER, LOOKUP = 1, 2  # source flags of a node (a node both proposed carries both)
BRANCHES = {"drafter": DRAFTER, "lookup": LOOKUP}  # --tree-branches names
MAX_TREE_ROWS = 64  # rows of the largest verification pass (the anchor + 63 nodes)
DEFAULT_TOP_K = 8  # drafter candidates per block position
LOOKUP_PRIOR = (0.4, 2.0)  # lookup acceptance before any evidence: mean, weight in rounds


@dataclass
class TokenTree:
    """A token tree in depth-first order; node 0 is the root (the anchor, already committed)."""

    tokens: list[int]  # [N] token of each node
    parents: list[int]  # [N] parent index (-1 for the root); a parent precedes its children
    sources: list[int]  # [N] DRAFTER | LOOKUP flags of the branch(es) that proposed each node (0: root)
    scores: list[float] = field(default_factory=list)  # [N] estimated P(node accepted) (root 1.0)

    @property
    def size(self) -> int:
        return len(self.tokens)

    @property
    def depths(self) -> list[int]:
        depths = [0] * self.size
        for i in range(1, self.size):
            depths[i] = depths[self.parents[i]] + 1
        return depths

    @property
    def is_chain(self) -> bool:
        """Each node's parent is the node before it: a plain causal block."""
        return all(p == i - 1 for i, p in enumerate(self.parents))

    def children(self) -> list[list[int]]:
        """Each node's children, in the order they are tried (score order)."""
        kids: list[list[int]] = [[] for _ in range(self.size)]
        for i in range(1, self.size):
            kids[self.parents[i]].append(i)
        return kids

    def ancestors(self) -> Tensor:
        """[N, N] bool: row i sees row j iff j is i or an ancestor of i."""
        mask = torch.eye(self.size, dtype=torch.bool)
        for i in range(1, self.size):
            mask[i] |= mask[self.parents[i]]
        return mask


def ranked_drafter_tokens(probs: Tensor, calibration: Calibration, top_k: int = DEFAULT_TOP_K) -> tuple[Tensor, Tensor]:
    """The drafter's top_k tokens at each block position, ranked by estimated acceptance.

    probs: [n, V], the drafter's distributions at positions 1..n. Returns scores, tokens [n, top_k]
    (on the CPU), each row sorted by score descending; a position's scores sum to at most 1 (its
    tokens are exclusive events) and are 0 for tokens the drafter cannot propose.

    The calibration table describes the drafter's *top* token only (the rate at which the target
    accepts it, by the drafter's confidence in it), so it scores the top token alone: a_1 =
    calibrated(q_1). The others share what is left in the drafter's own proportions,
    (1 - a_1) q_r / (1 - q_1): the chance the target's token is the r-th guess given that it is not
    the first. (Reading a low-probability second guess through the table would give it the top
    token's rate at that confidence, many times its own chance, and inflate the tree.) With the
    identity calibration both are the drafter's probabilities.
    """
    top = probs.float().topk(min(top_k, probs.shape[-1]), -1)
    values, tokens = top.values.cpu(), top.indices.cpu()  # [n, k], values descending
    first = calibration.acceptance(values[:, 0].contiguous())  # [n]
    rest = values[:, 1:] / (1.0 - values[:, :1]).clamp(min=1e-6) * (1.0 - first)[:, None]
    rates = torch.cat([first[:, None], rest], 1)
    rates = torch.where(values > 0, rates, torch.zeros_like(rates))
    rates = rates / rates.sum(1, keepdim=True).clamp(min=1.0)
    order = torch.sort(rates, dim=1, descending=True, stable=True).indices
    return rates.gather(1, order), tokens.gather(1, order)


def drafter_candidates(scores: Tensor, tokens: Tensor, limit: int) -> list[tuple[tuple[int, ...], float]]:
    """The `limit` best drafter paths, best first, as (tokens, score).

    scores, tokens: [n, k], each row sorted by score descending (block positions 1..n, top k each).
    """
    n, k = scores.shape
    score, token = scores.tolist(), tokens.tolist()  # one host sync
    out: list[tuple[tuple[int, ...], float]] = []
    heap = [(-score[0][0], (0,), 1.0)] if n and score[0][0] > 0 else []  # (-score, ranks, parent's score)
    while heap and len(out) < limit:
        neg, ranks, parent = heapq.heappop(heap)
        out.append((tuple(token[j][r] for j, r in enumerate(ranks)), -neg))
        d, last = len(ranks), ranks[-1]
        if d < n and score[d][0] > 0:  # best child
            heapq.heappush(heap, (neg * score[d][0], ranks + (0,), -neg))
        if last + 1 < k and score[d - 1][last + 1] > 0:  # next sibling
            heapq.heappush(heap, (-parent * score[d - 1][last + 1], ranks[:-1] + (last + 1,), parent))
    return out


def lookup_candidates(match: LookupMatch | None, rates: list[float]) -> list[tuple[tuple[int, ...], float]]:
    """The lookup chain's prefixes as (tokens, score), score = product of per-depth rates."""
    if match is None:
        return []
    out, score = [], 1.0
    for d in range(min(len(match.tokens), len(rates))):
        score *= rates[d]
        out.append((tuple(match.tokens[: d + 1]), score))
    return out


def merge_candidates(drafted: list[tuple[tuple[int, ...], float]],
                     looked_up: list[tuple[tuple[int, ...], float]]) -> list[tuple[tuple[int, ...], float, int]]:
    """One trie's nodes as (path, score, sources), best first (shallower first among equal scores)."""
    nodes: dict[tuple[int, ...], tuple[float, int]] = {}
    for flag, cands in ((DRAFTER, drafted), (LOOKUP, looked_up)):
        for path, score in cands:
            old_score, old_flags = nodes.get(path, (0.0, 0))
            nodes[path] = (max(score, old_score), old_flags | flag)
    ranked = sorted(nodes.items(), key=lambda item: (-item[1][0], len(item[0])))
    return [(path, score, flags) for path, (score, flags) in ranked]


def layout(anchor: int, nodes: list[tuple[tuple[int, ...], float, int]]) -> TokenTree:
    """The TokenTree of `nodes` (a prefix-closed set, best first) under `anchor`, depth-first with
    children in the given (score) order."""
    kids: dict[tuple[int, ...], list[tuple[tuple[int, ...], float, int]]] = {}
    for node in nodes:
        kids.setdefault(node[0][:-1], []).append(node)
    tree = TokenTree([anchor], [-1], [0], [1.0])
    stack = [(child, 0) for child in reversed(kids.get((), []))]
    while stack:
        (path, score, flags), parent = stack.pop()
        tree.tokens.append(path[-1])
        tree.parents.append(parent)
        tree.sources.append(flags)
        tree.scores.append(score)
        here = tree.size - 1
        stack.extend((child, here) for child in reversed(kids.get(path, [])))
    return tree


@dataclass
class LookupRates:
    """P(the lookup token at depth d is accepted | the ones before it were), counted over this
    generation's rounds: (accepted + prior) / (proposed + prior weight)."""

    accepted: list[float] = field(default_factory=list)  # [depth] lookup tokens accepted there
    proposed: list[float] = field(default_factory=list)  # [depth] lookup tokens verified there (their parent accepted)

    def rates(self, depth: int) -> list[float]:
        mean, weight = LOOKUP_PRIOR
        self._grow(depth)
        return [(self.accepted[d] + mean * weight) / (self.proposed[d] + weight) for d in range(depth)]

    def observe(self, verified: int, accepted: int) -> None:
        """A round verified the lookup chain's first `verified` tokens and accepted `accepted` of them."""
        self._grow(verified)
        for d in range(min(verified, accepted + 1)):
            self.proposed[d] += 1
            self.accepted[d] += d < accepted

    def _grow(self, depth: int) -> None:
        while len(self.accepted) < depth:
            self.accepted.append(0.0)
            self.proposed.append(0.0)


@dataclass
class TreePlanner:
    """Chooses each round's tree: its nodes, their number, and whether to run the drafter at all."""

    costs: PassCosts  # this machine's t_v(k)
    calibration: Calibration = field(default_factory=Calibration)  # drafter probability -> acceptance
    draft_s: float = 0.0  # t_d: one drafter pass, measured once
    max_nodes: int = MAX_TREE_ROWS - 1  # nodes per round at most (rows = nodes + 1)
    fixed: int | None = None  # exactly min(fixed, available) nodes every round, always drafting (None: auto)
    lookup_rates: LookupRates = field(default_factory=LookupRates)  # this generation's lookup acceptance
    gain: float | None = None  # running estimate of rate with the drafter / rate without it
    drafted_rounds: int = 0  # rounds that ran the drafter
    skip_left: int = 0  # rounds still to go without the drafter
    backoff: int = 1  # length of the next run without the drafter if it keeps losing
    nodes_hist: dict[int, int] = field(default_factory=dict)  # nodes per round -> rounds

    def should_draft(self) -> bool:
        """False while the drafter is skipped (it did not pay lately); one call per round."""
        if self.fixed is not None or self.skip_left == 0:
            return True
        self.skip_left -= 1
        return False

    def plan(self, anchor: int, scores: Tensor | None, tokens: Tensor | None, lookup: LookupMatch | None,
             depth: int, room: int | None = None) -> TokenTree:
        """The round's tree under `anchor`, at most `depth` deep and `room` nodes (None: max_nodes).
        scores, tokens: [n, k] the drafter's calibrated top-k (None: no drafter this round); lookup:
        the lookup continuation or None."""
        limit = min(self.max_nodes if self.fixed is None else self.fixed, self.max_nodes,
                    self.max_nodes if room is None else room)
        drafted = [] if scores is None else drafter_candidates(scores[:depth], tokens[:depth], limit)
        looked_up = lookup_candidates(lookup, self.lookup_rates.rates(depth))
        nodes = merge_candidates(drafted, looked_up)
        t_d = self.draft_s if scores is not None else 0.0
        nodes = nodes[:limit]
        count = len(nodes) if self.fixed is not None else self.best_count([s for _, s, _ in nodes], t_d)
        if scores is not None and self.fixed is None:
            self._weigh_drafter(nodes, merge_candidates([], looked_up))
        self.nodes_hist[count] = self.nodes_hist.get(count, 0) + 1
        return layout(anchor, nodes[:count])

    def best_count(self, scores: list[float], t_d: float) -> int:
        """argmax over N <= max_nodes of E(N) / (t_d + t_v(N + 1)), scores sorted best first."""
        best, best_rate, expected = 0, 1.0 / (t_d + self.costs.seconds(1)), 1.0
        for n, score in enumerate(scores[: self.max_nodes], start=1):
            expected += score
            rate = expected / (t_d + self.costs.seconds(n + 1))
            if rate > best_rate:
                best, best_rate = n, rate
        return best

    def rate(self, scores: list[float], t_d: float) -> float:
        """The best expected tokens per second of a round with these candidates."""
        n = self.best_count(scores, t_d)
        return (1.0 + sum(scores[:n])) / (t_d + self.costs.seconds(n + 1))

    def _weigh_drafter(self, nodes: list, lookup_only: list) -> None:
        """Update the running gain of drafting (model estimate) and skip the drafter while it loses."""
        with_drafter = self.rate([s for _, s, _ in nodes], self.draft_s)
        without = self.rate([s for _, s, _ in lookup_only], 0.0)
        gain = with_drafter / without
        self.gain = gain if self.gain is None else (1 - GAIN_SMOOTHING) * self.gain + GAIN_SMOOTHING * gain
        self.drafted_rounds += 1
        if self.drafted_rounds < MIN_DRAFTED_ROUNDS:
            return
        if self.gain < 1.0:
            self.skip_left = self.backoff
            self.backoff = min(2 * self.backoff, MAX_SKIP)
        else:
            self.backoff = 1

    def observe(self, tree: TokenTree, path: list[int]) -> None:
        """After verification: how far the lookup chain got (its per-depth acceptance)."""
        chain = [i for i in range(1, tree.size) if tree.sources[i] & LOOKUP]
        if chain:
            self.lookup_rates.observe(len(chain), sum(1 for i in path[1:] if tree.sources[i] & LOOKUP))

    def summary(self) -> dict[str, int]:
        """Rounds by nodes verified (0 = a plain step)."""
        return {str(n): c for n, c in sorted(self.nodes_hist.items())}
