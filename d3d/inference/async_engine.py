"""Asynchronous speculative decoding (docs/design.md "Asynchronous drafting", paper 3.4).

One round, target side:

    verify  one target pass over [anchor, d_1..d_n]; `verify.verify` keeps the accepted prefix
            plus one target token (the only acceptance rule, as in synchronous decoding)
    commit  send (accepted, target token) to the drafting side, yield the new tokens, then wait
            for the next candidates

Meanwhile the drafting side (`async_drafting.py`, in a worker process or thread) ran the packed
successor pass for [anchor, d_1..d_n] while the target was verifying it; on a hit it answers the
commit at once with the matching branch's candidates, on a miss it drafts synchronously from the
verified prefix. Either way it then starts the successor pass for the block it has just handed
out, which overlaps that block's verification.

Lossless: the target's cache and acceptance are exactly those of `speculative_decode`; the
candidates of a round are drawn from a q that is a function of the verified prefix only (the
branch's conditioning is that prefix), with randomness used nowhere else, and verification uses
that same q, so Leviathan et al.'s argument applies round by round (docs/async.md).

If the drafting side dies, generation continues with synchronous in-process drafting from the
verified prefix (`fallback`); nothing committed is lost because every acceptance happens here.

    runner = AsyncRunner(target, remote_factory, local_factory, AsyncConfig(budget="2,1"))
    stats = AsyncDecodeStats("async")
    for chunk in runner.stream(prompt_ids, GenerationConfig(), stop, stats): print(chunk)
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from d3d.errors import D3DError
from d3d.inference.async_drafting import (
    Begin,
    Commit,
    DraftingBackend,
    DraftReply,
    DrafterFactory,
    Finish,
    InlineBackend,
    ProcessBackend,
    SuccessorDrafter,
    ThreadBackend,
    WorkerDied,
)
from d3d.inference.budget import TRAINED_PRIOR, UNTRAINED_PRIOR, AcceptancePrior, BudgetChoice, calibrate_budget
from d3d.inference.draft_length import DraftLengthPolicy
from d3d.inference.engine import DecodeStats, GenerationConfig, now, pick_token, start_decode
from d3d.inference.stopping import StopChecker
from d3d.inference.successors import Budget
from d3d.inference.verify import verify
from d3d.models.attention import Rows
from d3d.models.decoder import DecoderModel

BACKENDS = ("process", "thread", "inline")
DRAFT_SEED_OFFSET = 1  # the drafting side samples with seed + 1 (as synchronous decoding does)
FALLBACK_SEED_OFFSET = 2  # the fallback drafter samples with seed + 2


@dataclass
class AsyncConfig:
    """How asynchronous decoding runs on this machine."""

    budget: str = "auto"  # "auto" (measured here, see budget.py) or "C,F"
    backend: str | None = None  # "process", "thread" or "inline"; None: process on CPU, thread on CUDA
    draft_threads: int | None = None  # torch threads of the drafting worker process; None: half the cores
    target_threads: int | None = None  # torch threads of the target while decoding; None: the other half
    prior_tau: float | None = None  # tau assumed by `--budget auto`; None: the drafter's recorded tau, else a prior

    def validate(self) -> None:
        if self.budget != "auto":
            Budget.parse(self.budget)
        if self.backend is not None and self.backend not in BACKENDS:
            raise D3DError(f"unknown async backend '{self.backend}' (choose from {', '.join(BACKENDS)})")
        for name in ("draft_threads", "target_threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise D3DError(f"--{name.replace('_', '-')} must be at least 1, got {value}")

    def backend_for(self, device: torch.device) -> str:
        return self.backend or ("thread" if device.type == "cuda" else "process")

    def thread_split(self) -> tuple[int, int]:
        """(target threads, drafter threads): by default the cores split in two halves."""
        cores = os.cpu_count() or 1
        draft = self.draft_threads or max(1, cores // 2)
        return self.target_threads or max(1, cores - draft), draft


@dataclass
class AsyncDecodeStats(DecodeStats):
    """`DecodeStats` plus what asynchronous decoding adds. draft_s is the drafting side's compute
    (successor passes + synchronous drafts), wait_s the time the target spent waiting for it."""

    budget: str = ""  # "C=..,F=.."
    n_async: int = 0  # nominal tokens per successor pass, B((C-1)F + 2)
    backend: str = ""  # "process", "thread" or "inline"
    hits: int = 0  # rounds whose candidates came from a successor branch
    misses: int = 0  # rounds drafted synchronously after a failed lookup
    wait_s: float = 0.0  # target time blocked on the drafting side (after the prefill)
    successor_s: float = 0.0  # total time of packed successor passes (t_d)
    successor_passes: int = 0  # number of packed successor passes
    sync_draft_s: float = 0.0  # total time of synchronous drafts (t_s)
    sync_drafts: int = 0  # number of synchronous drafts
    hidden_rounds: int = 0  # rounds whose successor pass ended before their verification did
    overlapped_rounds: int = 0  # rounds with both a successor pass and a verification
    fallback: str | None = None  # why the drafting side was replaced by synchronous drafting
    origin_s: float = 0.0  # perf_counter at the start of generation (timeline origin)
    timeline: list[dict] = field(default_factory=list)  # every t_v and t_d as {kind, round, start, end, ...}

    @property
    def hit_rate(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0

    @property
    def hidden_share(self) -> float:
        return self.hidden_rounds / self.overlapped_rounds if self.overlapped_rounds else 0.0

    @property
    def mean_successor_s(self) -> float:
        return self.successor_s / self.successor_passes if self.successor_passes else 0.0

    def absorb(self, reply: DraftReply) -> None:
        """Count a reply's hit and its drafting passes."""
        self.hits += reply.hit is True
        self.misses += reply.hit is False
        for event in reply.events:
            self.add_pass(event)

    def add_pass(self, event: dict) -> None:
        seconds = event["end"] - event["start"]
        self.draft_s += seconds
        if event["kind"] == "successors":
            self.successor_s += seconds
            self.successor_passes += 1
        else:
            self.sync_draft_s += seconds
            self.sync_drafts += 1
        self.timeline.append(event)

    def count_hidden(self) -> None:
        """Pair each round's verification with its successor pass (same round index)."""
        verify_end = {e["round"]: e["end"] for e in self.timeline if e["kind"] == "verify"}
        passes = [e for e in self.timeline if e["kind"] == "successors" and e["round"] in verify_end]
        self.overlapped_rounds = len(passes)
        self.hidden_rounds = sum(e["end"] <= verify_end[e["round"]] for e in passes)

    def as_dict(self) -> dict:
        return super().as_dict() | {
            "budget": self.budget, "n_async": self.n_async, "backend": self.backend, "hits": self.hits,
            "misses": self.misses, "hit_rate": round(self.hit_rate, 4), "hidden_share": round(self.hidden_share, 4),
            "mean_td_s": round(self.mean_successor_s, 5), "mean_tv_s": round(self.mean_verify_s, 5),
            "mean_sync_draft_s": round(self.sync_draft_s / self.sync_drafts, 5) if self.sync_drafts else 0.0,
            "wait_s": round(self.wait_s, 4), "fallback": self.fallback,
        }


