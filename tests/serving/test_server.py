"""`d3d serve` end to end: a real server process on a free loopback port, a tiny random model, the
real `openai` client (streaming and not, concurrent), every bad input the issue lists (refused
OpenAI fields, oversized bodies and prompts, unbounded stop lists, lone surrogates), 429 with
Retry-After on a full queue, disconnects freeing their slot whether tokens flow or not, selective
prefill (also in process, on an app whose engine has no drafter), metrics, and SIGTERM / Ctrl-C
shutdown with exit status 0.

One server is shared by the module (max batch 3, max queue 2, drain 0.3 s, bodies up to 64 KiB,
prompts up to 20000 characters); the SIGTERM test runs last and stops it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
import torch

from starlette.testclient import TestClient

from d3d.inference.batch_engine import BatchDecoder
from d3d.inference.engine import DecodeStats, GenerationConfig, autoregressive_decode
from d3d.inference.pipeline import load_target
from d3d.serving.app import create_app
from d3d.serving.engine_loop import EngineConfig, EngineLoop
from d3d.serving.metrics import ServingMetrics
from d3d.serving.validation import ServedModel
from tests.conftest import save_tiny_model, save_tiny_tokenizer

MAX_BATCH, MAX_QUEUE = 3, 2
CONTEXT = 4096  # long enough that a long request stays in flight for seconds (the tiny model is fast)
LONG = 3000  # max_tokens of a request that must still be running while the test looks
MAX_BODY, MAX_PROMPT_CHARS = 65536, 20000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model_dir: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        cmd = [sys.executable, "-m", "d3d.cli", "serve", "--target", str(model_dir), "--port", str(self.port),
               "--dtype", "float32", "--device", "cpu", "--max-batch", str(MAX_BATCH), "--max-queue", str(MAX_QUEUE),
               "--served-model-name", "tiny", "--drain-seconds", "0.3", "--max-body-bytes", str(MAX_BODY),
               "--max-prompt-chars", str(MAX_PROMPT_CHARS)]
        env = os.environ | {"OMP_NUM_THREADS": "1", "D3D_CACHE": str(log.parent / "cache")}  # pass costs measured here
        self.proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
        try:
            self.wait_ready()
        except BaseException:  # the fixture never yields, so nothing else would stop it
            self.stop()
            raise

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise AssertionError(f"server not ready:\n{self.log.read_text()}")

    def client(self, **kw) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key="none", **kw)

    def metric(self, name: str) -> float:
        for line in httpx.get(f"{self.url}/metrics").text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{") and line.split(" ")[0] == name.split(" ")[0]:
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    path = save_tiny_model(tmp_path_factory.mktemp("tiny_serve"), "llama", max_position_embeddings=CONTEXT)
    return save_tiny_tokenizer(path)


@pytest.fixture(scope="module")
def server(model_dir, tmp_path_factory):
    srv = Server(model_dir, tmp_path_factory.mktemp("serve") / "server.log")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def plain(model_dir):
    """Greedy plain decoding of a chat message in this process: the reference for the server's answers."""
    target = load_target(str(model_dir), "cpu", torch.float32)

    def answer(message: str, max_tokens: int) -> str:
        cfg = GenerationConfig(max_new_tokens=max_tokens)
        stop = target.stop_checker(cfg)
        ids = [t for c in autoregressive_decode(target.model, target.encode_chat(message), cfg, stop, DecodeStats("ar")) for t in c]
        return target.decode(ids)

    return answer


def words(*ids: int) -> str:
    return " ".join(f"w{i}" for i in ids)


def chat(client: openai.OpenAI, message: str, max_tokens: int = 24, **kw):
    return client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": message}],
                                          max_tokens=max_tokens, temperature=0, **kw)


