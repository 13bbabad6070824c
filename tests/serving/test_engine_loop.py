"""The engine loop without HTTP: events in order, a crashing round fails only its jobs, a bad
prefill fails only its job, a full queue raises, draining fails waiting jobs and admits nothing,
cancelled waiting jobs leave the queue, a loop that cannot go on fails everyone and refuses new
jobs, and selective prefill shortens the prompt the target reads (with a drafter or without one)."""

from __future__ import annotations

import threading

import pytest
import torch

from d3d.inference.batch_engine import BatchDecoder
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from d3d.serving.engine_loop import (
    Done, EngineConfig, EngineLoop, Failed, Job, PrefillRequest, QueueFull, ShuttingDown, Tokens,
)
from tests.helpers import MASK_ID


class Sink:
    def __init__(self) -> None:
        self.events, self.done = [], threading.Event()

    def __call__(self, event) -> None:
        self.events.append(event)
        if not isinstance(event, Tokens):
            self.done.set()

    def tokens(self) -> list[int]:
        return [t for e in self.events if isinstance(e, Tokens) for t in e.ids]


def job(sink: Sink, n: int = 6, prompt_len: int = 4) -> Job:
    cfg = GenerationConfig(max_new_tokens=n)
    return Job(torch.arange(5, 5 + prompt_len).view(1, -1), cfg, StopChecker(n), False, sink)


