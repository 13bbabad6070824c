"""The drafting side of asynchronous speculative decoding: state machine, worker loop, backends.

`SuccessorDrafter` owns the drafter, its KV cache and the committed tokens, and answers typed
requests: `Begin` (a new sequence: draft its first block synchronously), `Commit` (the
verification outcome of the current block: reuse the matching successor branch, or draft
synchronously on a miss), `Finish` and `Calibrate`. Between a reply and the next request it runs
`speculate`: the packed successor pass for the block it has just handed out, which is what
overlaps the target's verification of that block.

Drafter cache invariant (differs from the synchronous `DrafterSource`, whose cache also holds the
anchor): at every request and at the start of every pass the cache holds a prefix of the committed
tokens *before the current anchor*; a synchronous draft feeds the rest of them as clean rows
(usually none), so the cache then holds exactly the tokens before the anchor. The successor pass
feeds the current block [a, d_1..d_n] as clean rows, and `commit` crops the cache back to the
verified prefix without its new anchor (prefix + a + d_1..d_accepted), which the pass already
cached, so no outcome needs a recomputation.

Where `speculate` runs is the backend's business (one interface, three backends):

    InlineBackend   in the caller's thread, serially (tests, and the synchronous fallback)
    ThreadBackend   a thread of the target's process; on CUDA its own stream (GPU default)
    ProcessBackend  a worker process (spawn) with its own torch threads (CPU default)

The target side only sends token ids (prefix, accepted count, target token) and receives
candidate ids, their q probabilities when sampling, and pass timings. This module knows nothing
about the target, verification or decode statistics; `async_engine.py` drives it.
"""

from __future__ import annotations

import os
import queue
import statistics
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import Tensor

from d3d.inference.sampling import SamplingConfig, probs_from_logits, sample
from d3d.inference.successors import Budget, Successors, branch_logits, draft_successors, find_branch
from d3d.models.drafter import Drafter

DrafterFactory = Callable[[], Drafter]  # builds the drafter where it runs; picklable for ProcessBackend
READY_TIMEOUT_S = 600.0  # a worker that has not loaded its drafter by then is declared dead
POLL_S = 0.5  # how often a waiting target checks that its worker is still alive


class WorkerDied(RuntimeError):
    """The drafting worker is gone (killed, crashed, or raised); the message says why."""


@dataclass
class DraftReply:
    """Candidates for the next round, as sent from the drafting side to the target (the draft
    contract of `drafting.Draft` holds: q of every candidate is positive)."""

    tokens: list[int]  # [n] candidate ids for positions anchor_pos+1 .. anchor_pos+n
    probs: Tensor | None = None  # [n, V] q each candidate was sampled from; None when greedy
    hit: bool | None = None  # True: a successor branch; False: drafted after a miss; None: no lookup
    events: list[dict] = field(default_factory=list)  # drafter passes finished since the last reply
    confidence: list[float] | None = None  # [n] each position's largest q (a function of the prefix only)


@dataclass
class WorkerError:
    """Sent by a worker loop before it gives up."""

    message: str  # the exception, with its traceback


# ---------------------------------------------------------------------------------------------
# The state machine


