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


def test_variants_include_a_stub_and_exclusions_drop_every_variant(tmp_path):
    rows = code_prompts(seed=0, variants=2)
    ids = {r["id"] for r in rows}
    stubs = [r for r in rows if r["id"].endswith("-v2")]
    assert stubs and all(r["prompt"].startswith("Complete the following Python function") for r in stubs)
    assert all(r["id"].removesuffix("-v2") in ids for r in stubs)  # every stub has its plain variant
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"id": "' + stubs[0]["id"].removesuffix("-v2") + '", "prompt": "x"}\n')
    from d3d.training.code_prompts import ids_in

    kept = {r["id"] for r in code_prompts(seed=0, variants=2, exclude_ids=ids_in([str(dev)]))}
    name = stubs[0]["id"].removesuffix("-v2")
    assert name not in kept and name + "-v2" not in kept and len(kept) == len(ids) - 2
