"""Decode loops on the native runtime: plain autoregressive and synchronous speculative decoding.

Both are generators that yield lists of new token ids as soon as they are committed (streaming)
and fill a `DecodeStats` as they go. Speculative decoding (one round):

    draft   the source proposes up to B-1 tokens after the anchor (the last committed token)
    verify  one target pass over [anchor, d_1..d_n] (n+1 rows, causal over the target's cache)
    accept  `verify.verify` keeps the accepted prefix plus one target token
    commit  crop the target cache to the accepted prefix; the new target token is the next anchor

Invariant: the target cache holds every committed token except the anchor. The engine knows
nothing about tokenization (stop strings come in through `StopChecker`) or about how a source
drafts. Acceptance lives only in `verify.py`.

    stats = DecodeStats("sync")
    for chunk in speculative_decode(target, DrafterSource(drafter, cfg.sampling), prompt, cfg, stop, stats):
        print(chunk)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.draft_length import DraftLengthPolicy
from d3d.inference.drafting import DraftSource
from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.inference.stopping import StopChecker
from d3d.inference.verify import verify
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel
from d3d.models.kv_cache import KVCache


@dataclass
class GenerationConfig:
    """What to generate and how to sample it."""

    max_new_tokens: int = 256  # upper bound on generated tokens
    sampling: SamplingConfig = field(default_factory=SamplingConfig)  # greedy by default
    stop_strings: tuple[str, ...] = ()  # stop once the output text contains one of these
    seed: int = 0  # seeds the sampling generator (sampling is reproducible per seed)
    position_seeded: bool = False  # batched decoding: sample each token with noise drawn from (seed, position),
    # so the tokens do not depend on the batch, the verification lengths or plain steps (`verify.verify_coupled`)

    def validate(self) -> None:
        if self.max_new_tokens < 1:
            raise D3DError(f"max new tokens must be at least 1, got {self.max_new_tokens}")
        self.sampling.validate()


@dataclass
class DecodeStats:
    """Per-run statistics. Times are seconds of wall clock."""

    mode: str  # "ar", "sync", ...
    prompt_tokens: int = 0  # tokens in the prompt
    new_tokens: int = 0  # tokens generated (after stop truncation)
    rounds: int = 0  # verification passes (speculative) or decode steps (ar)
    round_tokens: int = 0  # tokens those rounds added to the output (the prefill's token and stop-truncated ones excluded)
    accept_hist: list[int] = field(default_factory=list)  # [k] = rounds that appended k tokens
    prefill_s: float = 0.0  # target prefill (+ first token)
    draft_s: float = 0.0  # total drafting time
    verify_s: float = 0.0  # total verification (or decode step) time
    total_s: float = 0.0  # whole generation
    stop_reason: str | None = None  # "eos", "stop_string", "max_new_tokens" or "context"
    block_size_override: str | None = None  # set when --block-size changed a trained drafter's B (pipeline)
    draft_lengths: dict[str, int] = field(default_factory=dict)  # drafted tokens verified per round -> rounds (0 = plain step)
    skipped_rounds: int = 0  # of the plain steps: those taken without drafting (the policy's back-off); the rest drafted
    # and verified none of it
    policy_draft_s: float = 0.0  # the t_d the verification-length policy priced drafting at (measured once per pipeline)
    passes: list[tuple[int, int]] = field(default_factory=list)  # (start position, rows) of each target pass after the prefill
    target_capacity: int = 0  # columns of the target's cache (a fixed key span's length); with `passes`, a replayable log
    target_threads: int = 0  # torch threads of the target's passes (a CPU pass may round differently on another count)

    @property
    def tau(self) -> float:
        """Mean tokens appended per round, the target's own token included (1 <= tau <= B)."""
        return self.round_tokens / self.rounds if self.rounds else 0.0

    @property
    def mean_draft_s(self) -> float:
        return self.draft_s / self.rounds if self.rounds else 0.0

    @property
    def mean_verify_s(self) -> float:
        return self.verify_s / self.rounds if self.rounds else 0.0

    def record_pass(self, start: int, rows: int) -> None:
        """Log one target pass's shape, so that `evaluation.agreement` can replay the run exactly."""
        self.passes.append((start, rows))

    def record_round(self, appended: int) -> None:
        self.rounds += 1
        self.round_tokens += appended
        if len(self.accept_hist) <= appended:
            self.accept_hist.extend([0] * (appended + 1 - len(self.accept_hist)))
        self.accept_hist[appended] += 1

    def as_dict(self) -> dict:
        return {
            "mode": self.mode, "prompt_tokens": self.prompt_tokens, "new_tokens": self.new_tokens,
            "rounds": self.rounds, "tau": round(self.tau, 4), "accept_hist": self.accept_hist,
            "prefill_s": round(self.prefill_s, 4), "mean_draft_s": round(self.mean_draft_s, 5),
            "mean_verify_s": round(self.mean_verify_s, 5), "total_s": round(self.total_s, 4),
            "tokens_per_s": round(self.new_tokens / self.total_s, 3) if self.total_s else 0.0,
            "stop_reason": self.stop_reason, "block_size_override": self.block_size_override,
            "draft_lengths": self.draft_lengths, "skipped_rounds": self.skipped_rounds,
            "policy_draft_s": round(self.policy_draft_s, 5),
        }


