"""Transformers baselines (`hf_generate`) reproduce native greedy decoding and its stopping rules."""

from __future__ import annotations

import pytest
import torch

from d3d.errors import D3DError
from d3d.inference.baselines import hf_generate
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_target
from d3d.inference.sampling import SamplingConfig

PROMPTS = ["w10 w11 w12 w13 w10 w11 w12", "w20 w30 w40", "user w50 w60 w77 w50 w60"]


@pytest.fixture(scope="module")
def pipe(tiny_chat_model_dir):
    return Pipeline(load_target(str(tiny_chat_model_dir), "cpu", torch.float32))


@pytest.mark.parametrize("prompt_lookup", [0, 10])
def test_greedy_equals_native_ar(pipe, prompt_lookup):
    cfg = GenerationConfig(max_new_tokens=32)
    for text in PROMPTS:
        ids = pipe.target.encode_chat(text)
        want, _ = pipe.generate(ids, "ar", cfg)
        got, stats = hf_generate(pipe.target, ids, cfg, prompt_lookup)
        assert got == want
        assert stats.new_tokens == len(got) and stats.stop_reason == "max_new_tokens"
        assert stats.mode == ("pld" if prompt_lookup else "hf")
        assert stats.rounds >= 1 and stats.total_s > 0 and stats.prefill_s > 0
        if prompt_lookup:
            assert stats.tau >= 1 and stats.rounds <= len(got) - 1
        else:
            assert stats.tau == 1.0 and stats.rounds == len(got) - 1


def test_prompt_lookup_accepts_repeats(pipe):
    """The tiny model repeats itself, so prompt lookup must accept more than one token per round."""
    cfg = GenerationConfig(max_new_tokens=40)
    taus = [hf_generate(pipe.target, pipe.target.encode_chat(t), cfg, 10)[1].tau for t in PROMPTS]
    assert max(taus) > 1.5


@pytest.mark.parametrize("prompt_lookup", [0, 10])
def test_eos_and_stop_string_cut_where_native_does(pipe, prompt_lookup, monkeypatch):
    ids = pipe.target.encode_chat(PROMPTS[1])
    reference, _ = pipe.generate(ids, "ar", GenerationConfig(max_new_tokens=40))
    cut = next(t for t in reference[3:] if t != reference[2])  # a token first seen mid-output
    monkeypatch.setattr(pipe.target, "eos_token_ids", (cut,), raising=False)
    cfg = GenerationConfig(max_new_tokens=40)
    want, want_stats = pipe.generate(ids, "ar", cfg)
    got, stats = hf_generate(pipe.target, ids, cfg, prompt_lookup)
    assert got == want and got[-1] == cut and stats.stop_reason == want_stats.stop_reason == "eos"
    assert stats.round_tokens == len(got) - 1  # prompt lookup's tokens after the eos are not counted
    monkeypatch.undo()
    cfg = GenerationConfig(max_new_tokens=40, stop_strings=(pipe.target.decode([cut]),))
    want, want_stats = pipe.generate(ids, "ar", cfg)
    got, stats = hf_generate(pipe.target, ids, cfg, prompt_lookup)
    assert got == want and stats.stop_reason == want_stats.stop_reason == "stop_string"
    assert stats.round_tokens == len(got) - 1


def test_sampling_is_seeded(pipe):
    cfg = GenerationConfig(max_new_tokens=12, sampling=SamplingConfig(temperature=1.0, top_k=20, top_p=0.9), seed=3)
    ids = pipe.target.encode_chat(PROMPTS[0])
    first, stats = hf_generate(pipe.target, ids, cfg, 10)
    again, _ = hf_generate(pipe.target, ids, cfg, 10)
    assert first == again and 1 <= len(first) <= 12 and stats.tau >= 1


def test_prompt_longer_than_context_is_a_d3d_error(pipe):
    ids = torch.full((1, 600), 10)
    with pytest.raises(D3DError, match="context"):
        hf_generate(pipe.target, ids, GenerationConfig(max_new_tokens=4))


def test_tau_counts_only_the_tokens_kept_after_a_stop(pipe):
    """Prompt lookup appends a run of repeats in one round; a stop string inside the run drops the
    round's later tokens, and tau must not count them."""
    ids = pipe.target.encode_chat(PROMPTS[1])
    reference, _ = pipe.generate(ids, "ar", GenerationConfig(max_new_tokens=40))
    cfg = GenerationConfig(max_new_tokens=40, stop_strings=(pipe.target.decode([reference[2]] * 5),))
    want, _ = pipe.generate(ids, "ar", cfg)
    got, stats = hf_generate(pipe.target, ids, cfg, 10)
    assert got == want and stats.stop_reason == "stop_string" and stats.rounds < len(got) - 1
    assert stats.round_tokens == len(got) - 1
