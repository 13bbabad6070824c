"""The drafting worker process: real concurrency, and a synchronous fallback when it dies.

Each test starts a worker (spawn: a fresh interpreter importing torch, a few seconds here)."""

from __future__ import annotations

import os
import signal
from functools import partial

import pytest
import torch

from d3d.inference.async_drafting import InlineBackend, ProcessBackend, SuccessorDrafter, WorkerDied
from d3d.inference.async_engine import AsyncConfig, AsyncDecodeStats, AsyncRunner, async_speculative_decode
from d3d.inference.engine import GenerationConfig
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.inference.successors import Budget
from d3d.models.decoder import load_decoder
from d3d.models.drafter import Drafter
from tests.helpers import MASK_ID, greedy, prompt
from tests.inference.sources import ScriptedDrafter


@pytest.fixture(scope="module")
def target(tiny_llama_dir):
    return load_decoder(tiny_llama_dir)


def runner_for(target, remote, local, budget="2,2") -> AsyncRunner:
    config = AsyncConfig(budget=budget, backend="process", draft_threads=1, target_threads=1)
    return AsyncRunner(target, remote, local, config, log=lambda message: None)


def test_worker_drafts_concurrently_and_losslessly(target, tiny_llama_dir):
    """Scripted hits through the pipe; two generations share one worker; passes overlap verification."""
    p, max_new = prompt(1), 40
    want = greedy(target, p, max_new)
    wrong = {j: j % 2 == 0 for j in range(p.shape[1] + 1, 200, 3)}
    remote = partial(ScriptedDrafter, p[0].tolist() + want, 5, 97, wrong)
    runner = runner_for(target, remote, remote)
    try:
        for _ in range(2):
            stats = AsyncDecodeStats("async")
            got = [t for c in runner.stream(p, GenerationConfig(max_new_tokens=max_new), StopChecker(max_new), stats) for t in c]
            assert got == want and stats.fallback is None
            assert stats.target_threads == 1  # logged for the agreement check's replay (the split, not all cores)
            assert stats.hits > 0 and stats.misses > 0 and stats.backend == "process"
            passes = [e for e in stats.timeline if e["kind"] == "successors"]
            verifies = {e["round"]: e for e in stats.timeline if e["kind"] == "verify"}
            # the worker's pass for round r starts before the target finishes verifying round r
            assert any(e["start"] < verifies[e["round"]]["end"] for e in passes if e["round"] in verifies)
            assert 0 <= stats.hidden_share <= 1 and stats.overlapped_rounds > 0
    finally:
        runner.close()


def test_worker_process_samples_exactly_what_the_inline_backend_samples(target):
    """Same seed, same sampled output and hits: q crosses the pipe unchanged and the worker draws
    its random numbers as the in-process state machine does."""
    p = prompt(4)
    wrong = {j: j % 3 == 0 for j in range(200) if j % 4 in (1, 2)}
    remote = partial(ScriptedDrafter, p[0].tolist() + greedy(target, p, 40), 5, 97, wrong)
    runner = runner_for(target, remote, remote)
    sampling = SamplingConfig(temperature=1.5, top_k=4)
    hits = 0
    try:
        for seed in range(3):
            cfg = GenerationConfig(max_new_tokens=30, sampling=sampling, seed=seed)
            there, here = AsyncDecodeStats("async"), AsyncDecodeStats("async")
            got = [t for c in runner.stream(p, cfg, StopChecker(30), there) for t in c]
            inline = InlineBackend(SuccessorDrafter(remote()))
            want = [t for c in async_speculative_decode(target, inline, p, cfg, StopChecker(30), here, Budget(2, 2)) for t in c]
            assert there.backend == "process" and there.budget == here.budget == "C=2,F=2"
            assert (got, there.hits, there.misses) == (want, here.hits, here.misses)
            hits += here.hits
    finally:
        runner.close()
    assert hits > 0  # successor branches were used


def test_killed_worker_falls_back_to_synchronous_drafting(target, tiny_llama_dir):
    p, max_new = prompt(2), 40
    want = greedy(target, p, max_new)
    remote = partial(Drafter.from_base, tiny_llama_dir, [0, 1], 4, MASK_ID, "fp")
    local = lambda: Drafter.from_base(tiny_llama_dir, [0, 1], 4, MASK_ID, "fp", target=target)  # noqa: E731
    runner = runner_for(target, remote, local)
    try:
        stats = AsyncDecodeStats("async")
        got, pid = [], None
        for chunk in runner.stream(p, GenerationConfig(max_new_tokens=max_new), StopChecker(max_new), stats):
            got += chunk
            if len(got) >= 5 and pid is None:
                pid = runner.backend().pid
                os.kill(pid, signal.SIGKILL)
        assert got == want
        assert stats.fallback is not None and "exited" in stats.fallback
        assert stats.rounds > 5
        # the next generation starts a fresh worker
        again = AsyncDecodeStats("async")
        out = [t for c in runner.stream(p, GenerationConfig(max_new_tokens=12), StopChecker(12), again) for t in c]
        assert out == want[:12] and again.fallback is None
    finally:
        runner.close()


def test_failing_drafter_in_the_worker_falls_back(target):
    p, max_new = prompt(3), 30
    want = greedy(target, p, max_new)
    reference = p[0].tolist() + want
    remote = partial(ScriptedDrafter, reference, 4, 97, {j: True for j in range(200)}, 6)  # raises on pass 7
    local = partial(ScriptedDrafter, reference, 4, 97, {j: True for j in range(200)})
    runner = runner_for(target, remote, local)
    try:
        stats = AsyncDecodeStats("async")
        got = [t for c in runner.stream(p, GenerationConfig(max_new_tokens=max_new), StopChecker(max_new), stats) for t in c]
        assert got == want
        assert "scripted drafter failure" in stats.fallback
        assert stats.hits >= 2  # hits before the failure, none after (the fallback drafts synchronously)
    finally:
        runner.close()


def test_worker_that_cannot_start_falls_back_and_says_why(target, tiny_llama_dir):
    broken = partial(Drafter.from_base, "/no/such/model", [0], 4, MASK_ID, "fp")
    with pytest.raises(WorkerDied, match="could not load"):
        ProcessBackend(broken, 1)
    p, max_new = prompt(4), 12
    local = partial(Drafter.from_base, tiny_llama_dir, [0, 1], 4, MASK_ID, "fp")
    runner = runner_for(target, broken, local)
    for _ in range(2):  # the second generation does not try to start a worker again
        stats = AsyncDecodeStats("async")
        got = [t for c in runner.stream(p, GenerationConfig(max_new_tokens=max_new), StopChecker(max_new), stats) for t in c]
        assert got == greedy(target, p, max_new) and "no/such/model" in stats.fallback
        assert stats.budget == "none" and stats.successor_passes == 0
