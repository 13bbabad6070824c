"""The app in process (Starlette's test client, a real engine loop on a tiny model): errors that
escape a handler, a lone surrogate, and an engine loop that stopped all answer in OpenAI's error
shape; nothing is a bare 500."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

import d3d.serving.app as app_module
from d3d.inference.batch_engine import BatchDecoder
from d3d.models.decoder import load_decoder
from d3d.serving.app import create_app
from d3d.serving.engine_loop import EngineConfig, EngineLoop
from d3d.serving.metrics import ServingMetrics
from d3d.serving.validation import ServedModel
from tests.conftest import save_tiny_tokenizer

GOOD = {"messages": [{"role": "user", "content": "w9 w10"}], "max_tokens": 3, "temperature": 0}


def error_of(response) -> dict:
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == response.status_code
    return error


@pytest.fixture
def served(tiny_llama_dir, tmp_path) -> ServedModel:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(save_tiny_tokenizer(tmp_path))
    return ServedModel("tiny", tokenizer, 512, (2,), 97)


def make_app(served: ServedModel, make_decoder) -> TestClient:
    engine = EngineLoop(make_decoder, EngineConfig(max_batch=2, max_queue=2))
    return TestClient(create_app(served, engine, ServingMetrics()), raise_server_exceptions=False)


def test_an_error_that_escapes_a_handler_is_a_500_in_the_openai_shape(served, tiny_llama_dir, monkeypatch):
    target = load_decoder(tiny_llama_dir)

    def broken(*args, **kw):
        raise RuntimeError("kaput")

    monkeypatch.setattr(app_module, "generation_config", broken)
    with make_app(served, lambda: BatchDecoder(target, None, max_batch=2)) as client:
        r = client.post("/v1/chat/completions", json=GOOD)
    assert r.status_code == 500 and "kaput" in error_of(r)["message"]


def test_a_lone_surrogate_is_a_400_that_says_so(served, tiny_llama_dir):
    target = load_decoder(tiny_llama_dir)
    with make_app(served, lambda: BatchDecoder(target, None, max_batch=2)) as client:
        for path, body in (("/v1/chat/completions", b'{"messages": [{"role": "user", "content": "a\\ud800"}]}'),
                           ("/v1/completions", b'{"prompt": "\\udfff b", "max_tokens": 2}'),
                           ("/v1/completions", b'{"prompt": "w9", "stop": ["\\ud800"]}')):
            r = client.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400 and "surrogate" in error_of(r)["message"], r.text
        assert client.post("/v1/chat/completions", json=GOOD).status_code == 200


def test_after_the_engine_loop_stopped_requests_get_503(served, tiny_llama_dir, monkeypatch):
    target = load_decoder(tiny_llama_dir)
    builds = {"n": 0}

    def make_decoder() -> BatchDecoder:
        builds["n"] += 1
        if builds["n"] > 1:
            raise RuntimeError("cannot rebuild")
        return BatchDecoder(target, None, max_batch=2)

    def broken_step(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(BatchDecoder, "step", broken_step)
    with make_app(served, make_decoder) as client:
        first = client.post("/v1/chat/completions", json=GOOD)
        assert first.status_code == 500 and "boom" in error_of(first)["message"]
        second = client.post("/v1/chat/completions", json=GOOD)
        assert second.status_code == 503 and "not running" in error_of(second)["message"]
        assert client.get("/health").status_code == 503
