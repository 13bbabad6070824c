"""When to stop generating: end-of-sequence tokens, stop strings, and a token budget.

Tokens are pushed one at a time, whatever chunk size the decoder produced them in, so plain and
speculative decoding stop at exactly the same token. Stop strings are matched against the output
text, decoded incrementally (`IncrementalText`): a stop string is found as soon as the decoded
output contains it, however many tokens it spans and even when some of them decode to no text.
The checker knows nothing about models; it sees text only through the `decode` function it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

Decode = Callable[[list[int]], str]  # token ids -> text (a tokenizer's decode)


class IncrementalText:
    """The decoded text of a growing list of tokens, at a bounded cost per token.

    The newest tokens live in a window that is decoded whole after every push; the text before
    it is frozen. When the window's text grows past twice `keep` characters, its head is frozen at
    a split where decoding adds up (decode(head) + decode(rest) == decode(head + rest), which fails
    inside a multi-byte character or where a tokenizer treats the first token specially), leaving
    at least `keep` characters in the window. Tokens that decode to nothing just widen the window,
    so they can never push earlier text out of sight. Without any clean split the window keeps
    growing: slower, never wrong.
    """

    def __init__(self, decode: Decode, keep: int = 64) -> None:
        self.decode = decode
        self.keep = keep  # characters the window keeps after freezing (at least the longest stop string)
        self.frozen = ""  # text of the tokens before the window
        self.window: list[int] = []  # the newest tokens, decoded together
        self.window_text = ""  # decode(window)

    @property
    def text(self) -> str:
        return self.frozen + self.window_text

    def push(self, token: int) -> None:
        self.window.append(token)
        self.window_text = self.decode(self.window)
        if len(self.window_text) > 2 * self.keep:
            self._freeze()

    def _freeze(self) -> None:
        """Move the window's head into the frozen text at the latest clean split that leaves `keep` characters."""
        split = len(self.window) - 1
        while split > 0 and len(self.decode(self.window[split:])) < self.keep:
            split -= 1
        for k in range(split, 0, -1):
            head, rest = self.decode(self.window[:k]), self.decode(self.window[k:])
            if head + rest == self.window_text:
                self.frozen += head
                self.window, self.window_text = self.window[k:], rest
                return


class StopChecker:
    """Consumes generated tokens and says when generation is over and why."""

    def __init__(
        self,
        max_new_tokens: int,
        eos_token_ids: Iterable[int] = (),
        stop_strings: Iterable[str] = (),
        decode: Decode | None = None,
    ) -> None:
        self.max_new_tokens = max_new_tokens
        self.eos = frozenset(eos_token_ids)
        self.stop_strings = tuple(s for s in stop_strings if s)
        if self.stop_strings and decode is None:
            raise ValueError("stop strings need a decode function")
        longest = max((len(s) for s in self.stop_strings), default=0)
        self.output = IncrementalText(decode, keep=longest + 32) if self.stop_strings else None  # type: ignore[arg-type]
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
        elif self.output is not None and self._hit_stop_string(token):
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

    def _hit_stop_string(self, token: int) -> bool:
        """Whether the output text contains a stop string now (earlier text had none, or we would have stopped)."""
        output = self.output
        assert output is not None
        output.push(token)
        tail = output.frozen[-output.keep :] + output.window_text
        return any(s in tail for s in self.stop_strings)
