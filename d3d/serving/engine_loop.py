"""The one engine loop of `d3d serve`: a thread that owns the models and runs continuous batching.

The HTTP layer never touches a model. It turns a request into a `Job` and calls `submit`, which
returns at once (or raises `QueueFull` / `ShuttingDown`); the loop thread then, between rounds:

    admit    waiting jobs join the batch while there is room (each is prefilled alone)
    drop     jobs whose client went away (`Job.cancel`) leave the batch
    round    `BatchDecoder.step()`: one batched drafter pass, one batched verification

and hands every job its events (`Tokens`, then `Done` or `Failed`) through the job's `deliver`
callback, which must be thread-safe and must not block (the app passes
`loop.call_soon_threadsafe`). A failing round fails the jobs that were in it and the loop
continues with a fresh batch; a failing prefill fails only its job. If the loop cannot continue
(a fresh decoder cannot be built, or the thread ends for any reason), it fails every running and
waiting job and `submit` raises `ShuttingDown` from then on: nothing queues into a dead loop.

A job whose client went away is cancelled (`Job.cancel`); a cancelled job that is still waiting
no longer counts toward `max_queue`, and it is dropped before it is prefilled.

A job may ask for selective prefill (`Job.prefill`): at admission, on this thread, the default
selector (lexical, `selectors.DEFAULT_SELECTOR`) picks the prompt chunks the target reads
(`prefill.reduce_for_target`), and the request decodes from that reduced prompt (drafter and
target alike). The selector needs no drafter: a server without one prefills the reduced prompt
too and decodes it plainly.

Shutdown (`begin_drain`, then `close`): waiting jobs fail at once with a "shutting down" error,
nothing is admitted from then on, running jobs may finish for `drain_s` seconds, then the rest
fail the same way.

This module knows nothing about HTTP, JSON or tokenizers.

    loop = EngineLoop(lambda: BatchDecoder(target, drafter, 8), EngineConfig(), metrics)
    loop.start()
    loop.submit(Job(prompt_ids, cfg, stop, speculate=True, deliver=print))
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from d3d.errors import D3DError
from d3d.inference.batch_engine import BatchDecoder, Sequence
from d3d.inference.engine import GenerationConfig
from d3d.inference.prefill import PrefillConfig, reduce_for_target
from d3d.inference.stopping import StopChecker
from d3d.serving.metrics import ServingMetrics


class QueueFull(Exception):
    """The waiting queue is at `max_queue`: the client should retry later (HTTP 429)."""


class ShuttingDown(Exception):
    """The server no longer admits requests (HTTP 503)."""


@dataclass
class EngineConfig:
    """Limits of the engine loop."""

    max_batch: int = 8  # sequences decoded together per round
    max_queue: int = 64  # requests waiting to join the batch; beyond it, submit raises QueueFull
    drain_s: float = 30.0  # on shutdown, seconds running requests may still finish

    def validate(self) -> None:
        if self.max_batch < 1 or self.max_queue < 0:
            raise D3DError(f"--max-batch must be >= 1 and --max-queue >= 0, got {self.max_batch}, {self.max_queue}")


@dataclass
class Tokens:
    """New token ids of one job (the first event carries the first token)."""

    ids: list[int]


@dataclass
class Done:
    """The job finished normally."""

    reason: str  # "eos", "stop_string", "max_new_tokens" or "context"
    prompt_tokens: int  # tokens of the prompt
    completion_tokens: int  # tokens generated
    rounds: int  # verification rounds after the prefill
    tau: float  # mean tokens appended per round
    speculative: bool  # whether it was drafted for
    prompt_read: int = 0  # prompt tokens the target read (fewer than prompt_tokens with selective prefill)


@dataclass
class Failed:
    """The job ended with an error; `status` is the HTTP status it maps to."""

    message: str
    status: int = 500


Event = Tokens | Done | Failed


@dataclass
class PrefillRequest:
    """Selective prefill for one job: the target reads about `keep` of the prompt."""

    keep: float  # rho in (0, 1] (`prefill.parse_prefill_keep`)
    protected: torch.Tensor  # [n] bool: prompt tokens always kept (`prompt_layout.protected_tokens`)
    stop_ids: frozenset[int] = frozenset()  # token ids the lexical selector ignores (`prompt_layout.stopword_ids`)


@dataclass
class Job:
    """One request as the engine sees it."""

    prompt: torch.Tensor  # [1, n] token ids
    cfg: GenerationConfig  # budget, sampling, seed
    stop: StopChecker  # eos ids, stop strings, budget
    speculate: bool  # draft for it (False: plain decoding)
    deliver: Callable[[Event], None]  # thread-safe, non-blocking sink for its events
    submitted_s: float = field(default_factory=time.perf_counter)  # when it was submitted
    cancelled: bool = False  # set by `cancel` (client gone); the loop drops it at the next round
    first_token_s: float | None = None  # when its first token was delivered
    prefill: PrefillRequest | None = None  # selective prefill; None: the target reads the whole prompt

    def cancel(self) -> None:
        self.cancelled = True


class EngineLoop:
    """Owns a `BatchDecoder` (made by `make_decoder`) and runs it on one thread."""

    def __init__(self, make_decoder: Callable[[], BatchDecoder], config: EngineConfig,
                 metrics: ServingMetrics | None = None) -> None:
        config.validate()
        self.make_decoder, self.config = make_decoder, config
        self.metrics = metrics or ServingMetrics(max_batch=config.max_batch)
        self.decoder = make_decoder()
        self._waiting: deque[Job] = deque()
        self._jobs: dict[int, Job] = {}  # sequence id -> job, for the running batch
        self._cond = threading.Condition()
        self._draining = False
        self._stopped: str | None = None  # why the loop can take no more jobs (it ended or cannot go on)
        self._drain_deadline = float("inf")
        self._thread = threading.Thread(target=self._run, name="d3d-engine", daemon=True)

    # -- called from the HTTP side ----------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue a job; raises QueueFull or ShuttingDown instead of waiting."""
        with self._cond:
            if self._draining:
                raise ShuttingDown("the server is shutting down")
            if self._stopped is not None:
                raise ShuttingDown(f"the engine is not running: {self._stopped}")
            self._purge_cancelled()
            if len(self._waiting) >= self.config.max_queue:
                self.metrics.record_outcome("rejected")
                raise QueueFull(f"the queue is full ({self.config.max_queue} requests waiting)")
            self._waiting.append(job)
            self.metrics.queue.set(len(self._waiting))
            self._cond.notify()

    def wake(self) -> None:
        """Let the loop notice a cancellation now, even if idle."""
        with self._cond:
            self._cond.notify()

    def begin_drain(self) -> None:
        """Stop admitting; fail waiting jobs; running ones may finish for `drain_s` seconds."""
        with self._cond:
            if self._draining:
                return
            self._draining = True
            self._drain_deadline = time.perf_counter() + self.config.drain_s
            waiting, self._waiting = list(self._waiting), deque()
            self.metrics.queue.set(0)
            self._cond.notify()
        for job in waiting:
            self._fail(job, "the server is shutting down", 503)

    def close(self, timeout: float | None = None) -> None:
        """Drain and stop the loop thread."""
        self.begin_drain()
        if self._thread.is_alive():
            self._thread.join(self.config.drain_s + 5 if timeout is None else timeout)

    @property
    def queue_depth(self) -> int:
        with self._cond:
            self._purge_cancelled()
            return len(self._waiting)

    @property
    def draining(self) -> bool:
        return self._draining

    @property
    def alive(self) -> bool:
        """Whether the loop thread is running and can take jobs (False before `start` and after it ended)."""
        return self._thread.is_alive() and self._stopped is None

    @property
    def device(self) -> torch.device:
        return self.decoder.target.device

    # -- the loop thread --------------------------------------------------------------------

    def _run(self) -> None:
        reason = "the engine loop is not running (it ended)"
        try:
            with torch.inference_mode():  # this thread only decodes; caches it grows stay writable here
                while self._step_loop():
                    pass
        except BaseException as exc:  # noqa: BLE001 - `_step_loop` could not recover: fail everyone, say why
            self._log_exception(exc)
            reason = f"the engine loop is not running (it stopped after an internal error: {exc})"
        finally:
            self._halt(reason)

    def _halt(self, reason: str) -> None:
        """The loop cannot go on: refuse new jobs, fail every waiting and running one."""
        with self._cond:
            self._stopped = reason
            waiting, self._waiting = list(self._waiting), deque()
            self.metrics.queue.set(0)
        self._fail_running(reason, 503, release=False)
        for job in waiting:
            self._fail(job, reason, 503)

    def _recover(self, exc: Exception, message: str) -> None:
        """After a crash in a round: fail its jobs and start over with a fresh decoder (raises if none can be built)."""
        self._log_exception(exc)
        self._fail_running(f"{message}: {exc}", 500, release=False)
        self.decoder = self.make_decoder()

    def _purge_cancelled(self) -> None:
        """Drop waiting jobs whose client went away (call with the lock held)."""
        if any(job.cancelled for job in self._waiting):
            kept = deque(job for job in self._waiting if not job.cancelled)
            for _ in range(len(self._waiting) - len(kept)):
                self.metrics.record_outcome("cancelled")
            self._waiting = kept
            self.metrics.queue.set(len(kept))

    def _step_loop(self) -> bool:
        """Admit, drop, run one round; False when the loop should end."""
        admitted = self._next_jobs()
        if admitted is None:
            return False
        try:
            for job in admitted:
                self._admit(job)
            self._drop_cancelled()
            if self._draining and time.perf_counter() > self._drain_deadline:
                self._fail_running("the server shut down before this request finished", 503)
            if self.decoder.running:
                self._round()
        except Exception as exc:  # noqa: BLE001 - a bug outside a round: fail the batch, keep serving
            self._recover(exc, "internal error in the engine loop")
        return True

    def _next_jobs(self) -> list[Job] | None:
        """Jobs to admit now (blocking while idle); None when the loop should end."""
        with self._cond:
            self._purge_cancelled()
            while not self._waiting and not self.decoder.running:
                if self._draining:
                    return None
                self._cond.wait()
                self._purge_cancelled()
            if self._draining:
                return []  # begin_drain failed the waiting jobs; nothing is admitted from now on
            room = self.config.max_batch - len(self.decoder.running)
            jobs = [self._waiting.popleft() for _ in range(min(room, len(self._waiting)))]
            self.metrics.queue.set(len(self._waiting))
            return jobs

    def _admit(self, job: Job) -> None:
        if job.cancelled:
            self.metrics.record_outcome("cancelled")
            return
        if self._draining:  # taken from the queue just before the drain began
            self._fail(job, "the server is shutting down", 503)
            return
        try:
            prompt = self._target_prompt(job)
            seq = self.decoder.add(prompt, job.cfg, job.stop, job.speculate)
        except D3DError as err:
            self._fail(job, str(err), 400)
            return
        except Exception as exc:  # noqa: BLE001 - one bad prefill must not take the server down
            self._log_exception(exc)
            self._fail(job, f"internal error during prefill: {exc}", 500)
            return
        self.metrics.prompt_tokens.inc(seq.prompt_len)
        job.first_token_s = time.perf_counter()
        self.metrics.ttft.observe(job.first_token_s - job.submitted_s)
        if not seq.finished:
            self._jobs[seq.ident] = job
        self._emit(job, seq, seq.generated)
        self.metrics.running.set(len(self.decoder.running))

    def _target_prompt(self, job: Job) -> torch.Tensor:
        """The prompt [1, k] the target prefills: the job's own, or its selective-prefill reduction
        (with the default selector, which needs no drafter: the decoder's may be None)."""
        if job.prefill is None:
            return job.prompt
        reduced = reduce_for_target(self.decoder.drafter, job.prompt, job.prefill.protected,
                                    PrefillConfig(keep=job.prefill.keep, stop_ids=job.prefill.stop_ids))
        return reduced.target_ids

    def _drop_cancelled(self) -> None:
        for seq in self.decoder.running:
            if self._jobs[seq.ident].cancelled:
                self.decoder.remove(seq)
                del self._jobs[seq.ident]
                self.metrics.record_outcome("cancelled")
        self.metrics.running.set(len(self.decoder.running))

    def _round(self) -> None:
        try:
            out, rnd = self.decoder.step()
        except Exception as exc:  # noqa: BLE001 - fail this batch, keep serving
            self._recover(exc, "internal error during decoding")
            return
        self.metrics.record_round(rnd.appended)
        for seq, tokens in out:
            job = self._jobs[seq.ident]
            self._emit(job, seq, tokens)
            if seq.finished:
                del self._jobs[seq.ident]
        self.metrics.running.set(len(self.decoder.running))

    def _emit(self, job: Job, seq: Sequence, tokens: list[int]) -> None:
        if tokens:
            self.metrics.generation_tokens.inc(len(tokens))
            job.deliver(Tokens(list(tokens)))
        if seq.finished:
            s = seq.stats
            self.metrics.record_outcome("finished")
            job.deliver(Done(s.stop_reason or "max_new_tokens", job.prompt.shape[1], s.new_tokens, s.rounds, s.tau,
                             seq.speculate, seq.prompt_len))

    def _fail_running(self, message: str, status: int, release: bool = True) -> None:
        """Fail every running job; `release` False after a crash (the decoder is then replaced)."""
        if release:
            for seq in self.decoder.running:
                self.decoder.remove(seq)
        jobs, self._jobs = list(self._jobs.values()), {}
        for job in jobs:
            self._fail(job, message, status)
        self.metrics.running.set(0)

    def _fail(self, job: Job, message: str, status: int) -> None:
        self.metrics.record_outcome("error")
        job.deliver(Failed(message, status))

    @staticmethod
    def _log_exception(exc: Exception) -> None:
        print(f"[d3d serve] {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