class SuccessorDrafter:
    """Drafts first blocks, successor branches, and the next block after each verification."""

    def __init__(self, drafter: Drafter, stream: Any = None) -> None:
        self.drafter = drafter
        self.stream = stream  # the CUDA stream its passes run on (None: the current one)
        self.cache = drafter.new_cache()
        self.device = drafter.model.device
        self.budget: Budget | None = Budget()
        self.sampling = SamplingConfig()
        self.generator: torch.Generator | None = None
        self.committed: list[int] = []  # every committed token, the current anchor last
        self.block: list[int] = []  # [a, d_1..d_n] the block handed out, under verification
        self.block_logits: Tensor | None = None  # [n, V] drafter logits at d_1..d_n
        self.successors: Successors | None = None  # branches for the current block
        self.round = 0  # index of the current block in this sequence
        self.events: list[dict] = []

    @property
    def block_size(self) -> int:
        return self.drafter.block_size

    def begin(
        self, committed: list[int], num_tokens: int, sampling: SamplingConfig, seed: int, budget: Budget | None
    ) -> DraftReply:
        """Start a sequence (committed = prompt + first token) and draft its first block.

        budget None turns speculation off (every round drafts synchronously: the fallback).
        """
        self.cache.reset()
        self.cache.reserve(len(committed) + 4 * self.block_size)
        self.committed, self.successors, self.round, self.events = list(committed), None, 0, []
        self.sampling, self.budget = sampling, budget
        self.generator = None if sampling.greedy else torch.Generator(self.device).manual_seed(seed)
        return self._draft_now(num_tokens, hit=None)

    def commit(self, accepted: int, token: int, num_tokens: int) -> DraftReply:
        """The target kept d_1..d_accepted and appended `token`: hand out the next block."""
        n = len(self.block) - 1
        if not 0 <= accepted <= n:
            raise ValueError(f"accepted {accepted} of a block of {n} candidates")
        self.committed += self.block[1 : 1 + accepted] + [token]
        self.cache.crop(min(self.cache.length, len(self.committed) - 1))
        successors, self.successors = self.successors, None
        self.round += 1
        if successors is None:
            return self._draft_now(num_tokens, hit=None)
        index = find_branch(successors.keys, accepted, token)
        logits = None if index is None else branch_logits(successors, index)[:num_tokens]
        if logits is None or logits.shape[0] == 0:
            return self._draft_now(num_tokens, hit=False)
        return self._propose(logits, hit=True)

    def speculate(self) -> None:
        """The packed successor pass for the current block (overlaps its verification)."""
        if self.budget is None or self.successors is not None or len(self.block) < 2:
            return
        start = time.perf_counter()
        block = torch.tensor(self.block, device=self.device)
        with self._on_stream():
            self.successors = draft_successors(self.drafter, self.cache, block, self.block_logits, self.budget)
        rows = 0 if self.successors is None else self.successors.rows
        self._record("successors", start, rows=rows)

    def take_events(self) -> list[dict]:
        events, self.events = self.events, []
        return events

    def finish(self) -> list[dict]:
        """End of a sequence: the remaining pass timings."""
        return self.take_events()

    def _draft_now(self, num_tokens: int, hit: bool | None) -> DraftReply:
        """A synchronous draft of the block anchored at the last committed token."""
        start = time.perf_counter()
        clean = torch.tensor([self.committed[self.cache.length : -1]], dtype=torch.long, device=self.device)
        anchor = torch.tensor(self.committed[-1:], device=self.device)
        pos = torch.tensor([len(self.committed) - 1], device=self.device)
        with self._on_stream():
            logits = self.drafter.block_logits(self.cache, clean, anchor, pos, num_tokens)[0]
        reply = self._propose(logits, hit)
        self._record("draft", start, rows=clean.shape[1] + self.block_size)
        reply.events += self.take_events()
        return reply

    def _propose(self, logits: Tensor, hit: bool | None) -> DraftReply:
        """Candidates from logits [n, V]: argmax, or sampled from q with q reported."""
        with self._on_stream():
            if self.sampling.greedy:
                top = torch.softmax(logits.float(), -1).max(-1)
                tokens, probs, confidence = top.indices, None, top.values
            else:
                probs = probs_from_logits(logits, self.sampling)
                tokens, confidence = sample(probs, self.generator), probs.max(-1).values
            token_list = tokens.tolist()  # deliberate host sync: candidates travel as ids
        self.block = self.committed[-1:] + token_list
        self.block_logits = logits
        return DraftReply(token_list, probs, hit, self.take_events(), confidence.tolist())

    def _on_stream(self):
        return torch.cuda.stream(self.stream) if self.stream is not None else nullcontext()

    def _record(self, kind: str, start: float, **extra) -> None:
        if self.stream is not None:
            self.stream.synchronize()  # deliberate: the timing must cover this stream's kernels only
        elif self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.events.append({"kind": kind, "round": self.round, "start": start, "end": time.perf_counter(), **extra})

    # -- budget calibration -------------------------------------------------------------------

    def calibrate(self, context: int, budgets: list[Budget], repeats: int, limit_s: float) -> dict:
        """Median seconds of a synchronous draft and of the packed pass per budget, after a random
        context of `context` tokens. Budgets are timed in the order given; once one takes longer
        than `limit_s` the larger ones are skipped."""
        gen = torch.Generator().manual_seed(0)
        vocab, bs = self.drafter.model.spec.vocab_size, self.block_size
        ids = torch.randint(0, vocab, (context + bs,), generator=gen).tolist()
        self.begin(ids[: context + 1], bs - 1, SamplingConfig(), 0, None)
        base = self.cache.length

        def sync_draft() -> None:
            self.cache.crop(base)
            self._draft_now(bs - 1, None)

        result = {"sync": _median_time(sync_draft, repeats), "budgets": {}}
        for budget in budgets:
            self.budget = budget

            def successor_pass() -> None:
                self.cache.crop(base)
                self.successors = None
                self.speculate()

            seconds = _median_time(successor_pass, repeats)
            result["budgets"][str(budget)] = seconds
            if seconds > limit_s:
                break
        self.events = []
        return result


