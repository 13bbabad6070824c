"""Selective prefill (paper appendix C): the drafter chooses which prompt chunks the target reads.

    probe    the drafter reads the full prompt once (clean rows, cached: it drafts from this cache
             later) plus one `[M]` probe row at position L, right after the prompt; the probe sees
             every prompt token and nothing else. Its attention probabilities, summed over heads
             and layers, give each prompt token a mass (`probe_scores`).
    select   the prompt tokens that are not protected (chat-template scaffolding and the final user
             instruction, see `prompt_layout.py`) are cut into chunks of `chunk_size`; a chunk's
             score is the mass of its tokens. The best chunks are kept, in their original order,
             while the kept total (protected tokens included) stays within rho * L (`select_chunks`).
    decode   the target prefills only the kept tokens, at contiguous positions 0..k-1, as if the
             reduced prompt were the prompt; then ordinary synchronous speculative decoding runs,
             target-verified and lossless relative to the reduced prompt. The drafter keeps its
             full-prompt cache: `FullPromptDrafterSource` maps the target's committed sequence
             (reduced prompt + output) onto the drafter's (full prompt + the same output).

`reduce_for_target` (probe + selection, returning a `ReducedPrompt`) is the piece another decode
loop or a server calls when it admits a request with `d3d_prefill_keep` (`parse_prefill_keep`).

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
from d3d.inference.engine import DecodeStats, GenerationConfig, now, sampling_generator, speculative_decode
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.models.attention import AttentionProbe, Rows
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter
from d3d.models.kv_cache import KVCache

DEFAULT_CHUNK_SIZE = 32  # tokens per scored chunk (SpecPrefill-style chunks; small enough to keep a sentence)


@dataclass
class PrefillConfig:
    """How much of the prompt the target reads."""

    keep: float = 1.0  # rho: the kept share of the prompt's tokens, in (0, 1]; 1 = the whole prompt
    chunk_size: int = DEFAULT_CHUNK_SIZE  # tokens per scored chunk

    def validate(self) -> None:
        if not (isinstance(self.keep, (int, float)) and 0.0 < self.keep <= 1.0):
            raise D3DError(f"prefill keep (rho) must be in (0, 1], got {self.keep}")
        if self.chunk_size < 1:
            raise D3DError(f"prefill chunk size must be at least 1, got {self.chunk_size}")


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
    token_scores: Tensor  # [L] float32: the probe's attention mass on each prompt token
    chunk_starts: Tensor  # [c] long: first token of each scored chunk
    chunk_ends: Tensor  # [c] long: one past the last token of each chunk
    chunk_scores: Tensor  # [c] float32: the mass of each chunk's tokens
    chunk_kept: Tensor  # [c] bool: the chunk was selected
    protected: Tensor  # [L] bool: kept whatever the scores (template scaffolding, the instruction)

    @property
    def prompt_tokens(self) -> int:
        return self.token_scores.shape[0]

    @property
    def kept_share(self) -> float:
        return self.kept.shape[0] / self.prompt_tokens


def probe_scores(drafter: Drafter, cache: KVCache, clean: Tensor, probe_pos: int | None = None) -> Tensor:
    """Attention mass [probe_pos] from one `[M]` probe at `probe_pos` to each earlier token.

    clean: [1, n] tokens fed as clean rows at positions cache.length.. and cached (the prompt, in
    one pass). The probe is a one-row block anchored at `probe_pos` (default: right after the
    clean tokens): it sees the clean keys at positions < probe_pos and itself, and is not cached.
    Its attention probabilities are summed over every head of every layer; the mass on itself is
    dropped. Clean tokens at or after `probe_pos` cannot change the result.
    """
    end = cache.length + clean.shape[1]
    probe_pos = end if probe_pos is None else probe_pos
    if not 0 < probe_pos <= end:
        raise ValueError(f"probe position {probe_pos} outside (0, {end}]")
    probe_token = torch.full((1, 1, 1), drafter.config.mask_token_id, dtype=clean.dtype, device=clean.device)
    rows = Rows.with_blocks(Rows.clean(clean, cache.length), probe_token, torch.tensor([[probe_pos]], device=clean.device))
    probe = AttentionProbe(torch.tensor([rows.num_rows - 1], device=clean.device))
    drafter.model.hidden_states(rows, cache, probe)
    return probe.mass[0, 0, :probe_pos]  # the cached columns hold positions 0..end-1 in order


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
    """Keep every protected token, then the highest-scoring chunks that fit in floor(keep * L) tokens.

    token_scores, protected: [L]. Chunks are taken best first (ties: the earlier chunk); one that
    would overflow the budget is skipped and smaller ones may still fit. If the protected tokens
    alone exceed the budget, only they are kept. keep = 1 keeps everything.
    """
    scores = token_scores.detach().float().cpu()
    protected = protected.bool().cpu()
    starts, ends = chunk_bounds(protected, chunk_size)
    chunk_scores = torch.stack([scores[s:e].sum() for s, e in zip(starts.tolist(), ends.tolist())]) if len(starts) else torch.zeros(0)
    budget = math.floor(keep * scores.shape[0] + 1e-9) - int(protected.sum())
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
    return Selection(kept, scores, starts, ends, chunk_scores, chunk_kept, protected)


def select_prompt(drafter: Drafter, prompt: Tensor, protected: Tensor, config: PrefillConfig) -> tuple[Selection, KVCache]:
    """Run the probe over the full prompt [1, L] and select; returns the selection and the drafter's
    cache, which holds the whole prompt (ready for drafting)."""
    config.validate()
    if protected.shape[0] != prompt.shape[1]:
        raise ValueError(f"protected mask has {protected.shape[0]} entries for a {prompt.shape[1]}-token prompt")
    cache = drafter.new_cache(prompt.shape[1] + drafter.block_size)
    scores = probe_scores(drafter, cache, prompt)
    return select_chunks(scores, protected, config.keep, config.chunk_size), cache


def reduce_prompt(prompt: Tensor, selection: Selection) -> Tensor:
    """The target's prompt [1, k]: the kept tokens of prompt [1, L], in order."""
    return prompt[:, selection.kept.to(prompt.device)]


