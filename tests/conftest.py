"""Shared fixtures: tiny random Llama-family checkpoints built from configs (no downloads)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen3Config

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


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny_llama"), "llama")


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny_qwen3"), "qwen3")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("D3D_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow test: set D3D_SLOW=1 to run")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
