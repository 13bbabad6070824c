"""Chunk scorers for selective prefill: how the prompt chunks the target may read are ranked.

`prefill.py` cuts the prompt's unprotected tokens into chunks and keeps the best-scoring ones
within the budget; the scorer decides what "best" means. One interface, `ChunkScorer.score`,
one small class per way of scoring (`SELECTORS` names them, `build_scorer` makes one):

    probe                  the drafter's one-`[M]` probe (paper appendix C): the probe row's
                           attention mass over the prompt, summed over the drafter's heads and
                           layers. Its pass also reads the prompt into the drafter's cache.
    target-layers          the attention mass of the prompt's last token in a few of the target's
                           own layers (default 3-7), summed over their heads, from a pass through
                           the target's first max(layers)+1 layers only: it costs
                           (max(layers)+1) / (the target's layers) of a full prefill.
    lexical                BM25 of each chunk against the final instruction (the prompt's last run
                           of protected tokens), over token ids; stopword ids are ignored; half
                           of the better neighbour's BM25 is added, so that a matching sentence
                           cut by a chunk boundary keeps both halves.
    last                   the latest chunks first (a recency baseline).
    random                 a seeded random order (a baseline; the same seed and prompt length
                           give the same order).
    target-layers+lexical  reciprocal rank fusion of target-layers and lexical.

Scorers other than `probe` leave the drafter's cache empty: decoding reads the prompt into it at
the first drafting round, after the first token, as full-prompt sync does. They need no drafter
at all (plain decoding passes none); `build_scorer` names the model a selector lacks. This module
knows nothing about tokenizers (stopword ids come in as ids) or about the decode loop.

    scorer = build_scorer("lexical", target=target, drafter=drafter, stop_ids=frozenset({...}))
    scores = scorer.score(PromptChunks(prompt, protected, starts, ends), drafter.new_cache())   # [c]
"""

from __future__ import annotations

import math
import zlib
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.models.attention import AttentionProbe, Rows
from d3d.models.decoder import DecoderModel
from d3d.models.drafter import Drafter
from d3d.models.kv_cache import KVCache

SELECTORS = ("probe", "target-layers", "lexical", "last", "random", "target-layers+lexical")
DEFAULT_SELECTOR = "lexical"  # won on calibration prompts and on the suite (docs/prefill.md); the paper's is "probe"
LEGACY_SELECTOR = "probe"  # the selector of bench modes and records that name none (written before lexical was the default)
DEFAULT_PROBE_LAYERS_SPEC = "3-7"  # target-layers: provisional; choose by `scripts/calibrate_probe_layers.py`
BM25_K1 = 1.2  # term-frequency saturation (the usual BM25 value)
BM25_B = 0.75  # chunk-length normalisation (the usual BM25 value)
LEXICAL_SPREAD = 0.5  # a chunk's lexical score gains this share of its better neighbour's (calibrated, docs/prefill.md)
FUSION_K = 60  # reciprocal rank fusion: score = sum over scorers of 1 / (FUSION_K + rank)


def parse_selectors(spec: str) -> tuple[str, ...]:
    """Selector names from a comma-separated list (distinct, in order); D3DError for an unknown one."""
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise D3DError(f"name at least one prefill selector ({', '.join(SELECTORS)}), got '{spec}'")
    for name in names:
        check_selector(name)
    return names


def parse_probe_layers(spec: str) -> tuple[int, ...]:
    """Target layers from "3-7", "3,5,7" or "2-4,9" (sorted, distinct); D3DError when malformed."""
    layers: set[int] = set()
    try:
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            low, dash, high = part.partition("-")
            first, last = int(low), int(high if dash else low)
            if first < 0 or last < first:
                raise ValueError
            layers.update(range(first, last + 1))
    except ValueError:
        raise D3DError(f"probe layers must look like 3-7 or 3,5,7 (non-negative, ascending ranges), got '{spec}'") from None
    if not layers:
        raise D3DError(f"probe layers must name at least one layer, got '{spec}'")
    return tuple(sorted(layers))


DEFAULT_PROBE_LAYERS = parse_probe_layers(DEFAULT_PROBE_LAYERS_SPEC)  # (3, 4, 5, 6, 7)


