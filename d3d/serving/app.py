"""The HTTP side of `d3d serve`: FastAPI routes with OpenAI's conventions (as vLLM implements them).

    GET  /v1/models            the one served model
    POST /v1/completions       raw prompt (text or token ids), no chat template
    POST /v1/chat/completions  messages through the target's chat template
    GET  /health               200 while serving, 503 while shutting down (or if the engine loop died)
    GET  /metrics              Prometheus text format (`metrics.py`)

A handler parses and validates the request (`validation.py`: every bad input is a 400 in
OpenAI's error shape, and the server keeps serving), tokenizes it in a worker thread, submits a
`Job` to the engine loop and awaits its events on an asyncio queue that the engine thread fills
through `call_soon_threadsafe`: nothing here blocks the event loop or the engine. A full queue is
a 429 with `Retry-After`; a server that is shutting down, or whose engine stopped, answers 503.

A task watches each request's connection from submission on (`watch_disconnect`), whether tokens
flow or not, streaming or not: when the client goes away, its job is cancelled (a waiting job
leaves the queue, a running one leaves the batch at the next round). Any error that escapes a
handler is a 500 in OpenAI's error shape, and so are unknown routes (404) and methods (405).

This module knows nothing about how decoding works; `ServedModel` gives it a tokenizer and limits.

    app = create_app(ServedModel(...), engine_loop, metrics)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from d3d.inference.engine import GenerationConfig
from d3d.inference.prompt_layout import ChatFrame
from d3d.inference.stopping import StopChecker
from d3d.serving.engine_loop import Done, EngineLoop, Event, Failed, Job, PrefillRequest, QueueFull, ShuttingDown, Tokens
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
from d3d.serving.validation import (
    BadRequest,
    ServedModel,
    chat_prefill_frame,
    chat_prompt,
    check_model,
    completion_prompt,
    generation_config,
    parse_body,
    prefill_request,
)

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions; chat defaults to the context left
RETRY_AFTER_S = 1  # what a 429 tells the client to wait


def error_response(message: str, status: int, param: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, status, param), status_code=status, headers=headers)


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

    async def next(self) -> Event | Disconnected:
        return await self.queue.get()


class Disconnected:
    """Put in a job's event queue by `watch_disconnect` when its client went away."""


