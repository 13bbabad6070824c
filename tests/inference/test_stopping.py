"""The stop checker finds a stop string exactly where the decoded output first contains it."""

from __future__ import annotations

import random

import pytest

from d3d.inference.stopping import IncrementalText, StopChecker

EMPTY = 0  # decodes to no text (a special token skipped in decoding)
LEAD = 1  # the first byte of a two-token character: decodes to "?" alone, "é" with TAIL after it
TAIL = 2


def sentencepiece_like(ids: list[int]) -> str:
    """A decode that is not additive: empty tokens, two-token characters, a leading space dropped."""
    out, i = [], 0
    while i < len(ids):
        t = ids[i]
        if t == LEAD:
            out.append("é" if i + 1 < len(ids) and ids[i + 1] == TAIL else "?")
            i += 2 if out[-1] == "é" else 1
            continue
        out.append("" if t == EMPTY else "?" if t == TAIL else f" t{t}")
        i += 1
    return "".join(out).removeprefix(" ")


def first_hit(tokens: list[int], stops: tuple[str, ...]) -> int | None:
    """Brute force: the index of the first token after which the whole decoded output holds a stop string."""
    return next((i for i in range(len(tokens)) if any(s in sentencepiece_like(tokens[: i + 1]) for s in stops)), None)


def test_empty_tokens_cannot_hide_a_stop_string():
    stop = StopChecker(1000, (), ("t5 t6",), sentencepiece_like)
    tokens = [5] + [EMPTY] * 40 + [6]
    assert stop.accept(tokens) == tokens and stop.reason == "stop_string"


@pytest.mark.parametrize("seed", range(30))
def test_stop_position_matches_brute_force(seed):
    rng = random.Random(seed)
    tokens = [rng.choice([EMPTY, EMPTY, LEAD, TAIL, 3, 4, 5, 6, 7, 8]) for _ in range(400)]
    text = sentencepiece_like(tokens)
    start = rng.randrange(len(text) - 12)
    stops = (text[start : start + rng.randint(2, 12)].strip() or "t3", "never there")
    stop = StopChecker(1000, (), stops, sentencepiece_like)
    kept = stop.accept(tokens)
    assert len(kept) - 1 == first_hit(tokens, stops) and stop.reason == "stop_string"


def test_incremental_text_equals_full_decode_and_freezes():
    rng = random.Random(0)
    tokens = [rng.choice([EMPTY, LEAD, TAIL, 3, 14, 159]) for _ in range(600)]
    text = IncrementalText(sentencepiece_like, keep=20)
    for i, t in enumerate(tokens):
        text.push(t)
        assert text.text == sentencepiece_like(tokens[: i + 1]), i
    assert len(text.window) < 60 and len(text.frozen) > 1000  # the window stays small


def test_eos_and_budget():
    stop = StopChecker(5, eos_token_ids=(9,))
    assert stop.accept([1, 9, 3]) == [1, 9] and stop.reason == "eos"
    stop = StopChecker(3)
    assert stop.accept([1, 2, 3, 4]) == [1, 2, 3] and stop.reason == "max_new_tokens" and stop.remaining == 0