def test_models_and_health(server):
    models = server.client().models.list()
    assert [m.id for m in models.data] == ["tiny"]
    health = httpx.get(f"{server.url}/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_chat_answer_equals_plain_greedy_decoding(server, plain):
    reply = chat(server.client(), words(10, 11, 12), max_tokens=30)
    assert reply.choices[0].message.content == plain(words(10, 11, 12), 30)
    assert reply.choices[0].message.content  # the tiny model says something (the test can fail)
    assert reply.usage.completion_tokens == 30 and reply.choices[0].finish_reason == "length"
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + 30
    assert reply.model_extra["d3d"]["rounds"] >= 1


def test_streaming_chat_joins_to_the_same_answer_with_usage(server):
    client = server.client()
    chunks = list(chat(client, words(20, 21), max_tokens=30, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == chat(client, words(20, 21), max_tokens=30).choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 30
    raw = httpx.post(f"{server.url}/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "w5"}], "max_tokens": 4, "stream": True}).text
    assert raw.rstrip().endswith("data: [DONE]") and '"usage"' not in raw  # usage only when asked


def test_completions_stop_string_is_cut(server):
    client = server.client()
    full = client.completions.create(model="tiny", prompt=words(30, 31, 32), max_tokens=20, temperature=0)
    text = full.choices[0].text
    stop = text.split()[3]  # a word the greedy answer produces
    cut = client.completions.create(model="tiny", prompt=words(30, 31, 32), max_tokens=20, temperature=0, stop=[stop])
    assert cut.choices[0].text == text[: text.index(stop)]
    assert cut.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="tiny", prompt=words(30, 31, 32), max_tokens=20, temperature=0,
                                         stop=stop, stream=True)
    assert "".join(c.choices[0].text for c in streamed if c.choices) == cut.choices[0].text


def test_concurrent_clients_each_get_their_own_answer(server):
    client = server.client()
    prompts = [words(40 + i, 50 + i) for i in range(5)]  # 3 run, 2 wait in the queue
    alone = [chat(client, p, 40).choices[0].message.content for p in prompts]
    with ThreadPoolExecutor(5) as pool:
        together = list(pool.map(lambda p: chat(client, p, 40).choices[0].message.content, prompts))
    assert together == alone
    assert len(set(alone)) > 1
    assert server.metric('d3d_batch_size_bucket{le="1.0"}') < server.metric('d3d_batch_size_bucket{le="3.0"}')


def test_seeded_sampling_is_reproducible(server):
    client = server.client()
    kw = dict(model="tiny", messages=[{"role": "user", "content": words(60)}], max_tokens=20, temperature=1.0, top_p=0.9)
    a = client.chat.completions.create(seed=7, **kw).choices[0].message.content
    b = client.chat.completions.create(seed=7, **kw).choices[0].message.content
    c = client.chat.completions.create(seed=8, **kw).choices[0].message.content
    unseeded = {client.chat.completions.create(**kw).choices[0].message.content for _ in range(3)}
    assert a == b and a != c
    assert len(unseeded) > 1  # no seed: fresh randomness per request


GOOD = {"model": "tiny", "messages": [{"role": "user", "content": "w9"}], "max_tokens": 4}
BAD_INPUTS = {
    "malformed JSON": b'{"messages": [',
    "invalid UTF-8": b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}',
    "wrong type": GOOD | {"temperature": "hot"},
    "negative temperature": GOOD | {"temperature": -0.5},
    "top_p zero": GOOD | {"top_p": 0},
    "negative max_tokens": GOOD | {"max_tokens": -3},
    "non-numeric max_tokens": GOOD | {"max_tokens": "many"},
    "max_tokens beyond context": GOOD | {"max_tokens": CONTEXT + 10},
    "empty messages": GOOD | {"messages": []},
    "unknown model": GOOD | {"model": "gpt-9"},
    "n above 1": GOOD | {"n": 2},
    "messages not a list": GOOD | {"messages": "hi"},
    "lone surrogate": b'{"messages": [{"role": "user", "content": "w1 \\ud800 w2"}], "max_tokens": 4}',
    "deeply nested JSON": b'{"messages": ' + b"[" * 20000 + b"]" * 20000 + b"}",
    "too many stop strings": GOOD | {"stop": [f"s{i}" for i in range(17)]},
    "a stop string too long": GOOD | {"stop": "x" * 257},
    "prompt text too long": GOOD | {"messages": [{"role": "user", "content": "w1 " * (MAX_PROMPT_CHARS // 3 + 1)}]},
    "prefill keep outside (0, 1]": GOOD | {"d3d_prefill_keep": 1.5},
    "prefill keep not a number": GOOD | {"d3d_prefill_keep": "most"},
}
REFUSED = {  # OpenAI / vLLM fields the server does not implement, set to something other than "off"
    "logprobs": True, "top_logprobs": 3, "tools": [{"type": "function", "function": {"name": "f"}}],
    "tool_choice": "required", "response_format": {"type": "json_object"}, "frequency_penalty": 0.5,
    "presence_penalty": -1, "repetition_penalty": 1.2, "logit_bias": {"3": 1}, "best_of": 2, "echo": True,
    "suffix": "end", "n": 3, "min_tokens": 4, "stop_token_ids": [5],
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_a_400_and_the_server_keeps_serving(server, case):
    body = BAD_INPUTS[case]
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(f"{server.url}/v1/chat/completions", content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"] and error["code"] == 400
    assert httpx.post(f"{server.url}/v1/chat/completions", json=GOOD).status_code == 200


@pytest.mark.parametrize("field", list(REFUSED))
def test_fields_the_server_does_not_implement_are_a_400_naming_them(server, field):
    r = httpx.post(f"{server.url}/v1/completions", json={"prompt": "w9", "max_tokens": 2, field: REFUSED[field]})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == field and f"'{field}' is not supported" in error["message"]


def test_fields_at_their_off_value_and_unknown_fields_are_accepted(server):
    off = {"logprobs": False, "top_logprobs": 0, "tools": [], "frequency_penalty": 0, "presence_penalty": 0.0,
           "logit_bias": {}, "response_format": {"type": "text"}, "n": 1, "best_of": 1, "echo": False,
           "user": "u", "frobnicate": [1]}
    r = httpx.post(f"{server.url}/v1/chat/completions", json=GOOD | off)
    assert r.status_code == 200, r.text


def test_an_oversized_body_is_a_413_before_it_is_read(server):
    big = json.dumps(GOOD | {"pad": "x" * MAX_BODY}).encode()
    r = httpx.post(f"{server.url}/v1/chat/completions", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "bytes" in r.json()["error"]["message"]

    def chunks():  # no Content-Length: the server counts while reading
        for _ in range(MAX_BODY // 4096 + 2):
            yield b" " * 4096

    r = httpx.post(f"{server.url}/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == 413


def test_errors_outside_the_routes_have_the_openai_shape(server):
    for r in (httpx.get(f"{server.url}/v1/nothing"), httpx.get(f"{server.url}/v1/completions")):
        assert r.status_code in (404, 405) and set(r.json()["error"]) == {"message", "type", "param", "code"}


def test_a_temperature_below_the_floor_is_greedy(server):
    client = server.client()
    greedy = chat(client, words(61, 62), 16).choices[0].message.content
    tiny = client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": words(61, 62)}],
                                          max_tokens=16, temperature=1e-40, seed=3).choices[0].message.content
    assert tiny == greedy


def test_selective_prefill_reads_part_of_a_long_prompt(server):
    context = " ".join(f"w{10 + i % 80}" for i in range(1200))
    message = f"{context}\n\nw3 w4"
    reply = httpx.post(f"{server.url}/v1/chat/completions", json=GOOD | {
        "messages": [{"role": "user", "content": message}], "max_tokens": 6, "temperature": 0,
        "d3d_prefill_keep": 0.3}).json()
    assert reply["usage"]["completion_tokens"] == 6
    assert reply["d3d"]["prompt_tokens_read"] <= 0.3 * reply["usage"]["prompt_tokens"]


def test_a_server_without_a_drafter_prefills_the_reduced_prompt(model_dir):
    """No drafter (plain decoding): `d3d_prefill_keep` is no longer refused; the target prefills the
    default (lexical) selection, which holds the final instruction and the template's tail."""
    target = load_target(str(model_dir), "cpu", torch.float32)
    model = target.native("serving")
    seen = []

    class Recording(BatchDecoder):
        def add(self, prompt, *args, **kw):
            seen.append(prompt[0].tolist())
            return super().add(prompt, *args, **kw)

    served = ServedModel("tiny", target.tokenizer, target.context_length, target.eos_token_ids, model.spec.vocab_size)
    engine = EngineLoop(lambda: Recording(model, None, MAX_BATCH), EngineConfig(MAX_BATCH, MAX_QUEUE))
    message = " ".join(f"w{10 + i % 80}" for i in range(1200)) + "\n\nw90 w91"
    with TestClient(create_app(served, engine, ServingMetrics())) as client:
        r = client.post("/v1/chat/completions", json=GOOD | {
            "messages": [{"role": "user", "content": message}], "max_tokens": 6, "temperature": 0,
            "d3d_prefill_keep": 0.3})
    assert r.status_code == 200, r.text
    reply, full = r.json(), target.encode_chat(message)[0].tolist()
    [read] = seen
    assert reply["usage"]["prompt_tokens"] == len(full) and reply["usage"]["completion_tokens"] == 6
    assert reply["d3d"]["prompt_tokens_read"] == len(read) <= 0.3 * len(full)
    instruction = full.index(90)  # w90 w91, then the template's tail
    assert read[-(len(full) - instruction):] == full[instruction:]


def test_prompt_longer_than_context_is_a_400(server):
    client = server.client(max_retries=0)
    with pytest.raises(openai.BadRequestError, match="context"):
        client.completions.create(model="tiny", prompt=[9] * (CONTEXT + 5), max_tokens=1)
    with pytest.raises(openai.BadRequestError, match="vocabulary"):
        client.completions.create(model="tiny", prompt=[10**6], max_tokens=1)


def long_stream(server, max_tokens: int = LONG) -> tuple[httpx.Client, object, object]:
    """Open a streaming request and read its first event; returns (client, open response, its line iterator).

    Keep the iterator: dropping it closes the response (a disconnect)."""
    client = httpx.Client(timeout=30)
    body = {"prompt": words(70, 71), "max_tokens": max_tokens, "temperature": 0, "stream": True, "ignore_eos": True,
            "d3d_speculative": False}  # one token per round: it stays in flight for a while
    response = client.send(client.build_request("POST", f"{server.url}/v1/completions", json=body), stream=True)
    assert response.status_code == 200
    lines = response.iter_lines()
    next(lines)
    return client, response, lines


def wait_for(condition, timeout: float = 5.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_full_queue_gets_429_with_retry_after_and_disconnects_free_slots(server):
    cancelled = server.metric('d3d_requests_total{outcome="cancelled"}')
    streams = [long_stream(server) for _ in range(MAX_BATCH)]
    waiting = [httpx.Client(timeout=30) for _ in range(MAX_QUEUE)]
    pending = [c.send(c.build_request("POST", f"{server.url}/v1/completions",
                                      json={"prompt": "w3", "max_tokens": LONG, "stream": True}), stream=True)
               for c in waiting]
    assert wait_for(lambda: httpx.get(f"{server.url}/health").json()["waiting"] == MAX_QUEUE)
    with pytest.raises(openai.RateLimitError) as err:
        chat(server.client(max_retries=0), "w1", 2)
    assert err.value.response.headers["retry-after"] == "1"
    for client, response, _ in streams + [(c, p, None) for c, p in zip(waiting, pending)]:
        response.close()
        client.close()
    health = lambda: httpx.get(f"{server.url}/health").json()  # noqa: E731
    assert wait_for(lambda: health()["running"] == 0 and health()["waiting"] == 0), health()
    assert server.metric('d3d_requests_total{outcome="cancelled"}') >= cancelled + MAX_BATCH
    assert chat(server.client(), "w2", 3).usage.completion_tokens == 3


def test_metrics_are_exported(server):
    chat(server.client(), "w4", 8)
    text = httpx.get(f"{server.url}/metrics").text
    for name in ("d3d_requests_total", "d3d_prompt_tokens_total", "d3d_generation_tokens_total", "d3d_tau",
                 "d3d_accepted_length_bucket", "d3d_batch_size_bucket", "d3d_queue_depth",
                 "d3d_running_requests", "d3d_time_to_first_token_seconds_bucket"):
        assert name in text, name
    assert server.metric("d3d_tau") >= 1.0
    assert server.metric("d3d_generation_tokens_total") > 0


def test_a_non_streaming_client_that_leaves_while_tokens_flow_is_noticed(server):
    """Its job leaves the batch although its events never pause (plain decoding, one token a round)."""
    cancelled = server.metric('d3d_requests_total{outcome="cancelled"}')
    body = {"prompt": words(72), "max_tokens": LONG, "temperature": 0, "ignore_eos": True, "d3d_speculative": False}
    with httpx.Client(timeout=0.5) as client:
        with pytest.raises(httpx.ReadTimeout):
            client.post(f"{server.url}/v1/completions", json=body)
    health = lambda: httpx.get(f"{server.url}/health").json()  # noqa: E731
    assert wait_for(lambda: health()["running"] == 0, timeout=10), health()
    assert server.metric('d3d_requests_total{outcome="cancelled"}') == cancelled + 1


def test_a_waiting_stream_whose_client_left_frees_its_queue_place(server):
    """No tokens flow for a waiting job; the watcher still notices its client leave."""
    streams = [long_stream(server) for _ in range(MAX_BATCH)]
    queued = [httpx.Client(timeout=30) for _ in range(MAX_QUEUE)]
    pending = [c.send(c.build_request("POST", f"{server.url}/v1/completions",
                                      json={"prompt": "w3", "max_tokens": LONG, "stream": True}), stream=True)
               for c in queued]
    health = lambda: httpx.get(f"{server.url}/health").json()  # noqa: E731
    assert wait_for(lambda: health()["waiting"] == MAX_QUEUE)
    pending[0].close()
    queued[0].close()
    assert wait_for(lambda: health()["waiting"] == MAX_QUEUE - 1), health()
    replacement = httpx.Client(timeout=30)
    extra = replacement.send(replacement.build_request("POST", f"{server.url}/v1/completions",
                                                       json={"prompt": "w3", "max_tokens": 2, "stream": True}), stream=True)
    assert extra.status_code == 200  # not a 429
    for client, response, _ in streams + [(c, p, None) for c, p in zip(queued[1:] + [replacement], pending[1:] + [extra])]:
        response.close()
        client.close()
    assert wait_for(lambda: health()["running"] == 0 and health()["waiting"] == 0), health()


def test_loadtest_against_the_server(server, tmp_path, capsys):
    from d3d.serving.loadtest import LoadTestConfig, run_loadtest

    suite = tmp_path / "prompts.jsonl"
    suite.write_text("\n".join(json.dumps({"prompt": words(i, i + 1)}) for i in range(10, 14)) + "\n")
    out = tmp_path / "load.json"
    summary = run_loadtest(LoadTestConfig(url=server.url, concurrency=(1, 2), requests=3, max_tokens=12,
                                          suite=str(suite), out=str(out)))
    assert set(summary) == {"1", "2"} and json.loads(out.read_text()) == summary
    for level in summary.values():
        assert level["on"]["errors"] == 0 and level["off"]["errors"] == 0
        assert level["on"]["requests"] == 3 and level["on"]["tokens"] > 0
        assert level["on"]["tau"] >= 1.0 and level["off"]["tau"] == 1.0
        assert level["speedup"] > 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "tok/s" in lines[0] and json.loads(lines[-1]) == summary  # the table, then one JSON line


def test_sigterm_ends_in_flight_requests_cleanly_and_exits(server):
    """Last: stops the shared server. The in-flight stream ends with its finish or an error event, then [DONE]."""
    client, response, lines = long_stream(server)
    server.proc.send_signal(signal.SIGTERM)
    events = [line[6:] for line in lines if line.startswith("data: ")]
    client.close()
    assert events[-1] == "[DONE]"
    last = json.loads(events[-2])
    assert "error" in last or last["choices"][0]["finish_reason"] == "length", last
    assert server.proc.wait(30) == 0
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{server.url}/health", timeout=1)