async def watch_disconnect(request: Request, job: Job, engine: EngineLoop, events: JobEvents) -> None:
    """Wait for the client to go away (the ASGI `http.disconnect` message, which arrives whether or
    not tokens flow), then cancel the job and tell the response. Cancelled when the answer is done."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    job.cancel()
    engine.wake()
    events.queue.put_nowait(Disconnected())


def submit(engine: EngineLoop, served: ServedModel, prompt: list[int], cfg: GenerationConfig,
           body: SamplingFields, prefill: PrefillRequest | None) -> tuple[Job, JobEvents]:
    events = JobEvents()
    eos = () if body.ignore_eos else served.eos_token_ids
    stop = StopChecker(cfg.max_new_tokens, eos, cfg.stop_strings, served.decode)
    job = Job(torch.tensor([prompt], device=engine.device), cfg, stop, body.d3d_speculative, events.deliver,
              prefill=prefill)
    engine.submit(job)
    return job, events


@dataclass
class Outcome:
    """What a finished job produced, for a non-streaming response."""

    text: str
    done: Done


async def collect(events: JobEvents, text: TextStream) -> Outcome | Failed | None:
    """Wait for the whole answer; None if the client went away (the watcher cancelled the job)."""
    while True:
        event = await events.next()
        if isinstance(event, Disconnected):
            return None
        if isinstance(event, Tokens):
            text.push(event.ids)
        elif isinstance(event, Failed):
            return event
        else:
            text.finish()
            return Outcome(text.full_text, event)


def d3d_stats(done: Done, prefill: PrefillRequest | None = None) -> dict:
    stats = {"tau": round(done.tau, 4), "rounds": done.rounds, "speculative": done.speculative}
    return stats | ({"prompt_tokens_read": done.prompt_read} if prefill is not None else {})


# ---------------------------------------------------------------------------------------------
# Streaming


def sse(payload: dict | str) -> str:
    return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"


async def stream_events(engine: EngineLoop, job: Job, events: JobEvents, text: TextStream,
                        chunk: Callable[[str | None, str | None], dict], body: SamplingFields,
                        head: dict | None = None) -> AsyncIterator[str]:
    """SSE lines for one job: optional head chunk, content deltas, the finish chunk, usage, [DONE].

    If the client disconnects, the stream ends (the watcher, or the response task's cancellation);
    the job is cancelled with it. An unexpected error ends the stream with an error event.
    """
    try:
        if head is not None:
            yield sse(head)
        async for line in stream_body(job, events, text, chunk, body):
            yield line
        yield sse("[DONE]")
    finally:
        job.cancel()  # a no-op for a finished job; frees the slot of an abandoned one
        engine.wake()


async def stream_body(job: Job, events: JobEvents, text: TextStream, chunk: Callable[[str | None, str | None], dict],
                      body: SamplingFields) -> AsyncIterator[str]:
    """The SSE events between the head and [DONE]."""
    try:
        while True:
            event = await events.next()
            if isinstance(event, Disconnected):
                return
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
                    yield sse(final | {"d3d": d3d_stats(event, job.prefill)})
                break
    except Exception as exc:  # noqa: BLE001 - the headers are sent: the error can only be an event now
        yield sse(error_body(f"internal error while streaming: {exc}", 500))


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

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, err: HTTPException) -> JSONResponse:
        return error_response(str(err.detail), err.status_code, headers=getattr(err, "headers", None))

    @app.exception_handler(Exception)
    async def internal_error(_: Request, err: Exception) -> JSONResponse:
        return error_response(f"internal error: {type(err).__name__}: {err}", 500)

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
        body = await parse_body(request, CompletionRequest, served.limits)
        check_model(served, body)
        prompt = await run_in_threadpool(completion_prompt, served, body)
        cfg = generation_config(served, body, len(prompt), body.max_tokens, COMPLETIONS_DEFAULT_MAX_TOKENS)
        prefill = await run_in_threadpool(prefill_request, served, body, prompt, ChatFrame((), ()))
        return await run_job(request, served, engine, prompt, cfg, body, prefill, chat=False)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        body = await parse_body(request, ChatCompletionRequest, served.limits)
        check_model(served, body)
        prompt = await run_in_threadpool(chat_prompt, served, body)
        cfg = generation_config(served, body, len(prompt), body.budget(), None)
        frame = await run_in_threadpool(chat_prefill_frame, served, body)
        prefill = await run_in_threadpool(prefill_request, served, body, prompt, frame)
        return await run_job(request, served, engine, prompt, cfg, body, prefill, chat=True)

    return app


async def run_job(request: Request, served: ServedModel, engine: EngineLoop, prompt: list[int],
                  cfg: GenerationConfig, body: SamplingFields, prefill: PrefillRequest | None, chat: bool) -> Response:
    """Submit one request and answer it: a 429 / 503 at once, an SSE stream, or one JSON body."""
    try:
        job, events = submit(engine, served, prompt, cfg, body, prefill)
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
        lines = watched(request, engine, job, events, stream_events(engine, job, events, text, chunk, body, head))
        return StreamingResponse(lines, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    watcher = asyncio.create_task(watch_disconnect(request, job, engine, events))
    try:
        outcome = await collect(events, text)
    finally:
        watcher.cancel()
    if outcome is None:
        return Response(status_code=499)  # nobody is listening any more
    if isinstance(outcome, Failed):
        return error_response(outcome.message, outcome.status)
    done = outcome.done
    return JSONResponse(make_body(rid, created, served.name, outcome.text, done)
                        | {"usage": usage(done.prompt_tokens, done.completion_tokens), "d3d": d3d_stats(done, prefill)})


async def watched(request: Request, engine: EngineLoop, job: Job, events: JobEvents,
                  lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """`lines`, with the client's connection watched for as long as they flow."""
    watcher = asyncio.create_task(watch_disconnect(request, job, engine, events))
    try:
        async for line in lines:
            yield line
    finally:
        watcher.cancel()
        await lines.aclose()


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
