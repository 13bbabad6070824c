"""Prompt lookup: the continuation of the longest n-gram match in the prompt plus the output so far.

Prompt-lookup decoding (Saxena 2023; transformers' `prompt_lookup_num_tokens`) guesses that text
repeats: when the last n tokens occurred earlier, the tokens that followed them then are likely to
follow now. `NgramIndex` keeps, for every n-gram of length 1..max_ngram seen so far, where its most
recent earlier occurrence ended, updated in O(max_ngram) per appended token, so a lookup costs
O(max_ngram) whatever the sequence length. The longest matching suffix wins; among occurrences of
that n-gram, the most recent. A continuation that reaches the end of the sequence goes on as an
overlapping copy (a repetition of period p keeps repeating), so a recent match is never cut short.

This module knows nothing about models, drafting or verification: tokens in, tokens out. The tree
decoder (`tree_engine.py`) uses it as the lookup branch of its token tree.

    index = NgramIndex(max_ngram=4)
    index.extend(prompt + output)
    match = index.lookup(num_tokens=10)      # LookupMatch(tokens=[...], ngram=3) or None
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_NGRAM = 4  # longest suffix n-gram looked up


@dataclass(frozen=True)
class LookupMatch:
    """A continuation proposed by prompt lookup."""

    tokens: list[int]  # the tokens that followed the matched n-gram (as many as asked for)
    ngram: int  # length of the matched suffix n-gram (longer: more reliable)


class NgramIndex:
    """The most recent earlier occurrence of every n-gram (n <= max_ngram) of a growing sequence."""

    def __init__(self, max_ngram: int = DEFAULT_MAX_NGRAM) -> None:
        if max_ngram < 1:
            raise ValueError(f"max_ngram must be at least 1, got {max_ngram}")
        self.max_ngram = max_ngram
        self.tokens: list[int] = []
        self.follows: dict[tuple[int, ...], int] = {}  # n-gram -> index of the token after its latest occurrence

    def extend(self, tokens: list[int]) -> None:
        """Append tokens; every n-gram that now has a following token is indexed."""
        for token in tokens:
            end = len(self.tokens)  # the n-grams ending just before `token` are followed by it
            for n in range(1, min(self.max_ngram, end) + 1):
                self.follows[tuple(self.tokens[end - n : end])] = end
            self.tokens.append(token)

    def lookup(self, num_tokens: int) -> LookupMatch | None:
        """`num_tokens` tokens that followed the longest suffix n-gram's latest earlier occurrence;
        None when no suffix occurred before or num_tokens < 1."""
        if num_tokens < 1:
            return None
        size = len(self.tokens)
        for n in range(min(self.max_ngram, size), 0, -1):
            start = self.follows.get(tuple(self.tokens[size - n :]))
            if start is not None:
                return LookupMatch(self._copy(start, num_tokens), n)
        return None

    def _copy(self, start: int, num_tokens: int) -> list[int]:
        """num_tokens tokens from `start` on, continuing into the copy itself past the end (an
        overlapping copy, as in LZ77: a period-p repetition keeps repeating)."""
        out: list[int] = []
        size = len(self.tokens)
        for i in range(start, start + num_tokens):
            out.append(self.tokens[i] if i < size else out[i - size])
        return out