@dataclass
class PromptChunks:
    """A prompt and the chunks of it that a scorer ranks."""

    ids: Tensor  # [1, L] the full prompt
    protected: Tensor  # [L] bool: always kept (scaffolding, the final instruction); in no chunk
    starts: Tensor  # [c] long: first token of each chunk
    ends: Tensor  # [c] long: one past each chunk's last token

    @property
    def num_chunks(self) -> int:
        return self.starts.shape[0]

    def chunk_sums(self, token_scores: Tensor) -> Tensor:
        """[c] float32: the sum of token_scores [L] over each chunk."""
        scores = token_scores.detach().float().cpu()
        if not self.num_chunks:
            return torch.zeros(0)
        return torch.stack([scores[s:e].sum() for s, e in zip(self.starts.tolist(), self.ends.tolist())])

    def chunk_ids(self) -> list[list[int]]:
        """Each chunk's token ids."""
        ids = self.ids[0].tolist()
        return [ids[s:e] for s, e in zip(self.starts.tolist(), self.ends.tolist())]

    def query_ids(self) -> list[int]:
        """The last run of protected tokens: the final instruction (and the template's tail after it)."""
        flags = self.protected.tolist()
        end = len(flags)
        while end > 0 and not flags[end - 1]:
            end -= 1
        start = end
        while start > 0 and flags[start - 1]:
            start -= 1
        return self.ids[0, start:end].tolist()


class ChunkScorer(ABC):
    """Scores the chunks of one prompt; higher is kept first."""

    name: str

    @abstractmethod
    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        """[c] float32 chunk scores. drafter_cache: the drafter's empty cache (None without a
        drafter); a scorer that reads the prompt with the drafter leaves it there, others leave
        the cache alone."""


class ProbeScorer(ChunkScorer):
    """The drafter's one-`[M]` probe right after the prompt (paper appendix C)."""

    name = "probe"

    def __init__(self, drafter: Drafter) -> None:
        self.drafter = drafter

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        return prompt.chunk_sums(probe_scores(self.drafter, drafter_cache, prompt.ids))


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


class TargetLayersScorer(ChunkScorer):
    """Attention of the prompt's last token in some of the target's own layers."""

    name = "target-layers"

    def __init__(self, target: DecoderModel, layers: tuple[int, ...]) -> None:
        check_probe_layers(layers, len(target.layer_ids))
        self.target, self.layers = target, tuple(layers)

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        return prompt.chunk_sums(layer_attention_mass(self.target, prompt.ids, self.layers))


def layer_attention_mass(model: DecoderModel, prompt: Tensor, layers: tuple[int, ...]) -> Tensor:
    """[L] attention mass of the last token of prompt [1, L] on every prompt token (itself
    included), summed over the heads of `layers`. Runs layers 0..max(layers) only, uncached."""
    probe = AttentionProbe(torch.tensor([prompt.shape[1] - 1], device=prompt.device), layers=frozenset(layers))
    model.hidden_states(Rows.clean(prompt, 0), None, probe, num_layers=max(layers) + 1)
    return probe.mass[0, 0]  # a plain causal pass: the last row sees every key


def check_probe_layers(layers: tuple[int, ...], num_layers: int) -> None:
    """D3DError unless `layers` is a non-empty set of layer indices of a `num_layers`-layer model."""
    if not layers:
        raise D3DError("the target-layers selector needs at least one layer")
    bad = [i for i in layers if not 0 <= i < num_layers]
    if bad:
        raise D3DError(f"probe layers {bad} do not exist in the target ({num_layers} layers)")


class LexicalScorer(ChunkScorer):
    """BM25 of each chunk (a document) against the final instruction (the query), over token ids,
    plus `spread` times the better of its two neighbours' BM25 (`spread_to_neighbours`)."""

    name = "lexical"

    def __init__(self, stop_ids: frozenset[int] = frozenset(), spread: float = LEXICAL_SPREAD) -> None:
        self.stop_ids, self.spread = stop_ids, spread

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        scores = bm25([self._terms(c) for c in prompt.chunk_ids()], set(self._terms(prompt.query_ids())))
        return spread_to_neighbours(scores, prompt, self.spread)

    def _terms(self, ids: list[int]) -> list[int]:
        return [t for t in ids if t not in self.stop_ids]