def now(device: torch.device) -> float:
    """Wall clock; on CUDA, synchronise first so that the time covers queued kernels (deliberate)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def context_length(config) -> int:
    """The model's context window from a transformers config (unbounded if it does not say)."""
    return int(getattr(config, "max_position_embeddings", 0) or 1 << 30)


def context_budget(ctx: int, prompt_len: int, max_new_tokens: int) -> int:
    """The number of tokens that may be generated in a context of `ctx`; D3DError if the prompt does not fit."""
    if prompt_len < 1:
        raise D3DError("the prompt is empty")
    if prompt_len >= ctx:
        raise D3DError(f"the prompt has {prompt_len} tokens but the model's context is {ctx}")
    return min(max_new_tokens, ctx - prompt_len)


def pick_token(logits: Tensor, sampling: SamplingConfig, generator: torch.Generator | None) -> Tensor:
    """One token from logits [..., V] (argmax when greedy)."""
    if sampling.greedy:
        return logits.argmax(-1)
    return sample(probs_from_logits(logits, sampling), generator)


def sampling_generator(cfg: GenerationConfig, device: torch.device, offset: int = 0) -> torch.Generator | None:
    """The seeded generator of one run (None when greedy); drafting sides use offset 1."""
    if cfg.sampling.greedy:
        return None
    return torch.Generator(device=device).manual_seed(cfg.seed + offset)


@dataclass
class DecodeStart:
    """State after the prefill, shared by every decode loop."""

    cache: KVCache  # the target's cache, holding the prompt
    first_token: int  # the token picked from the prefill's last row
    generator: torch.Generator | None  # the run's sampling generator
    t0: float  # wall clock at the start
    last_logits: Tensor | None = None  # [V] the prefill's last row, which `first_token` was picked from


def start_decode(
    target: DecoderModel, prompt: Tensor, cfg: GenerationConfig, stop: StopChecker, stats: DecodeStats
) -> DecodeStart:
    """Prefill the prompt [1, n] into a fresh target cache and pick the first token.

    Clamps the stop checker's budget to the context and records prefill time and prompt length.
    """
    dev = target.device
    gen = sampling_generator(cfg, dev)
    t0 = now(dev)
    budget = context_budget(context_length(target.config), prompt.shape[1], cfg.max_new_tokens)
    stop.max_new_tokens = min(stop.max_new_tokens, budget)
    stats.prompt_tokens = prompt.shape[1]
    cache = target.new_cache(1, prompt.shape[1] + budget + 1)
    stats.target_capacity, stats.target_threads = cache.capacity, torch.get_num_threads()
    logits = target(Rows.clean(prompt, 0), cache, logits_from=prompt.shape[1] - 1)
    first = int(pick_token(logits[0, -1], cfg.sampling, gen))
    stats.prefill_s = now(dev) - t0
    return DecodeStart(cache, first, gen, t0, logits[0, -1])


