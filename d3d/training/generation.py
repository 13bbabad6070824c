"""Batched generation on the native runtime: the target answering many prompts at once.

Prompts are left-padded into one batch; every row samples with its own seeded generator (so a row's
response does not depend on its batch mates) and stops at its own end-of-turn token or budget.
Finished rows leave the batch (`KVCache.keep_rows`) once enough of them have finished, so the long
tail of a batch runs at the cost of the rows still writing, not of the whole batch.
`TargetResponses` is the `ResponseSource` that answers prompts this way; an OpenAI-compatible
server is the other (`endpoint.py`). This module knows nothing about prompt files or output files.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.pipeline import Target
from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.training.prompts import PromptRecord

@dataclass
class Generated:
    """One row's output of `generate_batch`."""

    tokens: list[int]  # new token ids; the last is the stop token when finish_reason is "eos"
    finish_reason: str  # "eos", "max_new_tokens" or "context"
    topk_ids: list[list[int]] | None = None  # [len(tokens)][k] the target's k likeliest tokens per position
    topk_logprobs: list[list[float]] | None = None  # [len(tokens)][k] their log-probabilities (temperature 1)


def row_seed(seed: int, key: str) -> int:
    """A 63-bit seed for one row, from the run's seed and the row's key."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:8], "big") >> 1


def pad_token_id(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor | None, Tensor]:
    """ids [b, L] left-padded; valid [b, L] (None without padding); start [b] = len - L.

    Row i's real tokens sit at positions 0 .. len_i - 1; its padding at negative positions.
    """
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, prompt in enumerate(prompts):
        ids[i, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        valid[i, width - len(prompt) :] = True
    start = torch.tensor([len(p) - width for p in prompts])
    padded = any(len(p) != width for p in prompts)
    return ids.to(device), valid.to(device) if padded else None, start.to(device)


class TokenPicker:
    """Greedy argmax, or sampling with one seeded generator per row (so a row ignores its batch)."""

    def __init__(self, sampling: SamplingConfig, seeds: Sequence[int], device: torch.device) -> None:
        self.sampling = sampling
        self.generators = None if sampling.greedy else [torch.Generator(device=device).manual_seed(s) for s in seeds]

    def __call__(self, logits: Tensor) -> Tensor:
        """logits [b, V] -> tokens [b]."""
        if self.generators is None:
            return logits.argmax(-1)
        probs = probs_from_logits(logits, self.sampling)
        return torch.stack([sample(probs[i], g) for i, g in enumerate(self.generators)])

    def keep_rows(self, rows: list[int]) -> None:
        """Keep the generators of rows `rows` only (the batch dropped the others)."""
        if self.generators is not None:
            self.generators = [self.generators[i] for i in rows]


SHRINK_FRACTION = 8  # finished rows leave the batch once they are at least 1/8 of it (copying the
# cache costs about one pass; a smaller fraction copies more often, a larger one computes more waste)
LOGPROB_DECIMALS = 3  # stored top-k log-probabilities are rounded to this many decimals


def top_logprobs(logits: Tensor, k: int) -> tuple[list[list[int]], list[list[float]]]:
    """The k likeliest tokens of each row and their log-probabilities: logits [b, V] -> two [b][k] lists."""
    values, ids = torch.log_softmax(logits.float(), dim=-1).topk(k, dim=-1)
    return ids.tolist(), values.double().mul(10**LOGPROB_DECIMALS).round().div(10**LOGPROB_DECIMALS).tolist()


class RowTracker:
    """Per-row outputs and stop decisions of a batch (and, optionally, the target's top-k per position)."""

    def __init__(self, limits: list[int], stop_ids: frozenset[int], max_new_tokens: int, top_k: int = 0) -> None:
        self.limits, self.stop_ids, self.max_new_tokens, self.top_k = limits, stop_ids, max_new_tokens, top_k
        self.tokens: list[list[int]] = [[] for _ in limits]
        self.reasons: list[str | None] = [None] * len(limits)
        self.topk_ids: list[list[list[int]]] = [[] for _ in limits]
        self.topk_logprobs: list[list[list[float]]] = [[] for _ in limits]

    def push(self, tokens: list[int], logits: Tensor | None = None, rows: list[int] | None = None) -> bool:
        """Record one token per row (finished rows ignore theirs); True once every row is done.

        `rows[j]` is the row that `tokens[j]` belongs to (default: j), for a batch that dropped rows.
        With `top_k`, `logits` [b, V] (the distribution each token was drawn from) gives the row's top-k.
        """
        ids, logprobs = top_logprobs(logits, self.top_k) if self.top_k and logits is not None else (None, None)
        for j, token in enumerate(tokens):
            i = j if rows is None else rows[j]
            if self.reasons[i] is None:
                self.tokens[i].append(token)
                if ids is not None:
                    self.topk_ids[i].append(ids[j])
                    self.topk_logprobs[i].append(logprobs[j])
                self.reasons[i] = self._reason(i, token)
        return all(r is not None for r in self.reasons)

    def _reason(self, i: int, token: int) -> str | None:
        if token in self.stop_ids:
            return "eos"
        if len(self.tokens[i]) >= self.limits[i]:
            return "max_new_tokens" if self.limits[i] == self.max_new_tokens else "context"
        return None

    def finished(self, rows: list[int]) -> list[bool]:
        """Whether each of `rows` is done."""
        return [self.reasons[i] is not None for i in rows]

    def results(self) -> list[Generated]:
        if not self.top_k:
            return [Generated(t, r or "max_new_tokens") for t, r in zip(self.tokens, self.reasons)]
        return [Generated(t, r or "max_new_tokens", ids, lp)
                for t, r, ids, lp in zip(self.tokens, self.reasons, self.topk_ids, self.topk_logprobs)]


def context_room(model: DecoderModel, prompt_len: int) -> int:
    """Tokens that fit after a prompt of `prompt_len` tokens in the model's context."""
    return int(getattr(model.config, "max_position_embeddings", 0) or 1 << 30) - prompt_len


@torch.inference_mode()
def generate_batch(
    model: DecoderModel,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    sampling: SamplingConfig,
    stop_ids: frozenset[int],
    seeds: Sequence[int] | None = None,
    pad_id: int = 0,
    top_k_logits: int = 0,
    shrink_fraction: int = SHRINK_FRACTION,
) -> list[Generated]:
    """Answer token prompts together: left padding, one cached pass per step, per-row stops.

    Rows that are done keep being fed `pad_id` (their outputs are ignored) until at least
    `1 / shrink_fraction` of the batch is done; then they leave it (cache, generators, positions).
    `shrink_fraction` 0 keeps every row to the end.
    When sampling, row i draws from a generator seeded with seeds[i] (default: i), so its tokens
    do not depend on the rest of the batch, up to float rounding. With `top_k_logits` = k > 0 each
    row also records the target's k likeliest tokens and their log-probabilities per position.
    """
    dev = model.device
    limits = [min(max_new_tokens, context_room(model, len(p))) for p in prompts]
    if min(limits) < 1:
        raise D3DError(f"a prompt leaves no room in the model's context ({max(map(len, prompts))} tokens)")
    ids, valid, start = left_pad(prompts, pad_id, dev)
    cache = model.new_cache(len(prompts), ids.shape[1] + max(limits))
    logits = model(Rows.clean(ids, start, valid=valid), cache, logits_from=ids.shape[1] - 1)[:, -1]
    pick = TokenPicker(sampling, seeds if seeds is not None else range(len(prompts)), dev)
    rows = RowTracker(limits, stop_ids, max_new_tokens, top_k_logits)
    positions = torch.tensor([len(p) for p in prompts], device=dev)
    active = list(range(len(prompts)))  # the prompt index of each row still in the batch
    for step in range(max(limits)):
        tokens = pick(logits)  # [b_active]
        if rows.push(tokens.tolist(), logits, active):  # the one deliberate host sync per step
            break
        done = rows.finished(active)
        if shrink_fraction > 0 and sum(done) * shrink_fraction >= len(active):
            keep = [j for j, d in enumerate(done) if not d]
            cache.keep_rows(keep)
            pick.keep_rows(keep)
            index = torch.tensor(keep, device=dev)
            tokens, positions = tokens.index_select(0, index), positions.index_select(0, index)
            active, done = [active[j] for j in keep], [False] * len(keep)
        feed = torch.where(torch.tensor(done, device=dev), pad_id, tokens)
        logits = model(Rows.clean(feed[:, None], positions + step), cache)[:, -1]
    return rows.results()


@dataclass
class PendingPrompt:
    """A prompt on its way to the target."""

    record: PromptRecord
    ids: list[int]  # the chat-templated prompt, as `Target.encode_chat` gives it


@dataclass
class Response:
    """One answer, from either source."""

    ids: list[int]  # response token ids, the end-of-turn token last when the model stopped on it
    text: str  # the response text without special tokens
    finish_reason: str  # "eos", "max_new_tokens" or "context"
    topk_ids: list[list[int]] | None = None  # [len(ids)][k] the target's likeliest tokens per position, if recorded
    topk_logprobs: list[list[float]] | None = None  # [len(ids)][k] their log-probabilities


class ResponseSource(ABC):
    """Answers batches of prompts; one subclass per way of producing responses."""

    @abstractmethod
    def settings(self) -> dict:
        """What produces the responses, recorded in meta.json and checked on resume."""

    @abstractmethod
    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        """One response per prompt, in order."""


class TargetResponses(ResponseSource):
    """The local target on the native runtime, batched with left padding."""

    def __init__(self, target: Target, sampling: SamplingConfig, max_new_tokens: int, seed: int, top_k_logits: int = 0) -> None:
        self.target, self.sampling, self.max_new_tokens, self.seed = target, sampling, max_new_tokens, seed
        self.top_k_logits = top_k_logits
        self.model = target.native("data generation")

    def settings(self) -> dict:
        return {"kind": "native", "top_k_logits": self.top_k_logits} if self.top_k_logits else {"kind": "native"}

    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        seeds = [row_seed(self.seed, p.record.id) for p in batch]
        stops, pad = frozenset(self.target.eos_token_ids), pad_token_id(self.target.tokenizer)
        outs = generate_batch(self.model, [p.ids for p in batch], self.max_new_tokens, self.sampling, stops, seeds, pad,
                              self.top_k_logits)
        return [Response(o.tokens, self.target.decode(o.tokens), o.finish_reason, o.topk_ids, o.topk_logprobs)
                for o in outs]
