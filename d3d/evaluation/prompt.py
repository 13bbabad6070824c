"""`Prompt`: one benchmark prompt, the unit every suite is made of.

Its own module so that the suites (`suites.py`) and the generated long-context suite
(`longctx.py`) both build Prompts without importing each other. It knows nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    """One benchmark prompt."""

    id: str  # unique within its suite ("HumanEval/0", a JSONL "id", or "line-<n>")
    text: str  # the user turn, before the chat template
    reference: tuple[str, ...] = ()  # answers a scored suite grades against (longctx.score); () = unscored
    metric: str = ""  # how `reference` is used (longctx.METRICS); "" = unscored
    task: str = ""  # task type within a scored suite ("passkey", ...), for per-task scores
    evidence: str = ""  # the context's text that answers it (a selective-prefill selector must keep it); "" = unknown
