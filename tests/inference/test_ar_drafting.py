"""Classic speculative decoding with an AR draft model: native (`ar-drafter`) and transformers
assisted generation (`hf-assisted`) both reproduce plain decoding exactly."""

from __future__ import annotations

import io
import json

import pytest
import torch

from d3d.errors import D3DError
from d3d.evaluation.bench import BenchConfig, run_bench
from d3d.inference.baselines import ar_drafter_hf_model, hf_generate
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_target
from d3d.inference.sampling import SamplingConfig
from d3d.models import hub
from d3d.models.attention import Rows
from d3d.models.drafter import Drafter

PROMPTS = ["w10 w11 w12 w13 w10 w11 w12", "w20 w30 w40", "user w50 w60 w77 w50 w60"]


def save_ar_drafter(target_dir, layers, path, objective: str = "ar"):
    target = load_target(str(target_dir), "cpu", torch.float32)
    drafter = Drafter.from_base(target_dir, layers, 16, 3, hub.tokenizer_fingerprint(target.tokenizer),
                                target=target.model)
    drafter.config.objective = objective
    drafter.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def drafters(tiny_chat_model_dir, tmp_path_factory):
    """An AR draft model equal to the target (all its layers) and a weak one (its first layer)."""
    root = tmp_path_factory.mktemp("ar_drafters")
    n = load_target(str(tiny_chat_model_dir), "cpu", torch.float32).model.spec.num_layers
    return {"full": save_ar_drafter(tiny_chat_model_dir, list(range(n)), root / "full"),
            "weak": save_ar_drafter(tiny_chat_model_dir, [0], root / "weak")}


def pipeline(model_dir, drafter, k=4) -> Pipeline:
    return Pipeline(load_target(str(model_dir), "cpu", torch.float32), ar_drafter_spec=str(drafter), ar_draft_tokens=k)


@pytest.mark.parametrize("which,k", [("full", 4), ("weak", 4), ("weak", 1), ("full", 7)])
def test_greedy_output_equals_plain_decoding(tiny_chat_model_dir, drafters, which, k):
    pipe = pipeline(tiny_chat_model_dir, drafters[which], k)
    cfg = GenerationConfig(max_new_tokens=30)
    for text in PROMPTS:
        ids = pipe.target.encode_chat(text)
        want, _ = pipe.generate(ids, "ar", cfg)
        got, stats = pipe.generate(ids, "ar-drafter", cfg)
        assert got == want
        if which == "full":  # the draft model is the target: every draft is accepted
            assert stats.rounds == -(-(len(got) - 1) // (k + 1))


def test_sampled_drafts_from_the_target_itself_are_always_accepted(tiny_chat_model_dir, drafters):
    """p == q after the same warping, so min(1, p/q) = 1 for every draft: a check that q is the
    draft model's warped distribution, the one the acceptance test needs."""
    pipe = pipeline(tiny_chat_model_dir, drafters["full"], 4)
    total = 0
    for seed in range(12):
        sampling = SamplingConfig(temperature=0.9, top_k=20, top_p=0.95)
        cfg = GenerationConfig(max_new_tokens=31, sampling=sampling, seed=seed)
        tokens, stats = pipe.generate(pipe.target.encode_chat(PROMPTS[seed % 3]), "ar-drafter", cfg)
        assert stats.rounds == -(-(len(tokens) - 1) // 5)  # every round but the last appends k + 1 = 5
        total += len(tokens)
    assert total > 60


def test_assisted_generation_model_matches_the_native_drafter(tiny_chat_model_dir, drafters):
    pipe = pipeline(tiny_chat_model_dir, drafters["weak"])
    hf = ar_drafter_hf_model(pipe.ar_drafter.drafter, pipe.target)
    ids = pipe.target.encode_chat(PROMPTS[0])
    with torch.no_grad():
        want = pipe.ar_drafter.drafter.model(Rows.clean(ids, 0))
        got = hf(ids).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    cfg = GenerationConfig(max_new_tokens=30)
    for text in PROMPTS:
        ids = pipe.target.encode_chat(text)
        plain, _ = pipe.generate(ids, "ar", cfg)
        tokens, stats = hf_generate(pipe.target, ids, cfg, assistant=hf, assistant_tokens=4)
        assert tokens == plain and stats.mode == "hf-assisted" and stats.rounds >= 1


def test_bench_runs_both_ar_drafter_modes_and_refuses_bad_setups(tiny_chat_model_dir, drafters, tmp_path):
    suite = tmp_path / "p.jsonl"
    suite.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    base = dict(suite=str(suite), target=str(tiny_chat_model_dir), max_new_tokens=12, device="cpu",
                out=str(tmp_path / "r.jsonl"), modes=("ar-drafter", "hf-assisted"))
    out = io.StringIO()
    summary = run_bench(BenchConfig(**base, ar_drafter=str(drafters["full"])), out)
    assert json.loads(out.getvalue().splitlines()[-1]) == summary
    for mode in ("ar-drafter", "hf-assisted"):
        assert summary[mode]["identical"] is True and summary[mode]["tau"] > 2
    with pytest.raises(D3DError, match="--ar-drafter"):
        run_bench(BenchConfig(**base), io.StringIO())
    block = save_ar_drafter(tiny_chat_model_dir, [0], tmp_path / "block", objective="diffusion")
    with pytest.raises(D3DError, match="not an AR draft model"):
        run_bench(BenchConfig(**{**base, "out": str(tmp_path / "r2.jsonl")}, ar_drafter=str(block)), io.StringIO())