def new_stats(mode: str) -> DecodeStats:
    """The statistics object a mode fills."""
    return AsyncDecodeStats(mode) if mode == "async" else DecodeStats(mode)


# ---------------------------------------------------------------------------------------------
# The decode loop


class _Drafts:
    """The target's handle on the drafting side, replaced by synchronous in-process drafting
    (`fallback(reason)`) if it dies. Requests carry what a fresh drafter needs to take over."""

    def __init__(self, backend: DraftingBackend, fallback: Callable[[str], DraftingBackend] | None,
                 cfg: GenerationConfig, budget: Budget | None, stats: AsyncDecodeStats) -> None:
        self.backend, self.fallback, self.cfg, self.budget, self.stats = backend, fallback, cfg, budget, stats
        self.committed: list[int] = []  # the target's committed tokens (shared, kept up to date by the loop)
        self.num_tokens = 0
        self.failure: str | None = None

    def begin(self, committed: list[int], num_tokens: int) -> None:
        self.committed, self.num_tokens = committed, num_tokens
        self._guard(self._submit_begin)

    def _submit_begin(self) -> None:
        self.backend.drain()
        seed = self.cfg.seed + DRAFT_SEED_OFFSET
        self.backend.submit(Begin(tuple(self.committed), self.num_tokens, self.cfg.sampling, seed, self.budget))

    def commit(self, accepted: int, token: int, num_tokens: int) -> None:
        self.num_tokens = num_tokens
        self._guard(lambda: self.backend.submit(Commit(accepted, token, num_tokens)))

    def result(self) -> DraftReply:
        start = time.perf_counter()
        reply = None
        if self.failure is None:
            try:
                reply = self.backend.result()
            except WorkerDied as died:
                self.failure = str(died)
        if reply is None:
            reply = self._take_over()
        self.stats.wait_s += time.perf_counter() - start
        self.stats.absorb(reply)
        return reply

    def finish(self) -> None:
        """Collect the last pass timings (the successor pass of the final block)."""
        if self.failure is None:
            try:
                for event in self.backend.call(Finish()):
                    self.stats.add_pass(event)
            except WorkerDied as died:
                self.failure = str(died)

    def _guard(self, action: Callable[[], None]) -> None:
        if self.failure is None:
            try:
                action()
            except WorkerDied as died:
                self.failure = str(died)

    def _take_over(self) -> DraftReply:
        """Replace the dead drafting side; draft the pending block from the verified prefix."""
        if self.fallback is None:
            raise D3DError(f"the drafting worker died and no fallback is configured: {self.failure}")
        reason = (self.failure or "unknown").strip().splitlines()[-1]
        self.stats.fallback = reason
        print(f"[d3d async] drafting worker lost ({reason}); continuing with synchronous drafting", file=sys.stderr)
        self.backend, self.failure, self.fallback = self.fallback(reason), None, None
        seed = self.cfg.seed + FALLBACK_SEED_OFFSET
        return self.backend.call(Begin(tuple(self.committed), self.num_tokens, self.cfg.sampling, seed, None))


