"""OpenAI-compatible request and response shapes of `d3d serve` (pydantic), and the error body.

The fields follow OpenAI's API as vLLM implements it: `max_tokens` / `max_completion_tokens`,
`temperature`, `top_p`, `top_k` (a vLLM extension), `seed`, `stop`, `n` (1 only), `stream` and
`stream_options.include_usage`. Unknown fields are ignored, as vLLM does; a known field of the
wrong type or out of range is a 400. Fields that OpenAI or vLLM define but this server does not
implement (`REFUSED`: logprobs, tools, penalties, logit_bias, ...) are a 400 that names them
unless they hold their "off" value. Fields named `d3d_*` are this server's own extensions
(`D3DExtensions`); new ones go there.

Errors have the shape {"error": {"message", "type", "param", "code"}}.

This module knows nothing about models or the engine loop.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False  # send a last chunk with `usage` (and no choices) before [DONE]


class D3DExtensions(BaseModel):
    """Request fields of this server beyond OpenAI's (all optional)."""

    d3d_speculative: bool = True  # False: plain decoding for this request (the load test's baseline)
    d3d_stats: bool = False  # streamed chunks carry {"d3d": {"tokens": n}}, the token count of each chunk
    d3d_prefill_keep: Any = None  # selective prefill: the target reads about this share (0, 1] of the prompt


class SamplingFields(D3DExtensions):
    """Fields shared by both endpoints."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = None  # must name the served model when given
    max_tokens: int | None = Field(default=None, ge=1)  # generation budget (default: see each endpoint)
    temperature: float = Field(default=1.0, ge=0, allow_inf_nan=False)  # 0 = greedy
    top_p: float = Field(default=1.0, gt=0, le=1, allow_inf_nan=False)  # nucleus threshold
    top_k: int = Field(default=0, ge=-1)  # keep the k most likely tokens; 0 or -1 = off
    seed: int | None = None  # sampling seed; None: a fresh random seed per request
    stop: str | list[str] | None = None  # stop strings; the output ends before the first one
    n: int = Field(default=1, ge=1)  # choices per request: only 1 (REFUSED)
    stream: bool = False  # server-sent events ending with `data: [DONE]`
    stream_options: StreamOptions | None = None  # include_usage
    user: str | None = None  # accepted and ignored
    ignore_eos: bool = False  # vLLM's extension: generate max_tokens even past end-of-sequence tokens

    def stop_strings(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


class CompletionRequest(SamplingFields):
    """POST /v1/completions: raw text (no chat template) or token ids."""

    prompt: str | list[int] | list[str]  # one prompt: a string, a list of token ids, or a 1-element list


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"] = "text"
    text: str


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str  # system, user, assistant ...
    content: str | list[TextPart] | None = None  # text, or text parts (joined)

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class ChatCompletionRequest(SamplingFields):
    """POST /v1/chat/completions: messages through the target's chat template."""

    messages: list[ChatMessage]
    max_completion_tokens: int | None = Field(default=None, ge=1)  # the newer name of max_tokens

    def budget(self) -> int | None:
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


def _off(*values: object) -> Callable[[object], bool]:
    return lambda v: any(v == off and type(v) is type(off) or v is off for off in values)


def _zero(v: object) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0)


# Fields OpenAI or vLLM define that this server does not implement: (name, is it "off"?, what it asks for).
# A request that sets one to anything but its off value is refused with a 400 naming it.
REFUSED: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("n", _off(None, 1), "more than one choice per request"),
    ("best_of", _off(None, 1), "best-of sampling"),
    ("echo", _off(None, False), "echoing the prompt"),
    ("suffix", _off(None, ""), "a suffix (insertion)"),
    ("logprobs", _off(None, False), "log probabilities"),
    ("top_logprobs", _off(None, 0), "log probabilities"),
    ("frequency_penalty", _zero, "a frequency penalty"),
    ("presence_penalty", _zero, "a presence penalty"),
    ("repetition_penalty", lambda v: v is None or (isinstance(v, (int, float)) and v == 1), "a repetition penalty"),
    ("min_p", _zero, "min-p sampling"),
    ("min_tokens", _zero, "a minimum number of tokens"),
    ("logit_bias", lambda v: v is None or v == {}, "logit bias"),
    ("response_format", lambda v: v is None or v == {"type": "text"}, "a response format (JSON mode or schema)"),
    ("tools", lambda v: v is None or v == [], "tool calling"),
    ("tool_choice", _off(None, "none", "auto"), "tool calling"),
    ("functions", lambda v: v is None or v == [], "function calling"),
    ("function_call", _off(None, "none", "auto"), "function calling"),
    ("prediction", _off(None), "predicted outputs"),
    ("audio", _off(None), "audio output"),
    ("modalities", lambda v: v is None or v == ["text"], "output other than text"),
    ("stop_token_ids", lambda v: v is None or v == [], "stop token ids"),
    ("include_stop_str_in_output", _off(None, False), "stop strings in the output"),
    ("skip_special_tokens", _off(None, True), "special tokens in the output"),
    ("use_beam_search", _off(None, False), "beam search"),
    ("guided_json", _off(None), "guided decoding"),
    ("guided_regex", _off(None), "guided decoding"),
    ("guided_choice", _off(None), "guided decoding"),
    ("guided_grammar", _off(None), "guided decoding"),
    ("add_generation_prompt", _off(None, True), "a prompt without the generation prompt"),
    ("continue_final_message", _off(None, False), "continuing the final message"),
    ("chat_template", _off(None), "a chat template of the request's own"),
)


def refused_field(data: dict) -> tuple[str, str] | None:
    """(message, field) for the first field of a request that asks for something not implemented."""
    for name, is_off, what in REFUSED:
        if name in data and not is_off(data[name]):
            return (f"'{name}' is not supported by this server ({what}); got {json_preview(data[name])}. "
                    f"Leave it out or set it to its default.", name)
    return None


def json_preview(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_body(message: str, status: int, param: str | None = None) -> dict:
    """The OpenAI error shape; `type` is the error class vLLM reports for the status."""
    kinds = {400: "BadRequestError", 404: "NotFoundError", 405: "BadRequestError", 413: "BadRequestError",
             429: "RateLimitError", 503: "ServiceUnavailableError"}
    return {"error": {"message": message, "type": kinds.get(status, "InternalServerError"), "param": param,
                      "code": status}}


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now_s() -> int:
    return int(time.time())


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def finish_reason(stop_reason: str) -> str:
    """OpenAI's finish_reason for an engine stop reason."""
    return "stop" if stop_reason in ("eos", "stop_string") else "length"