@pytest.fixture
def loop(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    engine = EngineLoop(lambda: BatchDecoder(target, None, max_batch=2), EngineConfig(max_batch=2, max_queue=1))
    yield engine
    engine.close()


def test_events_then_done(loop):
    loop.start()
    sink = Sink()
    loop.submit(job(sink))
    assert sink.done.wait(30)
    assert len(sink.tokens()) == 6 and isinstance(sink.events[-1], Done)
    assert sink.events[-1].completion_tokens == 6 and sink.events[-1].reason == "max_new_tokens"


def test_a_crashing_round_fails_its_jobs_and_the_loop_goes_on(loop, monkeypatch):
    calls = {"n": 0}
    real_step = BatchDecoder.step

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom")
        return real_step(self)

    monkeypatch.setattr(BatchDecoder, "step", flaky)
    loop.start()
    first, second = Sink(), Sink()
    loop.submit(job(first))
    assert first.done.wait(30)
    assert isinstance(first.events[-1], Failed) and "boom" in first.events[-1].message
    loop.submit(job(second))
    assert second.done.wait(30) and isinstance(second.events[-1], Done)


def test_a_prompt_beyond_the_context_fails_only_its_job(loop):
    loop.start()
    bad, good = Sink(), Sink()
    loop.submit(job(bad, prompt_len=600))  # the tiny model's context is 512
    assert bad.done.wait(30)
    assert isinstance(bad.events[-1], Failed) and bad.events[-1].status == 400
    loop.submit(job(good))
    assert good.done.wait(30) and isinstance(good.events[-1], Done)


def test_full_queue_and_draining(loop):
    waiting = Sink()
    loop.submit(job(waiting))  # not started: it waits
    with pytest.raises(QueueFull):
        loop.submit(job(Sink()))
    loop.begin_drain()
    assert isinstance(waiting.events[-1], Failed) and waiting.events[-1].status == 503
    with pytest.raises(ShuttingDown):
        loop.submit(job(Sink()))


def test_cancelled_waiting_jobs_do_not_fill_the_queue(loop):
    gone = job(Sink())
    loop.submit(gone)  # not started: it waits, and fills the one-job queue
    gone.cancel()
    loop.submit(job(Sink()))  # no QueueFull: the cancelled job no longer counts
    assert loop.queue_depth == 1
    assert loop.metrics.requests.labels("cancelled")._value.get() == 1


def test_a_loop_that_cannot_go_on_fails_everyone_and_refuses_new_jobs(tiny_llama_dir, monkeypatch):
    target = load_decoder(tiny_llama_dir)
    builds = {"n": 0}

    def make_decoder() -> BatchDecoder:
        builds["n"] += 1
        if builds["n"] > 1:
            raise RuntimeError("no memory for a fresh decoder")
        return BatchDecoder(target, None, max_batch=1)

    def broken_step(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(BatchDecoder, "step", broken_step)
    engine = EngineLoop(make_decoder, EngineConfig(max_batch=1, max_queue=2))
    running, waiting = Sink(), Sink()
    engine.submit(job(running))
    engine.submit(job(waiting))  # waits behind the running job (max batch 1)
    engine.start()
    assert running.done.wait(30) and waiting.done.wait(30)
    assert isinstance(running.events[-1], Failed) and "boom" in running.events[-1].message
    assert isinstance(waiting.events[-1], Failed) and waiting.events[-1].status == 503
    assert "no memory" in waiting.events[-1].message
    with pytest.raises(ShuttingDown, match="not running"):
        engine.submit(job(Sink()))
    assert not engine.alive
    engine.close()


def test_nothing_is_admitted_once_the_drain_began(tiny_llama_dir, monkeypatch):
    """Both jobs leave the queue together; the drain begins while the first is prefilled: the second
    must not join the batch."""
    target = load_decoder(tiny_llama_dir)
    entered, release = threading.Event(), threading.Event()
    real_add = BatchDecoder.add

    def slow_add(self, prompt, *args, **kw):
        entered.set()
        release.wait(30)
        return real_add(self, prompt, *args, **kw)

    monkeypatch.setattr(BatchDecoder, "add", slow_add)
    engine = EngineLoop(lambda: BatchDecoder(target, None, max_batch=2), EngineConfig(max_batch=2, max_queue=2))
    first, second = Sink(), Sink()
    engine.submit(job(first))
    engine.submit(job(second))
    engine.start()
    assert entered.wait(30)
    engine.begin_drain()
    release.set()
    assert first.done.wait(30) and second.done.wait(30)
    assert isinstance(second.events[-1], Failed) and second.events[-1].status == 503
    assert second.tokens() == []
    engine.close()


def test_selective_prefill_reads_part_of_the_prompt(tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target)
    engine = EngineLoop(lambda: BatchDecoder(target, drafter, max_batch=2), EngineConfig(max_batch=2, max_queue=2))
    engine.start()
    full, reduced = Sink(), Sink()
    protected = torch.zeros(64, dtype=torch.bool)
    protected[-4:] = True  # the "instruction"
    engine.submit(job(full, prompt_len=64))
    engine.submit(Job(torch.arange(5, 69).view(1, -1), GenerationConfig(max_new_tokens=6), StopChecker(6), True, reduced,
                      prefill=PrefillRequest(0.5, protected)))
    assert full.done.wait(30) and reduced.done.wait(30)
    done_full, done_reduced = full.events[-1], reduced.events[-1]
    assert isinstance(done_reduced, Done) and done_reduced.prompt_tokens == 64
    assert done_full.prompt_read == 64 and 4 <= done_reduced.prompt_read <= 32
    assert len(reduced.tokens()) == 6
    engine.close()


def test_selective_prefill_without_a_drafter_decodes_the_reduced_prompt_plainly(tiny_llama_dir):
    """A plain-decoding engine (no drafter) no longer refuses the job: the target prefills the
    lexical selection, instruction included, and decodes it as plain decoding of those tokens would."""
    target = load_decoder(tiny_llama_dir)
    seen = []

    class Recording(BatchDecoder):
        def add(self, prompt, *args, **kw):
            seen.append(prompt[0].tolist())
            return super().add(prompt, *args, **kw)

    engine = EngineLoop(lambda: Recording(target, None, max_batch=2), EngineConfig(max_batch=2, max_queue=2))
    engine.start()
    sink = Sink()
    prompt = torch.arange(5, 69).view(1, -1)
    protected = torch.zeros(64, dtype=torch.bool)
    protected[-4:] = True  # the "instruction"
    engine.submit(Job(prompt, GenerationConfig(max_new_tokens=6), StopChecker(6), True, sink,
                      prefill=PrefillRequest(0.5, protected)))
    assert sink.done.wait(30)
    engine.close()
    done = sink.events[-1]
    assert isinstance(done, Done), done
    [read] = seen
    assert done.prompt_tokens == 64 and done.prompt_read == len(read) <= 32 and not done.speculative
    assert read[-4:] == prompt[0, -4:].tolist() and set(read) < set(prompt[0].tolist())
    cfg = GenerationConfig(max_new_tokens=6)
    want = [t for c in autoregressive_decode(target, torch.tensor([read]), cfg, StopChecker(6), DecodeStats("ar")) for t in c]
    assert sink.tokens() == want


def test_selective_prefill_scores_with_the_default_selector_and_the_jobs_stopwords(tiny_llama_dir, monkeypatch):
    """The engine selects with lexical (the default) and hands it the request's stopword ids."""
    from d3d.serving import engine_loop

    seen = []
    real = engine_loop.reduce_for_target
    monkeypatch.setattr(engine_loop, "reduce_for_target", lambda *a: seen.append(a[3]) or real(*a))
    target = load_decoder(tiny_llama_dir)
    drafter = Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target)
    engine = EngineLoop(lambda: BatchDecoder(target, drafter, max_batch=2), EngineConfig(max_batch=2, max_queue=2))
    engine.start()
    sink = Sink()
    protected = torch.zeros(64, dtype=torch.bool)
    protected[-4:] = True
    engine.submit(Job(torch.arange(5, 69).view(1, -1), GenerationConfig(max_new_tokens=2), StopChecker(2), True, sink,
                      prefill=PrefillRequest(0.5, protected, frozenset({7, 8}))))
    assert sink.done.wait(30) and isinstance(sink.events[-1], Done)
    engine.close()
    assert [(c.select, c.stop_ids, c.keep) for c in seen] == [("lexical", frozenset({7, 8}), 0.5)]
