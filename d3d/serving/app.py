"""The HTTP side of `d3d serve`: FastAPI routes with OpenAI's conventions (as vLLM implements them).

    GET  /v1/models            the one served model
    POST /v1/completions       raw prompt (text or token ids), no chat template
    POST /v1/chat/completions  messages through the target's chat template
    GET  /health               200 while serving, 503 while shutting down (or if the engine loop died)
    GET  /metrics              Prometheus text format (`metrics.py`)

A handler parses and validates the request (every bad input is a 400 in OpenAI's error shape,
and the server keeps serving), tokenizes it in a worker thread, submits a `Job` to the engine
loop and awaits its events on an asyncio queue that the engine thread fills through
`call_soon_threadsafe`: nothing here blocks the event loop or the engine. A full queue is a 429
with `Retry-After`. When a client disconnects, its job is cancelled and the engine drops it at
the next round.

This module knows nothing about how decoding works; `ServedModel` gives it a tokenizer and limits.

    app = create_app(ServedModel(...), engine_loop, metrics)
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from d3d.errors import D3DError
from d3d.inference.engine import GenerationConfig
from d3d.inference.sampling import SamplingConfig
from d3d.inference.stopping import StopChecker
from d3d.serving.engine_loop import Done, EngineLoop, Event, Failed, Job, QueueFull, ShuttingDown, Tokens
from d3d.serving.metrics import ServingMetrics
from d3d.serving.schemas import (
    ChatCompletionRequest,
    CompletionRequest,
    SamplingFields,
    error_body,
    finish_reason,
    new_id,
    now_s,
    usage,
)
from d3d.serving.text import TextStream

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions; chat defaults to the context left
RETRY_AFTER_S = 1  # what a 429 tells the client to wait
DISCONNECT_POLL_S = 0.5  # how often a non-streaming request checks that its client is still there


@dataclass
class ServedModel:
    """What the HTTP layer knows about the model it serves."""

    name: str  # the model id clients pass as `model`
    tokenizer: object  # transformers tokenizer (encode, chat template, decode)
    context_length: int  # prompt + generated tokens must fit
    eos_token_ids: tuple[int, ...]  # tokens that end a generation
    vocab_size: int  # token ids of a completions prompt must be below it
    created: int = 0  # unix time the server started

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)


class BadRequest(Exception):
    """A request the server refuses with a 400 (or `status`)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param, self.status = param, status


def error_response(message: str, status: int, param: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, status, param), status_code=status, headers=headers)


# ---------------------------------------------------------------------------------------------
# Parsing and validation


async def parse_body(request: Request, schema: type[BaseModel]) -> BaseModel:
    """The request body as `schema`; BadRequest for invalid UTF-8, malformed JSON or bad fields."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(f"the request body is not valid UTF-8 (byte {err.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise BadRequest(f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    try:
        return schema.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise BadRequest(f"invalid value for '{param}': {first['msg']}", param) from None


def check_model(served: ServedModel, body: SamplingFields) -> None:
    if body.model is not None and body.model != served.name:
        raise BadRequest(f"the model '{body.model}' does not exist; this server serves '{served.name}'", "model")


def chat_prompt(served: ServedModel, body: ChatCompletionRequest) -> list[int]:
    """Token ids of the messages with the chat template and the generation prompt."""
    if not body.messages:
        raise BadRequest("'messages' must contain at least one message", "messages")
    messages = [{"role": m.role, "content": m.text()} for m in body.messages]
    tok = served.tokenizer
    if not getattr(tok, "chat_template", None):
        text = "\n".join(m["content"] for m in messages)
        return list(tok(text)["input_ids"])
    try:
        ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    except Exception as err:  # noqa: BLE001 - a template may reject roles or orderings
        raise BadRequest(f"the chat template rejected the messages: {err}", "messages") from None
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return list(ids)


def completion_prompt(served: ServedModel, body: CompletionRequest) -> list[int]:
    """Token ids of a completions prompt (text is tokenized as is, without a template)."""
    prompt = body.prompt
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        if len(prompt) != 1:
            raise BadRequest("only one prompt per request is supported", "prompt")
        prompt = prompt[0]
    if isinstance(prompt, str):
        return list(served.tokenizer(prompt)["input_ids"])
    bad = [t for t in prompt if not 0 <= t < served.vocab_size]
    if bad:
        raise BadRequest(f"token id {bad[0]} is outside the vocabulary (0..{served.vocab_size - 1})", "prompt")
    return list(prompt)


def generation_config(served: ServedModel, body: SamplingFields, prompt_len: int, budget: int | None,
                      default_budget: int | None) -> GenerationConfig:
    """The engine's settings for one request; BadRequest if it cannot fit the context."""
    ctx = served.context_length
    if prompt_len < 1:
        raise BadRequest("the prompt is empty", "prompt")
    if prompt_len >= ctx:
        raise BadRequest(f"the prompt has {prompt_len} tokens but the model's context is {ctx} tokens", "prompt")
    if budget is not None and prompt_len + budget > ctx:
        raise BadRequest(f"this model's context is {ctx} tokens, but {prompt_len + budget} were requested "
                         f"({prompt_len} in the prompt, {budget} to generate); lower max_tokens", "max_tokens")
    room = ctx - prompt_len
    max_new = budget if budget is not None else min(room, default_budget or room)
    sampling = SamplingConfig(temperature=body.temperature, top_k=max(body.top_k, 0), top_p=body.top_p)
    seed = secrets.randbits(63) if body.seed is None else body.seed % (1 << 63)  # unseeded: fresh randomness
    cfg = GenerationConfig(max_new_tokens=max_new, sampling=sampling, stop_strings=body.stop_strings(), seed=seed)
    try:
        cfg.validate()
    except D3DError as err:
        raise BadRequest(str(err)) from None
    return cfg


