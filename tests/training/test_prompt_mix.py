"""Tests for d3d.training.prompt_mix: the offline prompt mix is deterministic, varied and well formed."""

from __future__ import annotations

import json

from d3d.training import prompt_mix


def test_the_same_seed_gives_the_same_file_and_another_seed_another(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, seed in ((a, 0), (b, 0), (c, 1)):
        assert prompt_mix.main(["--out", str(path), "--per-kind", "40", "--seed", str(seed)]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_every_kind_is_present_ids_unique_and_prompts_distinct():
    rows = prompt_mix.build_mix(per_kind=60, seed=3)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"math", "chat", "writing", "code"}
    assert len({r["id"] for r in rows}) == len(rows) == len({r["prompt"] for r in rows})
    assert all(isinstance(r["prompt"], str) and len(r["prompt"].split()) >= 3 for r in rows)
    assert json.loads(json.dumps(rows)) == rows
    math_at = [i for i, r in enumerate(rows) if r["kind"] == "math"]
    assert math_at[0] < len(rows) // 4 and math_at[-1] > 3 * len(rows) // 4  # shuffled: a --limit prefix is a mix


def test_code_tasks_carry_real_source_and_stubs_have_no_body():
    functions = prompt_mix.stdlib_functions()
    assert len(functions) > 100 and all(src.startswith(("def ", "async def ", "@")) for _, src, _ in functions)
    name, source, doc = next(f for f in functions if f[0] == "bisect.insort_right" or f[2])
    stub = prompt_mix.stub_prompt(name, source, doc)
    assert stub is not None and doc in stub and stub.count("return") <= doc.count("return")


def test_a_second_file_leaves_out_known_texts_and_keeps_its_ids_apart(tmp_path, capsys):
    first = tmp_path / "first.jsonl"
    assert prompt_mix.main(["--out", str(first), "--per-kind", "40", "--seed", "0"]) == 0
    second = tmp_path / "second.jsonl"
    args = ["--out", str(second), "--per-kind", "40", "--seed", "1", "--id-prefix", "s1-", "--skip-texts", str(first)]
    assert prompt_mix.main(args) == 0
    known = [json.loads(line) for line in first.read_text().splitlines()]
    rows = [json.loads(line) for line in second.read_text().splitlines()]
    alone = prompt_mix.build_mix(per_kind=40, seed=1)
    assert rows and len(rows) < len(alone)  # the same templates repeat some texts across seeds; those are gone
    assert not {r["prompt"] for r in rows} & {r["prompt"] for r in known}
    assert all(r["id"].startswith("s1-") for r in rows) and not {r["id"] for r in rows} & {r["id"] for r in known}
    assert prompt_mix.main(["--out", str(tmp_path / "x.jsonl"), "--skip-texts", str(tmp_path / "missing.jsonl")]) == 2
    assert "not found" in capsys.readouterr().err