def _median_time(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------------------------------------
# Requests: what the target side asks of the drafting side (small picklable messages)


@dataclass(frozen=True)
class Begin:
    """Start a sequence and draft its first block; the reply is a `DraftReply`."""

    committed: tuple[int, ...]  # prompt + first token: every committed token, the anchor last
    num_tokens: int  # candidates to draft (<= B-1)
    sampling: SamplingConfig  # how candidates are drawn (greedy: argmax)
    seed: int  # seeds the drafting side's sampling generator
    budget: Budget | None  # successor budget; None turns speculation off (synchronous drafting)
    speculates: ClassVar[bool] = True  # the successor pass of the block handed out runs after the reply

    def apply(self, core: SuccessorDrafter) -> DraftReply:
        return core.begin(list(self.committed), self.num_tokens, self.sampling, self.seed, self.budget)


@dataclass(frozen=True)
class Commit:
    """The verification outcome of the current block; the reply is the next block's `DraftReply`."""

    accepted: int  # candidates the target kept
    token: int  # the target's own token after them (recovered or bonus)
    num_tokens: int  # candidates to draft for the next block
    speculates: ClassVar[bool] = True

    def apply(self, core: SuccessorDrafter) -> DraftReply:
        return core.commit(self.accepted, self.token, self.num_tokens)


@dataclass(frozen=True)
class Finish:
    """End of a sequence; the reply is the timings (list of dicts) of passes not yet reported."""

    speculates: ClassVar[bool] = False

    def apply(self, core: SuccessorDrafter) -> list[dict]:
        return core.finish()


@dataclass(frozen=True)
class Calibrate:
    """Time a synchronous draft and the packed pass per budget (`budget.py`); the reply is a dict."""

    context: int  # tokens of random context before the timed passes
    budgets: tuple[Budget, ...]  # budgets to time, in this order
    repeats: int  # timed repeats per measurement (the median is reported)
    limit_s: float  # once a budget takes longer than this, larger ones are skipped
    speculates: ClassVar[bool] = False

    def apply(self, core: SuccessorDrafter) -> dict:
        return core.calibrate(self.context, list(self.budgets), self.repeats, self.limit_s)


Request = Begin | Commit | Finish | Calibrate


# ---------------------------------------------------------------------------------------------
# The worker loop (thread and process backends)


def serve(core: SuccessorDrafter, receive: Callable[[], Any], send: Callable[[Any], None]) -> None:
    """Answer requests until None arrives; after each draft, speculate before reading the next.

    An exception is reported once as a `WorkerError` and ends the loop; a closed connection (the
    target's process gone without a goodbye) ends it quietly: there is nobody left to tell.
    """
    try:
        with torch.inference_mode():
            while (request := receive()) is not None:
                send(request.apply(core))
                if request.speculates:
                    core.speculate()
    except (EOFError, BrokenPipeError):
        return
    except Exception:  # reported to the target, which falls back to synchronous drafting
        send(WorkerError(traceback.format_exc()))


# ---------------------------------------------------------------------------------------------
# Backends: where the state machine runs


class DraftingBackend(ABC):
    """Request/reply channel to a `SuccessorDrafter`. `submit` never blocks; `result` waits for
    the oldest outstanding reply and raises `WorkerDied` if the drafting side is gone."""

    name: str
    block_size: int
    trained: bool  # whether the drafter was trained (a prior for the budget model)
    recorded_tau: float | None = None  # its measured tau (`Drafter.prior_tau`: acceptance table, else validation tau)

    def __init__(self) -> None:
        self.pending = 0

    def submit(self, request: Request) -> None:
        self._send(request)
        self.pending += 1

    def result(self) -> Any:
        reply = self._receive()
        self.pending -= 1
        if isinstance(reply, WorkerError):
            raise WorkerDied(f"drafting worker failed:\n{reply.message}")
        return reply

    def call(self, request: Request) -> Any:
        """Submit and wait, after draining replies left by an abandoned sequence."""
        self.drain()
        self.submit(request)
        return self.result()

    def drain(self) -> None:
        """Drop replies left by an abandoned sequence."""
        while self.pending:
            self.result()

    @abstractmethod
    def ready(self) -> bool:
        """Whether `result` would return (or raise) without waiting."""

    @abstractmethod
    def _send(self, request: Request) -> None: ...

    @abstractmethod
    def _receive(self) -> Any: ...

    def close(self) -> None:
        """Stop the drafting side (idempotent)."""


class InlineBackend(DraftingBackend):
    """Runs the state machine in the caller's thread: the successor pass of a block runs just
    before its outcome is committed, i.e. after (not during) its verification."""

    name = "inline"

    def __init__(self, core: SuccessorDrafter) -> None:
        super().__init__()
        self.core = core
        self.block_size = core.block_size
        self.trained, self.recorded_tau = core.drafter.config.trained, core.drafter.prior_tau()
        self.replies: list[Any] = []

    def _send(self, request: Request) -> None:
        with torch.inference_mode():
            if isinstance(request, Commit):
                self.core.speculate()
            self.replies.append(request.apply(self.core))

    def ready(self) -> bool:
        return True

    def _receive(self) -> Any:
        return self.replies.pop(0)


class ThreadBackend(DraftingBackend):
    """The state machine on a thread of this process; on CUDA its passes run on their own stream.

    On a CPU this shares torch's thread pool with the target, so it overlaps less than the process
    backend; it exists for GPUs (one process, two streams) and to test the concurrent code path.
    """

    name = "thread"

    def __init__(self, factory: DrafterFactory) -> None:
        super().__init__()
        drafter = factory()
        device = drafter.model.device
        stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self.core = SuccessorDrafter(drafter, stream)
        self.block_size, self.trained = drafter.block_size, drafter.config.trained
        self.recorded_tau = drafter.prior_tau()
        self.inbox: queue.Queue = queue.Queue()
        self.outbox: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=serve, args=(self.core, self.inbox.get, self.outbox.put), daemon=True)
        self.thread.start()

    def ready(self) -> bool:
        return not self.outbox.empty() or not self.thread.is_alive()

    def _send(self, request: Request) -> None:
        if not self.thread.is_alive():
            raise WorkerDied("drafting thread is not running")
        self.inbox.put(request)

    def _receive(self) -> Any:
        while True:
            try:
                reply = self.outbox.get(timeout=POLL_S)
                break
            except queue.Empty:
                if not self.thread.is_alive():
                    raise WorkerDied("drafting thread ended") from None
        if isinstance(reply, DraftReply) and reply.probs is not None and reply.probs.is_cuda:
            reply.probs.record_stream(torch.cuda.current_stream(reply.probs.device))  # used on our stream now
        return reply

    def close(self) -> None:
        if self.thread.is_alive():
            self.inbox.put(None)
            self.thread.join(timeout=5)


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process reports once its drafter is loaded."""

    pid: int  # the worker's process id
    block_size: int  # the drafter's B
    trained: bool  # whether the drafter was trained
    recorded_tau: float | None  # its measured tau (`Drafter.prior_tau`), if any
    threads: int  # torch threads the worker runs with
    load_s: float  # seconds it took to load the drafter


def worker_main(factory: DrafterFactory, threads: int, conn) -> None:
    """Entry point of the drafting worker process: load the drafter, then serve requests."""
    torch.set_num_threads(threads)
    try:
        start = time.perf_counter()
        drafter = factory()
        conn.send(WorkerInfo(os.getpid(), drafter.block_size, drafter.config.trained, drafter.prior_tau(), threads,
                             time.perf_counter() - start))
    except Exception:
        conn.send(WorkerError(traceback.format_exc()))
        return
    serve(SuccessorDrafter(drafter), conn.recv, lambda reply: conn.send(_to_wire(reply)))


def _to_wire(reply: Any) -> Any:
    """q probabilities cross the pipe as numpy arrays (plain bytes, no shared-memory handles
    that a killed worker could leak)."""
    if isinstance(reply, DraftReply) and reply.probs is not None:
        reply.probs = reply.probs.cpu().numpy()
    return reply


class ProcessBackend(DraftingBackend):
    """The state machine in a worker process with its own torch threads (spawn context).

    The worker loads the drafter itself from `factory` (a picklable zero-argument callable, e.g.
    a `functools.partial` of a module-level loader), so only token ids, q probabilities and
    timings ever cross the pipe.
    """

    name = "process"

    def __init__(self, factory: DrafterFactory, threads: int, device: torch.device | str = "cpu") -> None:
        super().__init__()
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.device = torch.device(device)
        self.process = ctx.Process(target=worker_main, args=(factory, threads, child), daemon=True,
                                   name="d3d-drafter")
        self.process.start()
        child.close()
        info = self._receive(timeout=READY_TIMEOUT_S)
        if isinstance(info, WorkerError):
            self.close()
            raise WorkerDied(f"drafting worker could not load the drafter:\n{info.message}")
        self.info: WorkerInfo = info
        self.block_size, self.trained, self.recorded_tau = info.block_size, info.trained, info.recorded_tau

    @property
    def pid(self) -> int:
        return self.info.pid

    def ready(self) -> bool:
        try:
            return self.conn.poll() or not self.process.is_alive()
        except OSError:
            return True

    def _send(self, request: Request) -> None:
        try:
            self.conn.send(request)
        except (BrokenPipeError, ConnectionResetError, OSError) as error:
            raise WorkerDied(f"drafting worker is gone ({error})") from None

    def _receive(self, timeout: float | None = None) -> Any:
        from multiprocessing.connection import wait

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            ready = wait([self.conn, self.process.sentinel], timeout=POLL_S)
            if self.conn in ready:
                try:
                    reply = self.conn.recv()
                except (EOFError, ConnectionResetError, OSError):
                    raise WorkerDied(self._death_reason()) from None
                break
            if ready or (deadline is not None and time.monotonic() > deadline):
                raise WorkerDied(self._death_reason())
        if isinstance(reply, DraftReply) and reply.probs is not None:
            reply.probs = torch.from_numpy(reply.probs).to(self.device)
        return reply

    def _death_reason(self) -> str:
        self.process.join(timeout=1)
        code = self.process.exitcode
        return "drafting worker did not answer" if code is None else f"drafting worker exited with code {code}"

    def close(self) -> None:
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=5)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join(timeout=5)
        self.conn.close()