# ---------------------------------------------------------------------------------------------
# Talking to the engine loop


class JobEvents:
    """A job's events, delivered from the engine thread into this event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.queue: asyncio.Queue[Event] = asyncio.Queue()

    def deliver(self, event: Event) -> None:
        """Called on the engine thread; never raises (a closed event loop has nobody to tell)."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:
            pass

    async def next(self, timeout: float | None = None) -> Event | None:
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except asyncio.TimeoutError:
            return None


def submit(engine: EngineLoop, served: ServedModel, prompt: list[int], cfg: GenerationConfig,
           body: SamplingFields) -> tuple[Job, JobEvents]:
    events = JobEvents()
    eos = () if body.ignore_eos else served.eos_token_ids
    stop = StopChecker(cfg.max_new_tokens, eos, cfg.stop_strings, served.decode)
    job = Job(torch.tensor([prompt], device=engine.device), cfg, stop, body.d3d_speculative, events.deliver)
    engine.submit(job)
    return job, events


@dataclass
class Outcome:
    """What a finished job produced, for a non-streaming response."""

    text: str
    done: Done


async def collect(request: Request, engine: EngineLoop, job: Job, events: JobEvents, text: TextStream) -> Outcome | Failed | None:
    """Wait for the whole answer; None if the client went away (the job is then cancelled)."""
    while True:
        event = await events.next(DISCONNECT_POLL_S)
        if event is None:
            if await request.is_disconnected():
                job.cancel()
                engine.wake()
                return None
            continue
        if isinstance(event, Tokens):
            text.push(event.ids)
        elif isinstance(event, Failed):
            return event
        else:
            text.finish()
            return Outcome(text.full_text, event)


def d3d_stats(done: Done) -> dict:
    return {"tau": round(done.tau, 4), "rounds": done.rounds, "speculative": done.speculative}


# ---------------------------------------------------------------------------------------------
# Streaming


def sse(payload: dict | str) -> str:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"


async def stream_events(engine: EngineLoop, job: Job, events: JobEvents, text: TextStream,
                        chunk: Callable[[str | None, str | None], dict], body: SamplingFields,
                        head: dict | None = None) -> AsyncIterator[str]:
    """SSE lines for one job: optional head chunk, content deltas, the finish chunk, usage, [DONE].

    If the client disconnects, the response task is cancelled here; the job is cancelled with it.
    """
    try:
        if head is not None:
            yield sse(head)
        while True:
            event = await events.next()
            if isinstance(event, Tokens):
                delta = text.push(event.ids)
                if delta or body.d3d_stats:
                    payload = chunk(delta, None)
                    if body.d3d_stats:
                        payload["d3d"] = {"tokens": len(event.ids)}
                    yield sse(payload)
            elif isinstance(event, Failed):
                yield sse(error_body(event.message, event.status))
                break
            else:
                rest = text.finish()
                yield sse(chunk(rest, finish_reason(event.reason)))
                if body.include_usage:
                    final = chunk(None, None) | {"choices": [], "usage": usage(event.prompt_tokens, event.completion_tokens)}
                    yield sse(final | {"d3d": d3d_stats(event)})
                break
        yield sse("[DONE]")
    finally:
        job.cancel()  # a no-op for a finished job; frees the slot of an abandoned one
        engine.wake()


