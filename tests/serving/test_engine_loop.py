"""The engine loop without HTTP: events in order, a crashing round fails only its jobs, a bad
prefill fails only its job, a full queue raises, draining fails waiting jobs."""

from __future__ import annotations

import threading

import pytest
import torch

from d3d.inference.batch_engine import BatchDecoder
from d3d.inference.engine import GenerationConfig
from d3d.inference.stopping import StopChecker
from d3d.models.decoder import load_decoder
from d3d.serving.engine_loop import Done, EngineConfig, EngineLoop, Failed, Job, QueueFull, ShuttingDown, Tokens


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
