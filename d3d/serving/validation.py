"""Request parsing and validation of `d3d serve`: from raw bytes to token ids and engine settings.

Every check happens before any work that grows with the input: the body is read up to
`RequestLimits.max_body_bytes` (413 past it), a prompt's text is measured against
`max_prompt_chars` before it is tokenized, a token-id prompt against the context before its ids
are scanned, and stop strings are bounded in count and length. Every refusal is a `BadRequest`,
which the app turns into OpenAI's error shape with its status (400 unless said otherwise).

Fields that OpenAI (or vLLM) define and this server does not implement are refused with a 400
that names them (`schemas.refused_field`), unless they hold their "off" value; unknown fields are
ignored. A temperature below `GREEDY_BELOW` is greedy decoding (the limit of sampling as the
temperature goes to 0; tinier ones would overflow the softmax).

This module knows nothing about the engine loop or HTTP responses; `ServedModel` gives it the
tokenizer and the limits.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from functools import cached_property

import torch
from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from d3d.errors import D3DError
from d3d.inference.engine import GenerationConfig
from d3d.inference.prefill import parse_prefill_keep
from d3d.inference.prompt_layout import ChatFrame, chat_frame, protected_tokens, stopword_ids
from d3d.inference.sampling import SamplingConfig
from d3d.serving.engine_loop import PrefillRequest
from d3d.serving.schemas import ChatCompletionRequest, CompletionRequest, SamplingFields, refused_field

GREEDY_BELOW = 1e-5  # a temperature in (0, GREEDY_BELOW) decodes greedily, as temperature 0 does
MAX_STOP_STRINGS = 16  # stop strings per request
MAX_STOP_CHARS = 256  # characters per stop string
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024  # the request body; more is a 413
PROMPT_CHARS_PER_TOKEN = 16  # default prompt bound: this many characters per token of context


@dataclass
class RequestLimits:
    """Bounds checked before any work that grows with the request."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES  # bytes of the request body
    max_prompt_chars: int = 0  # characters of a prompt's text before tokenizing; 0 = 16 per context token

    def validate(self) -> None:
        if self.max_body_bytes < 1 or self.max_prompt_chars < 0:
            raise D3DError(f"--max-body-bytes must be >= 1 and --max-prompt-chars >= 0, got "
                           f"{self.max_body_bytes}, {self.max_prompt_chars}")


@dataclass
class ServedModel:
    """What the HTTP layer knows about the model it serves."""

    name: str  # the model id clients pass as `model`
    tokenizer: object  # transformers tokenizer (encode, chat template, decode)
    context_length: int  # prompt + generated tokens must fit
    eos_token_ids: tuple[int, ...]  # tokens that end a generation
    vocab_size: int  # token ids of a completions prompt must be below it
    created: int = 0  # unix time the server started
    limits: RequestLimits = field(default_factory=RequestLimits)  # body and prompt bounds

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    @property
    def max_prompt_chars(self) -> int:
        return self.limits.max_prompt_chars or PROMPT_CHARS_PER_TOKEN * self.context_length

    @cached_property
    def stopword_ids(self) -> frozenset[int]:
        """Token ids the lexical prefill selector ignores (`prompt_layout.stopword_ids`)."""
        return stopword_ids(self.tokenizer)


