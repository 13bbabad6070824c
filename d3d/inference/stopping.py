"""When to stop generating: end-of-sequence tokens, stop strings, and a token budget.

Tokens are pushed one at a time, whatever chunk size the decoder produced them in, so plain and
speculative decoding stop at exactly the same token. The checker knows nothing about models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class StopChecker:
    """Consumes generated tokens and says when generation is over and why."""

    def __init__(
        self,
        max_new_tokens: int,
        eos_token_ids: Iterable[int] = (),
        stop_strings: Iterable[str] = (),
        decode: Callable[[list[int]], str] | None = None,
    ) -> None:
        self.max_new_tokens = max_new_tokens
        self.eos = frozenset(eos_token_ids)
        self.stop_strings = tuple(s for s in stop_strings if s)
        if self.stop_strings and decode is None:
            raise ValueError("stop strings need a decode function")
        self.decode = decode
        self.tokens: list[int] = []
        self.reason: str | None = None

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - len(self.tokens)

    def push(self, token: int) -> bool:
        """Record one token; True when generation must stop after it."""
        self.tokens.append(token)
        if token in self.eos:
            self.reason = "eos"
        elif self.stop_strings and self._hit_stop_string():
            self.reason = "stop_string"
        elif len(self.tokens) >= self.max_new_tokens:
            self.reason = "max_new_tokens"
        return self.reason is not None

    def accept(self, chunk: Iterable[int]) -> list[int]:
        """Push a chunk; return the part of it that belongs to the output."""
        kept = []
        for t in chunk:
            kept.append(t)
            if self.push(t):
                break
        return kept

    def _hit_stop_string(self) -> bool:
        longest = max(len(s) for s in self.stop_strings)
        tail = self.decode(self.tokens[-(longest + 8) :])  # type: ignore[misc]
        return any(s in tail for s in self.stop_strings)
