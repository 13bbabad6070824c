"""Token ids to streamed text: incremental detokenization and stop-string trimming.

`TextStream.push(ids)` returns the text that the new ids add, holding back (a) an incomplete
multi-byte character (the decoded text ends in U+FFFD) and (b) the last `longest stop - 1`
characters, which could be the start of a stop string. `finish()` returns the rest, cut before
the first stop string, so the output never contains a stop string (OpenAI's convention).

Decoding re-reads only a short window: the text of ids[prefix:] minus the text of
ids[prefix:read], where `read` is where the previous emission ended and `prefix` a few ids
before it, so a token whose text depends on its left neighbour (a leading space) decodes right.

This module knows nothing about HTTP or models; `decode` is the tokenizer's.
"""

from __future__ import annotations

from collections.abc import Callable

CONTEXT_IDS = 6  # ids re-decoded before the new ones, so that merges across the boundary decode correctly


class TextStream:
    """Turns a growing list of token ids into text deltas."""

    def __init__(self, decode: Callable[[list[int]], str], stop_strings: tuple[str, ...] = ()) -> None:
        self.decode = decode
        self.stop_strings = tuple(s for s in stop_strings if s)
        self.holdback = max((len(s) for s in self.stop_strings), default=1) - 1
        self.ids: list[int] = []
        self.read = 0  # ids[:read] are in `text`
        self.text = ""  # decoded text of ids[:read]
        self.sent = 0  # characters of `text` already returned

    def push(self, ids: list[int]) -> str:
        """The text the new ids make safe to send (possibly empty)."""
        self.ids.extend(ids)
        self._decode_new()
        visible = self._cut(self.text)
        safe = len(visible) if len(visible) < len(self.text) else max(self.sent, len(visible) - self.holdback)
        return self._take(visible[:safe])

    def finish(self) -> str:
        """Everything not yet sent, cut before the first stop string."""
        if self.read < len(self.ids):
            self.text += self._tail_text(len(self.ids), allow_partial=True)
            self.read = len(self.ids)
        return self._take(self._cut(self.text))

    @property
    def full_text(self) -> str:
        return self._cut(self.text)

    def _decode_new(self) -> None:
        tail = self._tail_text(len(self.ids), allow_partial=False)
        if tail is not None:
            self.text += tail
            self.read = len(self.ids)

    def _tail_text(self, end: int, allow_partial: bool) -> str | None:
        prefix = max(0, self.read - CONTEXT_IDS)
        before = self.decode(self.ids[prefix : self.read])
        after = self.decode(self.ids[prefix:end])
        if not allow_partial and after.endswith("\ufffd"):
            return None
        if not after.startswith(before):  # the tokenizer rewrote the boundary: fall back to a full decode
            return self.decode(self.ids[:end])[len(self.text) :]
        return after[len(before) :]

    def _cut(self, text: str) -> str:
        """text up to the first stop string."""
        cut = min((i for i in (text.find(s) for s in self.stop_strings) if i >= 0), default=len(text))
        return text[:cut]

    def _take(self, text: str) -> str:
        delta = text[self.sent :]
        self.sent = max(self.sent, len(text))
        return delta