@torch.inference_mode()
def async_speculative_decode(
    target: DecoderModel,
    backend: DraftingBackend,
    prompt: Tensor,
    cfg: GenerationConfig,
    stop: StopChecker,
    stats: AsyncDecodeStats,
    budget: Budget | None,
    fallback: Callable[[str], DraftingBackend] | None = None,
    policy: DraftLengthPolicy | None = None,
) -> Iterator[list[int]]:
    """Asynchronous speculative decoding; lossless for any drafting side. prompt: [1, n].

    budget None drafts every block synchronously (no successor passes). `policy` chooses how many
    of each block's candidates the target verifies (`draft_length.py`; async always drafts, so it
    never takes plain steps); None verifies them all."""
    dev = target.device
    stats.budget, stats.backend = str(budget) if budget else "none", backend.name
    stats.n_async = budget.tokens(backend.block_size) if budget else 0
    start = start_decode(target, prompt, cfg, stop, stats)
    cache, gen, t0 = start.cache, start.generator, start.t0
    stats.origin_s = t0
    committed = prompt[0].tolist() + [start.first_token]
    stats.new_tokens += 1
    drafts = _Drafts(backend, fallback, cfg, budget, stats)
    bs = backend.block_size
    try:
        if not stop.push(committed[-1]):
            num_tokens = min(bs - 1, stop.remaining - 1)
            if num_tokens > 0:
                drafts.begin(committed, num_tokens)
            yield committed[-1:]
            yield from _rounds(target, cache, drafts, committed, num_tokens, cfg, stop, stats, gen, policy)
        else:
            yield committed[-1:]
        stats.stop_reason = stop.reason
        stats.total_s = now(dev) - t0
    finally:
        drafts.finish()
        stats.count_hidden()


def _rounds(
    target: DecoderModel, cache, drafts: _Drafts, committed: list[int], num_tokens: int, cfg: GenerationConfig,
    stop: StopChecker, stats: AsyncDecodeStats, gen: torch.Generator | None, policy: DraftLengthPolicy | None = None,
) -> Iterator[list[int]]:
    """Verification rounds until the stop checker ends generation."""
    dev, bs = target.device, drafts.backend.block_size
    source = "first"
    for rnd in itertools.count():
        draft = drafts.result() if num_tokens > 0 else None
        if draft is not None and rnd > 0:
            source = {True: "hit", False: "miss", None: "sync"}[draft.hit]
        if draft is not None and policy is not None:
            draft = _verified_part(draft, policy)
        anchor_pos = len(committed) - 1
        t1 = now(dev)
        block = torch.tensor([committed[-1:] + (draft.tokens if draft else [])], device=dev)
        logits = target(Rows.clean(block, anchor_pos), cache)[0]  # [n+1, V]
        stats.record_pass(anchor_pos, block.shape[1])
        if draft is None:
            tokens, accepted = [int(pick_token(logits[0], cfg.sampling, gen))], 0
        else:
            result = verify(block[0, 1:], draft.probs, logits, cfg.sampling, gen)
            tokens, accepted = result.tokens.tolist(), result.num_accepted
        cache.crop(anchor_pos + 1 + accepted)
        t2 = now(dev)
        stats.verify_s += t2 - t1
        stats.timeline.append({"kind": "verify", "round": rnd, "start": t1, "end": t2, "rows": block.shape[1],
                               "accepted": accepted, "source": source if draft else "none"})
        kept = stop.accept(tokens)
        stats.record_round(len(kept))  # tau counts only what the output keeps
        committed.extend(kept)
        stats.new_tokens += len(kept)
        if stop.reason is None:
            num_tokens = min(bs - 1, stop.remaining - 1)
            if num_tokens > 0:
                drafts.commit(accepted, tokens[-1], num_tokens)
        yield kept
        if stop.reason is not None:
            if policy is not None:
                stats.draft_lengths = policy.summary()
            return