@dataclass
class ReducedPrompt:
    """A prompt after selection: what the target prefills, and the drafter's full-prompt state."""

    target_ids: Tensor  # [1, k] the kept tokens: the target's whole prompt, at positions 0..k-1
    full_ids: Tensor  # [1, L] the prompt as given: the drafter's prompt
    selection: Selection  # which tokens were kept, and the probe's scores
    drafter_cache: KVCache  # the drafter's cache, holding full_ids
    select_s: float  # wall time of the probe pass and the selection

    def drafter_ids(self, committed: Tensor) -> Tensor:
        """The drafter's committed sequence [1, L + m] for the target's committed [1, k + m]."""
        return torch.cat([self.full_ids, committed[:, self.target_ids.shape[1] :]], 1)


def reduce_for_target(drafter: Drafter, prompt: Tensor, protected: Tensor, prefill: PrefillConfig) -> ReducedPrompt:
    """Probe and select: the one call a decode loop (or a server admitting a request) needs.

    prompt: [1, L]; protected: [L] bool (`prompt_layout.protected_tokens`).
    """
    t0 = now(prompt.device)
    with torch.inference_mode():
        selection, cache = select_prompt(drafter, prompt, protected, prefill)
    return ReducedPrompt(reduce_prompt(prompt, selection), prompt, selection, cache, now(prompt.device) - t0)


class FullPromptDrafterSource(DrafterSource):
    """The drafter drafting from its full-prompt cache while the target holds the reduced prompt.

    The decoder hands `propose` the target's committed tokens (reduced prompt + output); the
    drafter sees the full prompt + the same output, so its positions run L, L+1, ... where the
    target's run k, k+1, .... One source per generation: `start` keeps the prefilled cache.
    """

    def __init__(self, drafter: Drafter, reduced: ReducedPrompt, sampling: SamplingConfig,
                 generator: torch.Generator | None = None) -> None:
        super().__init__(drafter, sampling, generator)
        self.reduced = reduced
        self.cache = reduced.drafter_cache  # holds the full prompt (from the probe pass)

    def start(self, capacity: int) -> None:
        if self.cache.length != self.reduced.full_ids.shape[1]:
            raise RuntimeError("a FullPromptDrafterSource serves one generation (its cache has moved on)")
        self.cache.reserve(capacity - self.reduced.target_ids.shape[1])

    def propose(self, committed: Tensor, num_tokens: int) -> Draft:
        return super().propose(self.reduced.drafter_ids(committed), num_tokens)


@dataclass
class SelectiveStats(DecodeStats):
    """`DecodeStats` of a selective-prefill run. prompt_tokens is what the target read; prefill_s
    the target's prefill only; total_s includes the selection. The output may differ from
    full-prompt decoding."""

    full_prompt_tokens: int = 0  # L: the prompt before selection
    keep: float = 1.0  # rho asked for
    select_s: float = 0.0  # the drafter's full-prompt pass with the probe, and the selection

    @property
    def ttft_s(self) -> float:
        """Time to the first token: the selection plus the target's reduced prefill."""
        return self.select_s + self.prefill_s

    def as_dict(self) -> dict:
        return super().as_dict() | {
            "full_prompt_tokens": self.full_prompt_tokens, "keep": self.keep, "select_s": round(self.select_s, 4),
            "ttft_s": round(self.ttft_s, 4), "reduced_prompt": True,
        }


@torch.inference_mode()
def selective_decode(
    target: DecoderModel,
    drafter: Drafter,
    prompt: Tensor,
    protected: Tensor,
    prefill: PrefillConfig,
    cfg: GenerationConfig,
    stop: StopChecker,
    stats: DecodeStats,
    policy: DraftLengthPolicy | None = None,
) -> Iterator[list[int]]:
    """Select with the drafter's probe, then speculative decoding on the reduced prompt.

    prompt: [1, L]; protected: [L] bool. Fills `stats` (a `SelectiveStats` gets the selection's
    fields too) and yields token chunks as `speculative_decode` does; `policy` is its
    verification-length policy (None: verify every drafted token).
    """
    reduced = reduce_for_target(drafter, prompt, protected, prefill)
    source = FullPromptDrafterSource(drafter, reduced, cfg.sampling, sampling_generator(cfg, target.device, offset=1))
    yield from speculative_decode(target, source, reduced.target_ids, cfg, stop, stats, policy)
    stats.total_s += reduced.select_s
    if isinstance(stats, SelectiveStats):
        stats.full_prompt_tokens, stats.keep, stats.select_s = prompt.shape[1], prefill.keep, reduced.select_s
