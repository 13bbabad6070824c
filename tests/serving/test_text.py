"""Streamed text: no broken characters, stop strings cut (also across chunks), held-back text released."""

from __future__ import annotations

from d3d.serving.text import TextStream


def byte_decode(ids: list[int]) -> str:
    """A byte-level tokenizer in miniature: every id is one UTF-8 byte."""
    return bytes(ids).decode("utf-8", errors="replace")


def ids_of(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def stream(text: str, stop: tuple[str, ...] = (), chunk: int = 1) -> list[str]:
    s = TextStream(byte_decode, stop)
    ids = ids_of(text)
    deltas = [s.push(ids[i : i + chunk]) for i in range(0, len(ids), chunk)]
    return deltas + [s.finish()]


def test_multibyte_characters_never_stream_broken():
    text = "héllo 🙂 wörld ✓"
    for chunk in (1, 2, 3):
        deltas = stream(text, chunk=chunk)
        assert "".join(deltas) == text
        assert not any("\ufffd" in d for d in deltas)


def test_stop_string_is_cut_even_across_chunks():
    for chunk in (1, 2, 5):
        deltas = stream("abc STOP def", ("STOP",), chunk)
        assert "".join(deltas) == "abc "
        assert not any("S" in d for d in deltas)


def test_a_stop_prefix_that_does_not_complete_is_released():
    s = TextStream(byte_decode, ("STOP",))
    assert s.push(ids_of("xx ST")) == "xx"  # "ST" (and one more) held back: it could start "STOP"
    assert s.push(ids_of("ARS ")) + s.finish() == " STARS "
    assert s.full_text == "xx STARS "


def test_earliest_of_several_stop_strings_wins():
    assert "".join(stream("one two three", ("three", "two"))) == "one "