def _verified_part(draft: DraftReply, policy: DraftLengthPolicy) -> DraftReply | None:
    """The candidates the policy verifies this round (None: none, a plain step)."""
    confidence = None if draft.confidence is None else torch.tensor(draft.confidence)
    m = policy.choose(confidence, len(draft.tokens))
    if m == 0:
        return None
    probs = None if draft.probs is None else draft.probs[:m]
    return replace(draft, tokens=draft.tokens[:m], probs=probs, confidence=None)


# ---------------------------------------------------------------------------------------------
# A long-lived runner: one drafting worker and one budget choice serve many generations


class AsyncRunner:
    """Owns the drafting backend (started on first use) and the budget; runs generations.

    remote: a picklable factory the worker process loads the drafter with; local: the drafter in
    this process (thread and inline backends, and the fallback after a worker death).
    """

    def __init__(self, target: DecoderModel, remote: DrafterFactory, local: DrafterFactory, config: AsyncConfig,
                 log: Callable[[str], None] | None = None) -> None:
        config.validate()
        self.target, self.remote, self.local, self.config = target, remote, local, config
        self.log = log or (lambda message: print(f"[d3d async] {message}", file=sys.stderr, flush=True))
        self._backend: DraftingBackend | None = None
        self._all_threads = torch.get_num_threads()  # what the fallback drafts with
        self.unavailable: str | None = None  # why the drafting worker could not start (then never retried)
        self.choice: BudgetChoice | None = None
        self.last_stats: AsyncDecodeStats | None = None

    @property
    def kind(self) -> str:
        return self.config.backend_for(self.target.device)

    def backend(self) -> DraftingBackend:
        if self._backend is None:
            target_threads, draft_threads = self.config.thread_split()
            if self.kind == "process":
                if target_threads + draft_threads > (os.cpu_count() or 1):
                    self.log(f"{target_threads} target + {draft_threads} drafter threads oversubscribe "
                             f"{os.cpu_count()} cores: expect both to slow down badly (docs/async.md)")
                self._backend = ProcessBackend(self.remote, draft_threads, self.target.device)
                self.log(f"drafting worker pid {self._backend.pid}: {draft_threads} thread(s), target "
                         f"{target_threads} thread(s); drafter loaded in {self._backend.info.load_s:.1f} s")
            elif self.kind == "thread":
                self._backend = ThreadBackend(self.local)
            else:
                self._backend = InlineBackend(SuccessorDrafter(self.local()))
        return self._backend

    def budget(self) -> Budget:
        if self.config.budget != "auto":
            return Budget.parse(self.config.budget)
        if self.choice is None:
            backend = self.backend()
            with self._target_threads():
                self.choice = calibrate_budget(self.target, backend, self.prior(backend), self.kind != "inline")
            self.log(f"budget {self.choice.budget} (auto): {self.choice.reason}")
        return self.choice.budget

    def prior(self, backend: DraftingBackend) -> AcceptancePrior:
        base = TRAINED_PRIOR if backend.trained else UNTRAINED_PRIOR
        tau = self.config.prior_tau if self.config.prior_tau is not None else backend.recorded_tau
        return base if tau is None else AcceptancePrior(tau, base.alt_hit, base.alt_decay)

    def stream(self, prompt_ids: Tensor, cfg: GenerationConfig, stop: StopChecker, stats: DecodeStats,
               policy: DraftLengthPolicy | None = None) -> Iterator[list[int]]:
        """Token chunks for prompt_ids [1, n]; `stats` must be an `AsyncDecodeStats`. `policy`:
        the verification length per round (None: every candidate)."""
        if not isinstance(stats, AsyncDecodeStats):
            raise TypeError("asynchronous decoding fills AsyncDecodeStats (see new_stats)")
        self.last_stats = stats
        try:
            if self.unavailable is not None:
                raise WorkerDied(self.unavailable)
            budget: Budget | None = self.budget()
            backend = self.backend()
        except WorkerDied as died:  # could not start: draft synchronously here (and say so once)
            if self.unavailable is None:
                self.unavailable = str(died).strip().splitlines()[-1]
                self.log(f"drafting worker unavailable ({self.unavailable}); drafting synchronously in this process")
            stats.fallback = self.unavailable
            budget, backend = None, self._fallback(self.unavailable)
        with self._target_threads(budget is not None):
            yield from async_speculative_decode(self.target, backend, prompt_ids, cfg, stop, stats, budget, self._fallback,
                                                policy)

    def _fallback(self, reason: str) -> DraftingBackend:
        """After a worker death: synchronous drafting in this process; a fresh worker next time."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        torch.set_num_threads(self._all_threads)
        return InlineBackend(SuccessorDrafter(self.local()))

    @contextmanager
    def _target_threads(self, split: bool = True):
        """The target's torch threads while the worker process drafts on the others."""
        saved = torch.get_num_threads()
        if split and self.kind == "process":
            torch.set_num_threads(self.config.thread_split()[0])
        try:
            yield
        finally:
            torch.set_num_threads(saved)

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