# ---------------------------------------------------------------------------------------------
# The application


def create_app(served: ServedModel, engine: EngineLoop, metrics: ServingMetrics) -> FastAPI:
    """The FastAPI app; the engine loop starts and stops with the app's lifespan."""

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        engine.start()
        yield
        await run_in_threadpool(engine.close)

    app = FastAPI(title="d3d serve", lifespan=lifespan)

    @app.exception_handler(BadRequest)
    async def bad_request(_: Request, err: BadRequest) -> JSONResponse:
        return error_response(str(err), err.status, err.param)

    @app.get("/health")
    async def health() -> Response:
        if engine.draining or not engine.alive:
            return error_response("shutting down" if engine.draining else "the engine loop is not running", 503)
        return JSONResponse({"status": "ok", "running": len(engine.decoder.running), "waiting": engine.queue_depth})

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=metrics.content_type)

    @app.get("/v1/models")
    async def models() -> dict:
        card = {"id": served.name, "object": "model", "created": served.created, "owned_by": "d3d",
                "max_model_len": served.context_length}
        return {"object": "list", "data": [card]}

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        body = await parse_body(request, CompletionRequest)
        check_model(served, body)
        prompt = await run_in_threadpool(completion_prompt, served, body)
        cfg = generation_config(served, body, len(prompt), body.max_tokens, COMPLETIONS_DEFAULT_MAX_TOKENS)
        return await run_job(request, served, engine, prompt, cfg, body, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = await parse_body(request, ChatCompletionRequest)
        check_model(served, body)
        prompt = await run_in_threadpool(chat_prompt, served, body)
        cfg = generation_config(served, body, len(prompt), body.budget(), None)
        return await run_job(request, served, engine, prompt, cfg, body, chat=True)

    return app


async def run_job(request: Request, served: ServedModel, engine: EngineLoop, prompt: list[int],
                  cfg: GenerationConfig, body: SamplingFields, chat: bool) -> Response:
    """Submit one request and answer it: a 429 / 503 at once, an SSE stream, or one JSON body."""
    try:
        job, events = submit(engine, served, prompt, cfg, body)
    except QueueFull as err:
        return error_response(str(err), 429, headers={"Retry-After": str(RETRY_AFTER_S)})
    except ShuttingDown as err:
        return error_response(str(err), 503)
    text = TextStream(served.decode, cfg.stop_strings)
    make_chunk, make_body = (chat_chunk, chat_body) if chat else (completion_chunk, completion_body)
    rid, created = new_id("chatcmpl" if chat else "cmpl"), now_s()
    if body.stream:
        chunk = lambda content, reason: make_chunk(rid, created, served.name, content, reason)  # noqa: E731
        head = make_chunk(rid, created, served.name, "", None, role=True) if chat else None
        return StreamingResponse(stream_events(engine, job, events, text, chunk, body, head),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    outcome = await collect(request, engine, job, events, text)
    if outcome is None:
        return Response(status_code=499)  # nobody is listening any more
    if isinstance(outcome, Failed):
        return error_response(outcome.message, outcome.status)
    done = outcome.done
    return JSONResponse(make_body(rid, created, served.name, outcome.text, done)
                        | {"usage": usage(done.prompt_tokens, done.completion_tokens), "d3d": d3d_stats(done)})


def completion_chunk(rid: str, created: int, model: str, text: str | None, reason: str | None, role: bool = False) -> dict:
    choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": reason}
    return {"id": rid, "object": "text_completion", "created": created, "model": model, "choices": [choice]}


def chat_chunk(rid: str, created: int, model: str, text: str | None, reason: str | None, role: bool = False) -> dict:
    delta = {"role": "assistant", "content": ""} if role else ({} if text is None or (reason and not text) else {"content": text})
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
    return {"id": rid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}


def completion_body(rid: str, created: int, model: str, text: str, done: Done) -> dict:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason(done.reason)}
    return {"id": rid, "object": "text_completion", "created": created, "model": model, "choices": [choice]}


def chat_body(rid: str, created: int, model: str, text: str, done: Done) -> dict:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(done.reason)}
    return {"id": rid, "object": "chat.completion", "created": created, "model": model, "choices": [choice]}
