"""The offline coding-prompt source gives distinct, well-formed prompts, reproducibly."""

from d3d.training.code_prompts import code_prompts, first_sentence


def test_prompts_are_distinct_reproducible_and_limited():
    rows = code_prompts(limit=50, seed=3)
    assert len(rows) == 50
    assert len({r["id"] for r in rows}) == 50 and len({r["prompt"] for r in rows}) == 50
    assert rows == code_prompts(limit=50, seed=3)
    assert all("Python" in r["prompt"] or "python" in r["prompt"].lower() for r in rows)


def test_first_sentence_rules():
    assert first_sentence("Return the sum of a and b.\n\nMore text.") == "return the sum of a and b."
    assert first_sentence("Short.") is None
    assert first_sentence(">>> example()") is None