@torch.inference_mode()
def autoregressive_decode(
    target: DecoderModel, prompt: Tensor, cfg: GenerationConfig, stop: StopChecker, stats: DecodeStats
) -> Iterator[list[int]]:
    """Plain decoding, one target pass per token. prompt: [1, n]."""
    dev = target.device
    start = start_decode(target, prompt, cfg, stop, stats)
    cache, token, pos = start.cache, torch.tensor(start.first_token, device=dev), prompt.shape[1]
    while True:
        tok = int(token)  # the one host sync per step
        stats.new_tokens += 1
        yield [tok]
        if stop.push(tok):
            break
        t1 = now(dev)
        logits = target(Rows.clean(token.view(1, 1), pos), cache)
        stats.record_pass(pos, 1)
        token = pick_token(logits[0, -1], cfg.sampling, start.generator)
        pos += 1
        stats.verify_s += now(dev) - t1
        stats.record_round(1)
    stats.stop_reason = stop.reason
    stats.total_s = now(dev) - start.t0


@torch.inference_mode()
def speculative_decode(
    target: DecoderModel,
    source: DraftSource,
    prompt: Tensor,
    cfg: GenerationConfig,
    stop: StopChecker,
    stats: DecodeStats,
    policy: DraftLengthPolicy | None = None,
) -> Iterator[list[int]]:
    """Synchronous draft-then-verify decoding; lossless for any source. prompt: [1, n].

    `policy` chooses per round whether to draft and how many drafted tokens to verify
    (`draft_length.py`); None verifies every drafted token.
    """
    dev = target.device
    start = start_decode(target, prompt, cfg, stop, stats)
    cache, gen = start.cache, start.generator
    source.start(prompt.shape[1] + stop.max_new_tokens + source.block_size)
    committed = prompt[0].tolist() + [start.first_token]
    stats.new_tokens += 1
    yield [start.first_token]
    if stop.push(start.first_token):
        stats.stop_reason, stats.total_s = stop.reason, now(dev) - start.t0
        return
    while True:
        anchor_pos = len(committed) - 1
        n = min(source.block_size - 1, stop.remaining - 1)
        t1 = now(dev)
        drafting = n > 0 and (policy is None or policy.should_draft())
        # a plain step needs only the anchor; the whole committed list is built only for drafting
        draft = source.propose(torch.tensor([committed], device=dev), n) if drafting else None
        if draft is not None and policy is not None:
            draft = draft.truncated(policy.choose(draft.confidence, draft.tokens.shape[0]))
        t2 = now(dev)
        anchor = torch.tensor([committed[-1:]], device=dev)
        block = anchor if draft is None else torch.cat([anchor, draft.tokens.view(1, -1)], 1)
        logits = target(Rows.clean(block, anchor_pos), cache)[0]  # [n+1, V]
        stats.record_pass(anchor_pos, block.shape[1])
        if draft is None:
            tokens, accepted = [int(pick_token(logits[0], cfg.sampling, gen))], 0
        else:
            result = verify(draft.tokens, draft.probs, logits, cfg.sampling, gen)
            tokens, accepted = result.tokens.tolist(), result.num_accepted
        cache.crop(anchor_pos + 1 + accepted)
        if drafting and policy is not None:
            policy.observe(0 if draft is None else draft.tokens.shape[0], len(tokens))
        stats.draft_s += t2 - t1
        stats.verify_s += now(dev) - t2
        kept = stop.accept(tokens)
        stats.record_round(len(kept))  # tau counts only what the output keeps
        committed.extend(kept)
        stats.new_tokens += len(kept)
        yield kept
        if stop.reason is not None:
            break
    stats.stop_reason = stop.reason
    stats.total_s = now(dev) - start.t0
    if policy is not None:
        stats.draft_lengths, stats.skipped_rounds, stats.policy_draft_s = policy.summary(), policy.skipped, policy.draft_s
