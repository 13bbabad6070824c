"""Tree decoding: one drafter pass and prompt lookup build a token tree, one target pass verifies it.

One round (`tree_decode`):

    draft    the drafter's block distributions at positions 1..B-1 (one pass; skipped while the
             planner finds that it does not pay) and the prompt-lookup continuation (free)
    plan     `TreePlanner` merges both into a token tree and cuts it to the node budget (tree.py)
    verify   one target pass over the tree's rows: each row sees the cached prefix and its own
             ancestors only (`Rows.tree`); a tree that is a plain chain runs as a causal block
    accept   `tree_verify.verify_tree` walks the tree (greedy, or multi-candidate rejection)
    commit   the target cache keeps the accepted path only, compacted to contiguous columns
             (`KVCache.keep_columns`); the emitted token is the next anchor

Invariant, as in `engine.py`: the target cache holds every committed token except the anchor.
`--tree-branches` turns either branch off (`TreeConfig.branches`), so that each branch's share of
the gain can be measured. The loop knows nothing about tokenization; acceptance lives only in
`tree_verify.py`. Asynchronous drafting and the batched server stay chain (docs/tree.md says why).

    stats = TreeStats("tree")
    for chunk in tree_decode(target, drafter, prompt, cfg, stop, stats, planner, TreeConfig()):
        print(chunk)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.engine import DecodeStats, GenerationConfig, now, start_decode
from d3d.inference.lookup import DEFAULT_MAX_NGRAM, LookupMatch, NgramIndex
from d3d.inference.stopping import StopChecker
from d3d.inference.tree import BRANCHES, DEFAULT_TOP_K, DRAFTER, LOOKUP, TokenTree, TreePlanner, ranked_drafter_tokens
from d3d.inference.tree_verify import TreeVerifyResult, verify_tree
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter

DEFAULT_LOOKUP_TOKENS = 15  # longest lookup continuation put into a tree


@dataclass(frozen=True)
class TreeConfig:
    """What goes into a round's tree."""

    branches: tuple[str, ...] = ("drafter", "lookup")  # candidate sources in use (BRANCHES)
    top_k: int = DEFAULT_TOP_K  # drafter candidates per block position
    max_ngram: int = DEFAULT_MAX_NGRAM  # longest suffix n-gram prompt lookup matches
    lookup_tokens: int = DEFAULT_LOOKUP_TOKENS  # longest lookup continuation

    def validate(self) -> None:
        unknown = [b for b in self.branches if b not in BRANCHES]
        if unknown or not self.branches:
            raise D3DError(f"--tree-branches takes a comma-separated subset of {', '.join(BRANCHES)}, "
                           f"got '{','.join(self.branches)}'")
        if self.top_k < 1 or self.max_ngram < 1 or self.lookup_tokens < 1:
            raise D3DError("tree top-k, lookup n-gram size and lookup length must be at least 1")


def parse_branches(value: str) -> tuple[str, ...]:
    """`--tree-branches drafter,lookup` -> ("drafter", "lookup") (checked)."""
    branches = tuple(dict.fromkeys(b.strip() for b in value.split(",") if b.strip()))
    TreeConfig(branches=branches).validate()
    return branches


@dataclass
class TreeStats(DecodeStats):
    """DecodeStats plus the tree's shape: nodes per round, accepted depth, which branch won."""

    tree_nodes: int = 0  # nodes verified over all rounds (the anchor row not counted)
    nodes_hist: dict[str, int] = field(default_factory=dict)  # nodes per round -> rounds (0 = plain step)
    wins: dict[str, int] = field(default_factory=dict)  # accepted path's branch -> rounds: drafter, lookup, both, none
    drafter_rounds: int = 0  # rounds that ran the drafter

    @property
    def mean_nodes(self) -> float:
        return self.tree_nodes / self.rounds if self.rounds else 0.0

    def record_tree(self, tree: TokenTree, result: TreeVerifyResult) -> None:
        self.tree_nodes += tree.size - 1
        winner = branch_won(tree, result.path)
        self.wins[winner] = self.wins.get(winner, 0) + 1

    def as_dict(self) -> dict:
        return super().as_dict() | {"mean_nodes": round(self.mean_nodes, 3), "nodes_hist": self.nodes_hist,
                                    "wins": self.wins, "drafter_rounds": self.drafter_rounds}


