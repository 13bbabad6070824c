"""Sampling helpers: warp logits (temperature, top-k, top-p), turn them into probabilities, sample.

Pure tensor functions over the last dimension, for any leading shape. This module knows nothing
about models, caches or speculative decoding; `d3d.inference.verify` builds on it. Nothing here
synchronises with the host, so the helpers are safe inside decode loops.

Run its tests with `python -m pytest tests/inference/test_verify.py`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.errors import D3DError


@dataclass(frozen=True)
class SamplingConfig:
    """How to turn a model's logits into the distribution that is sampled (and preserved)."""

    temperature: float = 0.0  # 0 means greedy (argmax); otherwise logits are divided by it
    top_k: int = 0  # keep only the k most likely tokens; 0 turns the filter off
    top_p: float = 1.0  # keep the smallest set of tokens with total probability >= top_p

    def validate(self) -> None:
        """Raise `D3DError` with a one-line message if a value is out of range."""
        if not math.isfinite(self.temperature) or self.temperature < 0:
            raise D3DError(f"temperature must be a finite number >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise D3DError(f"top_k must be >= 0 (0 turns it off), got {self.top_k}")
        if not 0 < self.top_p <= 1:  # also rejects NaN
            raise D3DError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _float_dtype(logits: Tensor) -> torch.dtype:
    """float64 stays float64; everything else is computed in float32."""
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def _mask_top_k(logits: Tensor, k: int) -> Tensor:
    """Set every logit below the k-th largest to -inf (ties with the k-th are kept)."""
    k = min(k, logits.size(-1))
    kth_largest = torch.topk(logits, k, dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth_largest, -math.inf)


def _mask_top_p(logits: Tensor, top_p: float) -> Tensor:
    """Keep the smallest most-likely set whose probability reaches top_p; at least one token."""
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    sorted_probs = sorted_logits.softmax(dim=-1)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    sorted_remove = mass_before >= top_p  # the set before this token already reached top_p
    remove = sorted_remove.scatter(-1, order, sorted_remove)
    return logits.masked_fill(remove, -math.inf)


def warp_logits(logits: Tensor, cfg: SamplingConfig) -> Tensor:
    """Apply temperature, then top-k, then top-p (the transformers order) along the last dim.

    logits: [..., V]. Returns [..., V] in float32 (float64 for float64 input), removed tokens at
    -inf. Greedy configs skip the temperature, which cannot change the argmax.
    """
    logits = logits.to(_float_dtype(logits))
    if not cfg.greedy and cfg.temperature != 1:
        logits = logits / cfg.temperature
    if cfg.top_k > 0:
        logits = _mask_top_k(logits, cfg.top_k)
    if cfg.top_p < 1:
        logits = _mask_top_p(logits, cfg.top_p)
    return logits


def probs_from_logits(logits: Tensor, cfg: SamplingConfig) -> Tensor:
    """The distribution `cfg` samples from. logits: [..., V] -> probs [..., V].

    Float32 (float64 for float64 input). For a greedy config, the one-hot of the argmax.
    """
    if cfg.greedy:
        one_hot = torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.size(-1))
        return one_hot.to(_float_dtype(logits))
    return warp_logits(logits, cfg).softmax(dim=-1)


def sample(probs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One token per row of probs [..., V] -> long [...], without a host sync.

    Exponential race: argmax(probs / E) with E ~ Exponential(1) i.i.d. picks index v with
    probability probs[v] / sum(probs), so the weights need not be normalised. E is kept above 0
    so that a zero-probability token can never win by 0 / 0.
    """
    race = torch.empty_like(probs).exponential_(1, generator=generator)
    return sample_with_noise(probs, race.clamp_(min=torch.finfo(race.dtype).tiny))


def sample_with_noise(probs: Tensor, noise: Tensor) -> Tensor:
    """The exponential race of `sample` with given noise: probs [..., V], noise [..., V] of
    Exponential(1) draws (positive) -> long [...]."""
    return (probs / noise).argmax(dim=-1)


def position_noise(seed: int, positions: range, vocab: int, device: torch.device | str = "cpu") -> Tensor:
    """Exponential(1) race noise [len(positions), V] (float64), each row a function of (seed, position)
    only: a sequence that samples token t with `sample_with_noise(p_t, noise[t])` gets the same tokens
    however its passes were shaped and however many other draws were made (`verify.verify_coupled`)."""
    rows = []
    for position in positions:
        mixed = hashlib.blake2b(f"{seed}:{position}".encode(), digest_size=8).digest()
        gen = torch.Generator(device=device).manual_seed(int.from_bytes(mixed, "little") >> 1)
        rows.append(torch.empty(vocab, dtype=torch.float64, device=device).exponential_(1, generator=gen))
    return torch.stack(rows).clamp_(min=torch.finfo(torch.float64).tiny)
