"""Responses from an OpenAI-compatible endpoint (vLLM, SGLang) for `d3d data --endpoint`.

The server's text is tokenized with the target's tokenizer, plus the end-of-turn token when the
server stopped on it. Requests run a few at a time in threads, with retries on server errors.
This module knows nothing about batching on the native runtime or output files.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from d3d.errors import D3DError
from d3d.inference.sampling import SamplingConfig
from d3d.models import hub
from d3d.training.generation import PendingPrompt, Response, ResponseSource, row_seed
from d3d.training.prompts import PromptRecord

FINISH_REASONS = {"stop": "eos", "length": "max_new_tokens"}  # OpenAI names -> ours


@dataclass(frozen=True)
class EndpointConfig:
    """An OpenAI-compatible server (vLLM, SGLang, ...)."""

    url: str  # base URL, e.g. http://localhost:8000 (a trailing /v1 is accepted)
    model: str | None = None  # model name on the server; None = the only one it serves
    timeout_s: float = 600.0  # per request
    retries: int = 3  # extra tries after a network error, a timeout, HTTP 429 or 5xx
    backoff_s: float = 1.0  # wait before the first retry; doubles each time

    @property
    def base(self) -> str:
        return self.url.rstrip("/").removesuffix("/v1")


def request_json(url: str, cfg: EndpointConfig, payload: dict | None = None) -> dict:
    """POST `payload` (GET without one) and parse the JSON reply, retrying transient failures."""
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    body = None if payload is None else json.dumps(payload).encode("utf-8")
    last = ""
    for attempt in range(cfg.retries + 1):
        if attempt:
            time.sleep(cfg.backoff_s * 2 ** (attempt - 1))
        try:
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=cfg.timeout_s) as reply:
                return _parse_reply(url, reply.read())
        except urllib.error.HTTPError as error:
            if error.code != 429 and error.code < 500:
                detail = error.read()[:200].decode("utf-8", "replace")
                raise D3DError(f"endpoint {url} refused the request: HTTP {error.code} {detail}") from error
            last = f"HTTP {error.code}"
        except (urllib.error.URLError, OSError) as error:  # refused, reset, timed out
            last = hub.short_reason(error)
    raise D3DError(f"endpoint {url} failed {cfg.retries + 1} times; last: {last}")


def _parse_reply(url: str, raw: bytes) -> dict:
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise D3DError(f"endpoint {url} did not answer with JSON") from error
    if not isinstance(reply, dict):
        raise D3DError(f"endpoint {url} answered with a JSON {type(reply).__name__}, not an object")
    return reply


def served_model(cfg: EndpointConfig) -> str:
    """The model name to ask for: the configured one, else the only one the server lists."""
    if cfg.model:
        return cfg.model
    names = [m.get("id") for m in request_json(f"{cfg.base}/v1/models", cfg).get("data", []) if isinstance(m, dict)]
    if len(names) != 1:
        listed = ", ".join(map(str, names))
        raise D3DError(f"the endpoint serves {len(names)} models ({listed}); pick one with --endpoint-model")
    return str(names[0])


class EndpointResponses(ResponseSource):
    """Responses from `/v1/chat/completions`, one concurrent request per prompt of a batch.

    The returned text is tokenized with the target's tokenizer, plus the end-of-turn (eos) token
    when the server stopped on it, so rows look like the native source's.
    """

    def __init__(self, cfg: EndpointConfig, tokenizer, sampling: SamplingConfig, max_new_tokens: int, seed: int) -> None:
        self.cfg, self.tokenizer, self.sampling = cfg, tokenizer, sampling
        self.max_new_tokens, self.seed = max_new_tokens, seed
        self.model = served_model(cfg)

    def settings(self) -> dict:
        return {"kind": "endpoint", "url": self.cfg.base, "model": self.model}

    def respond(self, batch: list[PendingPrompt]) -> list[Response]:
        with ThreadPoolExecutor(max_workers=len(batch)) as pool:
            return list(pool.map(self._answer, batch))

    def _answer(self, pending: PendingPrompt) -> Response:
        reply = request_json(f"{self.cfg.base}/v1/chat/completions", self.cfg, self._payload(pending.record))
        try:
            choice = reply["choices"][0]
            text, finish = choice["message"]["content"] or "", choice.get("finish_reason") or "stop"
        except (KeyError, IndexError, TypeError) as error:
            raise D3DError(f"endpoint {self.cfg.base} answered without choices[0].message.content") from error
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if finish == "stop" and self.tokenizer.eos_token_id is not None:
            ids = ids + [self.tokenizer.eos_token_id]
        return Response(list(ids), text, FINISH_REASONS.get(finish, finish))

    def _payload(self, record: PromptRecord) -> dict:
        s = self.sampling
        payload = {
            "model": self.model, "messages": [{"role": "user", "content": record.text}],
            "max_tokens": self.max_new_tokens, "temperature": s.temperature, "top_p": s.top_p,
            "seed": row_seed(self.seed, record.id) % (1 << 31),
        }
        return payload | ({"top_k": s.top_k} if s.top_k else {})