def branch_won(tree: TokenTree, path: list[int]) -> str:
    """Which branch proposed the accepted path's deepest node: drafter, lookup, both or none."""
    if len(path) < 2:
        return "none"
    flags = tree.sources[path[-1]]
    return "both" if flags == DRAFTER | LOOKUP else "drafter" if flags == DRAFTER else "lookup"


class DrafterBranch:
    """The drafter's side of a tree: its own cache and one block pass per round."""

    def __init__(self, drafter: Drafter, top_k: int) -> None:
        self.drafter = drafter
        self.top_k = top_k
        self.cache = drafter.new_cache()

    @property
    def block_size(self) -> int:
        return self.drafter.block_size

    def start(self, capacity: int) -> None:
        self.cache.reset()
        self.cache.reserve(capacity)

    def probs(self, committed: list[int], device: torch.device) -> Tensor:
        """The drafter's distributions [B-1, V] at block positions 1..B-1 after committed (last = anchor)."""
        logits = self.drafter.draft_logits(self.cache, torch.tensor([committed], device=device))[0]
        return torch.softmax(logits.float(), -1)


def target_rows(tree: TokenTree, anchor_pos: int, device: torch.device) -> Rows:
    """The tree's rows for one target pass: a causal block for a chain, else `Rows.tree`."""
    ids = torch.tensor([tree.tokens], device=device)  # [1, N]
    if tree.is_chain:
        return Rows.clean(ids, anchor_pos)
    positions = torch.tensor([[anchor_pos + d for d in tree.depths]], device=device)  # [1, N]
    return Rows.tree(ids, positions, tree.ancestors().to(device)[None])


@torch.inference_mode()
def tree_decode(
    target: DecoderModel,
    drafter: Drafter | None,
    prompt: Tensor,
    cfg: GenerationConfig,
    stop: StopChecker,
    stats: TreeStats,
    planner: TreePlanner,
    tree_cfg: TreeConfig = TreeConfig(),
) -> Iterator[list[int]]:
    """Tree speculative decoding; lossless (tree_verify.py). prompt: [1, n]. `drafter` may be None
    when the drafter branch is off."""
    tree_cfg.validate()
    dev = target.device
    use_drafter = "drafter" in tree_cfg.branches and drafter is not None
    use_lookup = "lookup" in tree_cfg.branches
    start = start_decode(target, prompt, cfg, stop, stats)
    cache, gen = start.cache, start.generator
    branch = DrafterBranch(drafter, tree_cfg.top_k) if use_drafter else None
    max_depth = branch.block_size - 1 if branch is not None else tree_cfg.lookup_tokens
    if branch is not None:
        branch.start(prompt.shape[1] + stop.max_new_tokens + branch.block_size)
    committed = prompt[0].tolist() + [start.first_token]
    index = NgramIndex(tree_cfg.max_ngram)
    index.extend(committed)
    stats.new_tokens += 1
    yield [start.first_token]
    if stop.push(start.first_token):
        stats.stop_reason, stats.total_s = stop.reason, now(dev) - start.t0
        return
    while True:
        anchor_pos = len(committed) - 1
        depth = min(max_depth, stop.remaining - 1)
        t1 = now(dev)
        scores = tokens = None
        if depth > 0 and branch is not None and planner.should_draft():
            scores, tokens = ranked_drafter_tokens(branch.probs(committed, dev), planner.calibration, tree_cfg.top_k)
            stats.drafter_rounds += 1
        match: LookupMatch | None = index.lookup(min(depth, tree_cfg.lookup_tokens)) if use_lookup else None
        # the tree's rows fit the cache as sized for plain decoding (a grown cache would change the
        # key span of low-precision passes, `Precision.fixed_key_span`)
        tree = planner.plan(committed[-1], scores, tokens, match, depth, room=max(cache.capacity - anchor_pos - 1, 0))
        t2 = now(dev)
        logits = target(target_rows(tree, anchor_pos, dev), cache)[0]  # [N, V]
        result = verify_tree(tree.tokens, tree.children(), logits, cfg.sampling, gen)
        cache.keep_columns(anchor_pos, result.path)
        planner.observe(tree, result.path)
        stats.record_tree(tree, result)
        stats.draft_s += t2 - t1
        stats.verify_s += now(dev) - t2
        kept = stop.accept(result.tokens)
        stats.record_round(len(kept))  # tau counts only what the output keeps
        committed.extend(kept)
        index.extend(kept)
        stats.new_tokens += len(kept)
        yield kept
        if stop.reason is not None:
            break
    stats.stop_reason = stop.reason
    stats.total_s = now(dev) - start.t0
    stats.nodes_hist = planner.summary()
