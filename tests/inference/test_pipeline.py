"""Loading a target and a drafter end to end, with the errors users meet."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from d3d.cli import EXIT_BAD_INPUT, main
from d3d.errors import D3DError
from d3d.inference.draft_length import Calibration
from d3d.inference.engine import GenerationConfig
from d3d.inference.pipeline import Pipeline, load_drafter, load_target
from d3d.models import hub
from d3d.models.drafter import Drafter
from tests.conftest import save_tiny_model, save_tiny_tokenizer


def test_generate_sync_equals_ar_on_a_chat_model(tiny_chat_model_dir):
    pipe = Pipeline.load(str(tiny_chat_model_dir), block_size=4)
    ids = pipe.target.encode_chat("w10 w11 w12")
    assert ids.shape[1] > 3  # the chat template wrapped the message
    ar, _ = pipe.generate(ids, "ar", GenerationConfig(max_new_tokens=20))
    sync, stats = pipe.generate(ids, "sync", GenerationConfig(max_new_tokens=20))
    assert ar == sync and stats.rounds >= 1
    assert "UNTRAINED" in pipe.drafter.description and not pipe.drafter.trained


def test_prompt_longer_than_context_is_a_clear_error(tmp_path, capsys):
    d = save_tiny_tokenizer(save_tiny_model(tmp_path / "m", "llama", max_position_embeddings=16))
    capsys.readouterr()
    code = main(["generate", "--prompt", " ".join(["w20"] * 40), "--target", str(d), "--mode", "ar"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "context is 16" in err and err.count("\n") == 1


def test_drafter_for_another_tokenizer_is_rejected(tiny_chat_model_dir, tmp_path, capsys):
    target = load_target(str(tiny_chat_model_dir))
    drafter = Drafter.from_base(tiny_chat_model_dir, [0], 4, 4, "0123456789abcdef", target=target.model)
    drafter.save_pretrained(tmp_path / "d")
    with pytest.raises(D3DError, match="different tokenizer"):
        load_drafter(target, str(tmp_path / "d"))
    code = main(["generate", "--prompt", "w9", "--target", str(tiny_chat_model_dir), "--drafter", str(tmp_path / "d")])
    assert code == EXIT_BAD_INPUT and "different tokenizer" in capsys.readouterr().err


def test_generate_command_streams_and_reports(tiny_chat_model_dir, capsys):
    code = main(["generate", "--prompt", "w9 w10", "--target", str(tiny_chat_model_dir), "--max-new-tokens", "12",
                 "--block-size", "4", "--compare", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert "tau" in out and "identical output: yes" in out
    assert out.strip().splitlines()[-1].startswith("{")


def test_unsupported_architecture_runs_ar_through_transformers_only(tmp_path, capsys):
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=2, n_positions=128, eos_token_id=2, bos_token_id=1)
    GPT2LMHeadModel(cfg).save_pretrained(tmp_path / "gpt2")
    d = save_tiny_tokenizer(tmp_path / "gpt2")
    capsys.readouterr()
    target = load_target(str(d))
    assert target.model is None and "gpt2" in target.unsupported
    pipe = Pipeline(target)
    tokens, stats = pipe.generate(target.encode_chat("w9"), "ar", GenerationConfig(max_new_tokens=5))
    assert 1 <= len(tokens) <= 5 and stats.new_tokens == len(tokens)
    code = main(["generate", "--prompt", "w9", "--target", str(d), "--mode", "sync"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "needs the native runtime" in err and "gpt2" in err


def test_block_size_override_of_a_saved_drafter_warns_and_is_recorded(tiny_chat_model_dir, tmp_path, capsys):
    target = load_target(str(tiny_chat_model_dir))
    fingerprint = hub.tokenizer_fingerprint(target.tokenizer)
    Drafter.from_base(tiny_chat_model_dir, [0], 8, 4, fingerprint, target=target.model).save_pretrained(tmp_path / "d")
    same = Pipeline(target, str(tmp_path / "d"), block_size=8)
    _, stats = same.generate(target.encode_chat("w9"), "sync", GenerationConfig(max_new_tokens=6))
    assert stats.block_size_override is None and "warning" not in capsys.readouterr().err
    pipe = Pipeline(target, str(tmp_path / "d"), block_size=4)
    _, stats = pipe.generate(target.encode_chat("w9"), "sync", GenerationConfig(max_new_tokens=6))
    assert "--block-size overrides" in capsys.readouterr().err and pipe.drafter.drafter.block_size == 4
    assert stats.as_dict()["block_size_override"] == "trained with B=8, running with B=4"
    assert "overridden" in pipe.drafter.description


def test_a_half_dtype_on_a_cpu_without_it_is_warned_about_once(monkeypatch, capsys):
    from d3d.inference import pipeline

    cpu = torch.device("cpu")
    monkeypatch.setattr(pipeline, "_WARNED_SLOW_DTYPE", set())
    monkeypatch.setattr(pipeline, "cpu_has_native_bf16", lambda: False)
    assert pipeline.warn_slow_cpu_dtype(torch.bfloat16, cpu) and pipeline.warn_slow_cpu_dtype(torch.bfloat16, cpu)
    assert capsys.readouterr().err.count("bfloat16 on a CPU without native") == 1  # once per process
    assert not pipeline.warn_slow_cpu_dtype(torch.float32, cpu)
    assert not pipeline.warn_slow_cpu_dtype(torch.bfloat16, torch.device("cuda"))
    assert pipeline.default_dtype(cpu) == torch.float32  # what --dtype auto picks on such a CPU
    monkeypatch.setattr(pipeline, "cpu_has_native_bf16", lambda: True)
    assert not pipeline.warn_slow_cpu_dtype(torch.bfloat16, cpu) and pipeline.default_dtype(cpu) == torch.bfloat16
    assert capsys.readouterr().err == ""


def test_the_drafters_calibration_table_is_read_once_per_pipeline(tiny_chat_model_dir, tmp_path, monkeypatch):
    target = load_target(str(tiny_chat_model_dir))
    fingerprint = hub.tokenizer_fingerprint(target.tokenizer)
    Drafter.from_base(tiny_chat_model_dir, [0], 8, 4, fingerprint, target=target.model).save_pretrained(tmp_path / "d")
    reads = []
    load = Calibration.load
    monkeypatch.setattr(Calibration, "load", staticmethod(lambda path: reads.append(path) or load(path)))
    pipe = Pipeline(target, str(tmp_path / "d"), block_size=8)
    ids = target.encode_chat("w9")
    for mode in ("sync", "sync", "tree"):
        pipe.generate(ids, mode, GenerationConfig(max_new_tokens=6))
    assert len(reads) == 1  # not once per generation: acceptance.json is parsed when the pipeline first needs it
