"""Selective prefill (paper appendix C): a selector chooses which prompt chunks the target reads.

    score    the prompt tokens that are not protected (chat-template scaffolding and the final user
             instruction, see `prompt_layout.py`) are cut into chunks of `chunk_size`, and a
             selector scores each chunk (`selectors.py`: the paper's probe, where the drafter reads
             the full prompt once plus one `[M]` probe row right after it and a chunk scores the
             probe's attention mass on its tokens; a few of the target's own layers; BM25 against
             the question; and the naive baselines last and random).
    select   the best chunks are kept, in their original order, while the kept total (protected
             tokens included) stays within rho * L (`keep_best_chunks`).
    decode   the target prefills only the kept tokens, at contiguous positions 0..k-1, as if the
             reduced prompt were the prompt; then ordinary synchronous speculative decoding runs,
             target-verified and lossless relative to the reduced prompt. The drafter keeps its
             full-prompt cache: `FullPromptDrafterSource` maps the target's committed sequence
             (reduced prompt + output) onto the drafter's (full prompt + the same output).
             Without a drafter, plain decoding runs on the reduced prompt instead.

Only the probe needs a drafter: every other selector scores and selects with `drafter=None`
(target-layers reads the target), so a plain-decoding server or `--mode ar` can prefill selectively.

`reduce_for_target` (scoring + selection, returning a `ReducedPrompt`) is the piece another decode
loop or a server calls when it admits a request with `d3d_prefill_keep` (`parse_prefill_keep`).
Time to first token is measured as one span, from the start of scoring to the first token, so it
holds the scoring and the selection of every selector.

Because the target reads less, the output can differ from full-prompt decoding: this mode is
opt-in and its statistics say so (`SelectiveStats`). This module knows nothing about tokenizers
(the protected tokens come in as a mask) or about benchmarks.

    stats = SelectiveStats("sync")
    for chunk in selective_decode(target, drafter, prompt, protected, PrefillConfig(keep=0.2), cfg, stop, stats):
        print(chunk)
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.draft_length import DraftLengthPolicy
from d3d.inference.drafting import Draft, DrafterSource
from d3d.inference.engine import (
    DecodeStats, GenerationConfig, autoregressive_decode, now, sampling_generator, speculative_decode,
)
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.inference.selectors import (
    DEFAULT_PROBE_LAYERS, DEFAULT_SELECTOR, ChunkScorer, PromptChunks, build_scorer, check_selector, probe_scores,
)
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter
from d3d.models.kv_cache import KVCache

__all__ = ["probe_scores"]  # re-exported: the probe lives with the other scorers in selectors.py

DEFAULT_CHUNK_SIZE = 32  # tokens per scored chunk (SpecPrefill-style chunks; small enough to keep a sentence)


@dataclass
class PrefillConfig:
    """How much of the prompt the target reads."""

    keep: float = 1.0  # rho: the kept share of the prompt's tokens, in (0, 1]; 1 = the whole prompt
    chunk_size: int = DEFAULT_CHUNK_SIZE  # tokens per scored chunk
    select: str = DEFAULT_SELECTOR  # how chunks are scored (selectors.SELECTORS)
    seed: int = 0  # the random selector's seed
    layers: tuple[int, ...] = DEFAULT_PROBE_LAYERS  # the target-layers selector's target layers
    stop_ids: frozenset[int] = frozenset()  # token ids the lexical selector ignores (prompt_layout.stopword_ids)

    def validate(self) -> None:
        if not (isinstance(self.keep, (int, float)) and 0.0 < self.keep <= 1.0):
            raise D3DError(f"prefill keep (rho) must be in (0, 1], got {self.keep}")
        if self.chunk_size < 1:
            raise D3DError(f"prefill chunk size must be at least 1, got {self.chunk_size}")
        check_selector(self.select)

    def scorer(self, target: DecoderModel | None, drafter: Drafter | None) -> ChunkScorer:
        """The chunk scorer this configuration names."""
        return build_scorer(self.select, target=target, drafter=drafter, seed=self.seed, layers=self.layers,
                            stop_ids=self.stop_ids)


def parse_prefill_keep(value: object) -> float | None:
    """A request's `d3d_prefill_keep` (None, a number or a numeric string) as rho, or D3DError.

    None means full-prompt prefill. For the server and the command line alike.
    """
    if value is None:
        return None
    try:
        keep = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise D3DError(f"prefill keep (rho) must be a number in (0, 1], got {value!r}") from None
    if isinstance(value, bool) or math.isnan(keep):
        raise D3DError(f"prefill keep (rho) must be a number in (0, 1], got {value!r}")
    PrefillConfig(keep=keep).validate()
    return keep


@dataclass
class Selection:
    """Which prompt tokens the target reads, and why."""

    kept: Tensor  # [k] long: indices into the full prompt, ascending
    chunk_starts: Tensor  # [c] long: first token of each scored chunk
    chunk_ends: Tensor  # [c] long: one past the last token of each chunk
    chunk_scores: Tensor  # [c] float32: each chunk's score (for the probe: the mass of its tokens)
    chunk_kept: Tensor  # [c] bool: the chunk was selected
    protected: Tensor  # [L] bool: kept whatever the scores (template scaffolding, the instruction)

    @property
    def prompt_tokens(self) -> int:
        return self.protected.shape[0]

    @property
    def kept_share(self) -> float:
        return self.kept.shape[0] / self.prompt_tokens


def chunk_bounds(protected: Tensor, chunk_size: int) -> tuple[Tensor, Tensor]:
    """(starts [c], ends [c]) of the chunks: each run of unprotected tokens cut into pieces of
    `chunk_size` from its start (a run's last piece may be shorter). protected: [L] bool."""
    free = (~protected).tolist()
    starts, ends = [], []
    i = 0
    while i < len(free):
        if not free[i]:
            i += 1
            continue
        j = i
        while j < len(free) and free[j] and j - i < chunk_size:
            j += 1
        starts.append(i)
        ends.append(j)
        i = j
    return torch.tensor(starts, dtype=torch.long), torch.tensor(ends, dtype=torch.long)


def select_chunks(token_scores: Tensor, protected: Tensor, keep: float, chunk_size: int) -> Selection:
    """Chunks scored by the sum of token_scores [L] over their tokens, then `keep_best_chunks`.
    protected: [L] bool."""
    protected = protected.bool().cpu()
    starts, ends = chunk_bounds(protected, chunk_size)
    chunks = PromptChunks(torch.zeros(1, protected.shape[0], dtype=torch.long), protected, starts, ends)
    return keep_best_chunks(chunks, chunks.chunk_sums(token_scores), keep)


def keep_best_chunks(chunks: PromptChunks, chunk_scores: Tensor, keep: float) -> Selection:
    """Keep every protected token, then the highest-scoring chunks that fit in floor(keep * L) tokens.

    chunk_scores: [c], one per chunk of `chunks`. Chunks are taken best first (ties: the earlier
    chunk); one that would overflow the budget is skipped and smaller ones may still fit. If the
    protected tokens alone exceed the budget, only they are kept. keep = 1 keeps everything.
    """
    protected, starts, ends = chunks.protected.bool().cpu(), chunks.starts, chunks.ends
    chunk_scores = chunk_scores.detach().float().cpu()
    budget = math.floor(keep * protected.shape[0] + 1e-9) - int(protected.sum())
    chunk_kept = torch.zeros(len(starts), dtype=torch.bool)
    order = sorted(range(len(starts)), key=lambda c: (-float(chunk_scores[c]), c))
    for c in order:
        size = int(ends[c] - starts[c])
        if size <= budget:
            chunk_kept[c] = True
            budget -= size
    kept_mask = protected.clone()
    for s, e in zip(starts[chunk_kept].tolist(), ends[chunk_kept].tolist()):
        kept_mask[s:e] = True
    kept = kept_mask.nonzero()[:, 0]
    return Selection(kept, starts, ends, chunk_scores, chunk_kept, protected)


def select_prompt(drafter: Drafter | None, prompt: Tensor, protected: Tensor, config: PrefillConfig,
                  target: DecoderModel | None = None) -> tuple[Selection, KVCache | None]:
    """Score the chunks of the full prompt [1, L] with `config.select` and select; returns the
    selection and the drafter's cache, which holds the whole prompt after the probe (ready for
    drafting) and is empty after any other selector (drafting reads the prompt into it later).
    `target` is needed by the target-layers selectors only. With `drafter` None (plain decoding)
    the cache is None, and the probe is a D3DError naming it (`selectors.build_scorer`)."""
    config.validate()
    if protected.shape[0] != prompt.shape[1]:
        raise ValueError(f"protected mask has {protected.shape[0]} entries for a {prompt.shape[1]}-token prompt")
    scorer = config.scorer(target, drafter)
    cache = None if drafter is None else drafter.new_cache(prompt.shape[1] + drafter.block_size)
    starts, ends = chunk_bounds(protected.bool().cpu(), config.chunk_size)
    chunks = PromptChunks(prompt, protected.bool().cpu(), starts, ends)
    scores = scorer.score(chunks, cache)  # [c]
    return keep_best_chunks(chunks, scores, config.keep), cache


def reduce_prompt(prompt: Tensor, selection: Selection) -> Tensor:
    """The target's prompt [1, k]: the kept tokens of prompt [1, L], in order."""
    return prompt[:, selection.kept.to(prompt.device)]


@dataclass
class ReducedPrompt:
    """A prompt after selection: what the target prefills, and the drafter's full-prompt state."""

    target_ids: Tensor  # [1, k] the kept tokens: the target's whole prompt, at positions 0..k-1
    full_ids: Tensor  # [1, L] the prompt as given: the drafter's prompt
    selection: Selection  # which tokens were kept, and the chunk scores
    drafter_cache: KVCache | None  # the drafter's cache: full_ids after the probe, else empty; None without a drafter
    select_s: float  # wall time of the scoring (the probe pass, for the probe) and the selection

    def drafter_ids(self, committed: Tensor) -> Tensor:
        """The drafter's committed sequence [1, L + m] for the target's committed [1, k + m]."""
        return torch.cat([self.full_ids, committed[:, self.target_ids.shape[1] :]], 1)


def reduce_for_target(drafter: Drafter | None, prompt: Tensor, protected: Tensor, prefill: PrefillConfig,
                      target: DecoderModel | None = None) -> ReducedPrompt:
    """Score and select: the one call a decode loop (or a server admitting a request) needs.

    prompt: [1, L]; protected: [L] bool (`prompt_layout.protected_tokens`); `target` for the
    target-layers selectors; `drafter` None for plain decoding (any selector but the probe).
    """
    t0 = now(prompt.device)
    with torch.inference_mode():
        selection, cache = select_prompt(drafter, prompt, protected, prefill, target)
    return ReducedPrompt(reduce_prompt(prompt, selection), prompt, selection, cache, now(prompt.device) - t0)


class FullPromptDrafterSource(DrafterSource):
    """The drafter drafting from its full-prompt cache while the target holds the reduced prompt.

    The decoder hands `propose` the target's committed tokens (reduced prompt + output); the
    drafter sees the full prompt + the same output, so its positions run L, L+1, ... where the
    target's run k, k+1, .... One source per generation: `start` keeps the cache as the selection
    left it (the full prompt after the probe; empty otherwise, and the first `propose` reads the
    full prompt into it).
    """

    def __init__(self, drafter: Drafter, reduced: ReducedPrompt, sampling: SamplingConfig,
                 generator: torch.Generator | None = None) -> None:
        if reduced.drafter_cache is None:
            raise ValueError("this prompt was reduced without a drafter: it has no drafter cache to draft from")
        super().__init__(drafter, sampling, generator)
        self.reduced = reduced
        self.cache = reduced.drafter_cache
        self.started = False

    def start(self, capacity: int) -> None:
        if self.started:
            raise RuntimeError("a FullPromptDrafterSource serves one generation (its cache has moved on)")
        self.started = True
        self.cache.reserve(capacity - self.reduced.target_ids.shape[1])

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        return super().propose(self.reduced.drafter_ids(committed), num_tokens)


@dataclass
class SelectiveStats(DecodeStats):
    """`DecodeStats` of a selective-prefill run. prompt_tokens is what the target read; prefill_s
    the target's prefill only; ttft_s and total_s are spans that start before the scoring. The
    output may differ from full-prompt decoding."""

    full_prompt_tokens: int = 0  # L: the prompt before selection
    keep: float = 1.0  # rho asked for
    selector: str = DEFAULT_SELECTOR  # how the chunks were scored (selectors.SELECTORS)
    select_s: float = 0.0  # the scoring (the probe's pass, target layers, BM25 ...) and the selection
    ttft_s: float = 0.0  # from the start of the scoring to the first token: scoring, selection, reduced prefill

    def as_dict(self) -> dict:
        return super().as_dict() | {
            "full_prompt_tokens": self.full_prompt_tokens, "keep": self.keep, "selector": self.selector,
            "select_s": round(self.select_s, 4), "ttft_s": round(self.ttft_s, 4), "reduced_prompt": True,
        }


@torch.inference_mode()
def selective_decode(
    target: DecoderModel,
    drafter: Drafter | None,
    prompt: Tensor,
    protected: Tensor,
    prefill: PrefillConfig,
    cfg: GenerationConfig,
    stop: StopChecker,
    stats: DecodeStats,
    policy: DraftLengthPolicy | None = None,
) -> Iterator[list[int]]:
    """Select with `prefill.select`, then speculative decoding on the reduced prompt (drafter None:
    plain decoding, `autoregressive_decode`).

    prompt: [1, L]; protected: [L] bool. Fills `stats` (a `SelectiveStats` gets the selection's
    fields too) and yields token chunks as the decode loop does; `policy` is speculative decoding's
    verification-length policy (None: verify every drafted token). TTFT and the total time are
    spans that open before the scoring.
    """
    t0 = now(prompt.device)
    reduced = reduce_for_target(drafter, prompt, protected, prefill, target)
    if isinstance(stats, SelectiveStats):
        stats.full_prompt_tokens, stats.keep, stats.selector = prompt.shape[1], prefill.keep, prefill.select
        stats.select_s = reduced.select_s
    for i, chunk in enumerate(decode_reduced(target, drafter, reduced, cfg, stop, stats, policy)):
        if i == 0 and isinstance(stats, SelectiveStats):
            stats.ttft_s = now(prompt.device) - t0  # the first chunk is the first token alone
        yield chunk
    stats.total_s = now(prompt.device) - t0


def decode_reduced(target: DecoderModel, drafter: Drafter | None, reduced: ReducedPrompt, cfg: GenerationConfig,
                   stop: StopChecker, stats: DecodeStats, policy: DraftLengthPolicy | None) -> Iterator[list[int]]:
    """The decode loop on the reduced prompt: speculative from the drafter's full prompt, or plain."""
    if drafter is None:
        return autoregressive_decode(target, reduced.target_ids, cfg, stop, stats)
    source = FullPromptDrafterSource(drafter, reduced, cfg.sampling, sampling_generator(cfg, target.device, offset=1))
    return speculative_decode(target, source, reduced.target_ids, cfg, stop, stats, policy)
