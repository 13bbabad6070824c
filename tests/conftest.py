"""Shared fixtures: tiny random Llama-family checkpoints built from configs (no downloads)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

os.environ.setdefault("D3D_CHECK_DRAFTS", "1")  # verification checks the draft contract (q > 0) in every test

TINY = dict(
    vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-6,
)


def tiny_config(kind: str = "llama", **overrides):
    kw = {**TINY, **overrides}
    if kind == "llama":
        return LlamaConfig(tie_word_embeddings=True, **kw)
    if kind == "qwen3":
        return Qwen3Config(head_dim=16, tie_word_embeddings=False, **kw)
    raise ValueError(kind)


def save_tiny_model(path: Path, kind: str = "llama", seed: int = 0, **overrides) -> Path:
    """Save a random tiny causal LM in Hugging Face format and return its directory."""
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_config(kind, **overrides))
    # Spread the output distribution so argmax decisions are well separated (no float ties).
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4.0) if p.dim() == 2 else None
    model.save_pretrained(path)
    return path


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """Tiny models gain nothing from a second intra-op thread, and when another process holds the
    other core, OpenMP threads spin and small ops cost milliseconds. Tests that need more threads
    (the async worker's) set their own."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny_llama"), "llama")


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny_qwen3"), "qwen3")


@pytest.fixture(params=["tiny_llama_dir", "tiny_qwen3_dir"])
def target_dir(request) -> Path:
    """Each tiny target in turn (a test using it runs once per architecture)."""
    return request.getfixturevalue(request.param)


def pytest_collection_modifyitems(config, items):
    if os.environ.get("D3D_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set D3D_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def save_tiny_tokenizer(path: Path, vocab_size: int = TINY["vocab_size"]) -> Path:
    """Save a word-level tokenizer with `vocab_size` ids and a ChatML-like template into `path`.

    Ids: 0 <unk>, 1 <|im_start|>, 2 <|im_end|> (eos, as in the tiny configs), 3 <pad>, 4 <mask>,
    then the words "user", "assistant", "system" and w8 .. w{vocab_size-1} ("w" + their id).
    """
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<|im_start|>", "<|im_end|>", "<pad>", "<mask>"]
    words = ["user", "assistant", "system"]
    vocab = {tok: i for i, tok in enumerate(specials + words)}
    vocab.update({f"w{i}": i for i in range(len(vocab), vocab_size)})
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", eos_token="<|im_end|>", pad_token="<pad>",
        mask_token="<mask>", additional_special_tokens=["<|im_start|>"], chat_template=TINY_CHAT_TEMPLATE,
    )
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_chat_model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama with a tiny tokenizer: `load_target(str(dir))` works end to end."""
    path = save_tiny_model(tmp_path_factory.mktemp("tiny_chat"), "llama")
    return save_tiny_tokenizer(path)