def bm25(documents: list[list[int]], query: set[int], k1: float = BM25_K1, b: float = BM25_B) -> Tensor:
    """[len(documents)] float32 BM25 scores of each document (a list of terms) for the query terms.
    IDF is log(1 + (N - n + 0.5) / (n + 0.5)): positive, small for terms most documents hold."""
    if not documents:
        return torch.zeros(0)
    counts = [Counter(d) for d in documents]
    mean_len = max(sum(len(d) for d in documents) / len(documents), 1.0)
    holding = Counter(t for c in counts for t in c if t in query)
    idf = {t: math.log(1 + (len(documents) - n + 0.5) / (n + 0.5)) for t, n in holding.items()}
    scores = []
    for doc, c in zip(documents, counts):
        norm = k1 * (1 - b + b * len(doc) / mean_len)
        scores.append(sum(idf[t] * c[t] * (k1 + 1) / (c[t] + norm) for t in idf if c[t]))
    return torch.tensor(scores, dtype=torch.float32)


def spread_to_neighbours(scores: Tensor, prompt: PromptChunks, spread: float) -> Tensor:
    """[c] scores + spread * max(score of the chunk just before, score of the chunk just after),
    where "just" means touching in the prompt. A sentence cut by a chunk boundary ("... the code of
    cobalt is" | "7339.") then keeps its other half: the half that matches the query lifts its
    neighbour above chunks that match less."""
    if spread == 0 or scores.shape[0] < 2:
        return scores
    touching = (prompt.ends[:-1] == prompt.starts[1:]).float()  # [c-1]: chunk i ends where chunk i+1 starts
    before = torch.cat([torch.zeros(1), scores[:-1] * touching])
    after = torch.cat([scores[1:] * touching, torch.zeros(1)])
    return scores + spread * torch.maximum(before, after)


class LastScorer(ChunkScorer):
    """Later chunks first: what a recency heuristic (or a probe that only sees the question) keeps."""

    name = "last"

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        return prompt.starts.float()


class RandomScorer(ChunkScorer):
    """A random order of the chunks, fixed by the seed and the prompt's length."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        key = zlib.crc32(f"{self.seed}/{prompt.ids.shape[1]}".encode())
        return torch.rand(prompt.num_chunks, generator=torch.Generator().manual_seed(key))


class FusedScorer(ChunkScorer):
    """Reciprocal rank fusion: each chunk scores sum_i 1 / (k + its rank under scorer i)."""

    def __init__(self, parts: tuple[ChunkScorer, ...], k: int = FUSION_K) -> None:
        self.parts, self.k = parts, k
        self.name = "+".join(p.name for p in parts)

    def score(self, prompt: PromptChunks, drafter_cache: KVCache | None) -> Tensor:
        fused = torch.zeros(prompt.num_chunks)
        for part in self.parts:
            fused += 1.0 / (self.k + ranks(part.score(prompt, drafter_cache)))
        return fused


def ranks(scores: Tensor) -> Tensor:
    """[c] 1-based rank of each score, highest first (ties: the earlier chunk ranks higher)."""
    order = sorted(range(scores.shape[0]), key=lambda c: (-float(scores[c]), c))
    out = torch.empty(scores.shape[0])
    out[torch.tensor(order, dtype=torch.long)] = torch.arange(1, scores.shape[0] + 1, dtype=torch.float32)
    return out


def build_scorer(
    name: str,
    *,
    target: DecoderModel | None = None,
    drafter: Drafter | None = None,
    seed: int = 0,
    layers: tuple[int, ...] = DEFAULT_PROBE_LAYERS,
    stop_ids: frozenset[int] = frozenset(),
) -> ChunkScorer:
    """The scorer named `name` (one of SELECTORS); D3DError for an unknown name or a missing model."""
    check_selector(name)
    if name == "probe":
        return ProbeScorer(_needs(drafter, name, "a drafter"))
    if name == "target-layers":
        return TargetLayersScorer(_needs(target, name, "the target"), layers)
    if name == "lexical":
        return LexicalScorer(stop_ids)
    if name == "last":
        return LastScorer()
    if name == "random":
        return RandomScorer(seed)
    return FusedScorer((TargetLayersScorer(_needs(target, name, "the target"), layers), LexicalScorer(stop_ids)))


def check_selector(name: str) -> None:
    if name not in SELECTORS:
        raise D3DError(f"unknown prefill selector '{name}' (choose from {', '.join(SELECTORS)})")


def _needs(model, selector: str, what: str):
    if model is None:
        raise D3DError(f"the {selector} selector needs {what}")
    return model