class BadRequest(Exception):
    """A request the server refuses with a 400 (or `status`)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.param, self.status = param, status


# ---------------------------------------------------------------------------------------------
# The body


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body, refused with a 413 as soon as it is known to exceed `max_bytes`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise BadRequest(f"the request body has {int(declared)} bytes; this server takes at most {max_bytes}", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BadRequest(f"the request body exceeds {max_bytes} bytes, the most this server takes", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def decode_json(raw: bytes) -> dict:
    """The body as a JSON object; BadRequest for invalid UTF-8, malformed JSON or lone surrogates."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(f"the request body is not valid UTF-8 (byte {err.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise BadRequest(f"malformed JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except RecursionError:
        raise BadRequest("malformed JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    try:  # JSON may escape half of a surrogate pair ("\ud800"): a string no tokenizer can encode
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        raise BadRequest(f"the request contains a lone surrogate ({err.object[err.start:err.end]!a}), which is not "
                         "valid Unicode text") from None
    return data


async def parse_body(request: Request, schema: type[BaseModel], limits: RequestLimits) -> BaseModel:
    """The request body as `schema`; BadRequest for anything it cannot be."""
    data = decode_json(await read_body(request, limits.max_body_bytes))
    try:
        body = schema.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        param = ".".join(str(p) for p in first["loc"]) or None
        raise BadRequest(f"invalid value for '{param}': {first['msg']}", param) from None
    refused = refused_field(data)
    if refused is not None:
        raise BadRequest(*refused)
    check_stop_strings(body)
    return body


def check_stop_strings(body: SamplingFields) -> None:
    stops = body.stop_strings()
    if len(stops) > MAX_STOP_STRINGS:
        raise BadRequest(f"at most {MAX_STOP_STRINGS} stop strings per request, got {len(stops)}", "stop")
    longest = max(stops, key=len, default="")
    if len(longest) > MAX_STOP_CHARS:
        raise BadRequest(f"a stop string may have at most {MAX_STOP_CHARS} characters, got {len(longest)}", "stop")


def check_model(served: ServedModel, body: SamplingFields) -> None:
    if body.model is not None and body.model != served.name:
        raise BadRequest(f"the model '{body.model}' does not exist; this server serves '{served.name}'", "model")


# ---------------------------------------------------------------------------------------------
# Prompts (run in a worker thread: tokenizing takes time)


def check_prompt_chars(served: ServedModel, chars: int) -> None:
    if chars > served.max_prompt_chars:
        raise BadRequest(f"the prompt has {chars} characters; this server takes at most {served.max_prompt_chars} "
                         f"(--max-prompt-chars)", "prompt")


def chat_prompt(served: ServedModel, body: ChatCompletionRequest) -> list[int]:
    """Token ids of the messages with the chat template and the generation prompt."""
    if not body.messages:
        raise BadRequest("'messages' must contain at least one message", "messages")
    messages = [{"role": m.role, "content": m.text()} for m in body.messages]
    check_prompt_chars(served, sum(len(m["content"]) for m in messages))
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
        check_prompt_chars(served, len(prompt))
        return list(served.tokenizer(prompt)["input_ids"])
    if len(prompt) >= served.context_length:
        raise BadRequest(f"the prompt has {len(prompt)} tokens but the model's context is {served.context_length} "
                         "tokens", "prompt")
    bad = [t for t in prompt if not 0 <= t < served.vocab_size]
    if bad:
        raise BadRequest(f"token id {bad[0]} is outside the vocabulary (0..{served.vocab_size - 1})", "prompt")
    return list(prompt)


def prefill_request(served: ServedModel, body: SamplingFields, prompt: list[int], frame: ChatFrame) -> PrefillRequest | None:
    """The job's selective prefill (`d3d_prefill_keep`), with the prompt tokens it must keep."""
    try:
        keep = parse_prefill_keep(body.d3d_prefill_keep)
    except D3DError as err:
        raise BadRequest(str(err), "d3d_prefill_keep") from None
    if keep is None:
        return None
    return PrefillRequest(keep, protected_tokens(served.tokenizer, torch.tensor(prompt), frame), served.stopword_ids)


def chat_prefill_frame(served: ServedModel, body: ChatCompletionRequest) -> ChatFrame:
    """The template's scaffolding around the last message, when it is the user's (else none)."""
    messages = [{"role": m.role, "content": m.text()} for m in body.messages]
    if body.d3d_prefill_keep is None or not messages or messages[-1]["role"] != "user":
        return ChatFrame((), ())
    return chat_frame(served.tokenizer, messages[:-1])


# ---------------------------------------------------------------------------------------------
# Engine settings


def sampling_config(body: SamplingFields) -> SamplingConfig:
    """The request's sampling; a temperature below GREEDY_BELOW is greedy."""
    temperature = 0.0 if body.temperature < GREEDY_BELOW else body.temperature
    return SamplingConfig(temperature=temperature, top_k=max(body.top_k, 0), top_p=body.top_p)


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
    seed = secrets.randbits(63) if body.seed is None else body.seed % (1 << 63)  # unseeded: fresh randomness
    cfg = GenerationConfig(max_new_tokens=max_new, sampling=sampling_config(body), stop_strings=body.stop_strings(),
                           seed=seed, position_seeded=body.seed is not None)  # seeded: the same answer under any load
    try:
        cfg.validate()
    except D3DError as err:
        raise BadRequest(str(err)) from None
    return cfg
