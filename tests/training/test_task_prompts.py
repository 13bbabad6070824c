"""Tests for d3d.training.task_prompts: HumanEval-shaped tasks whose examples are right, deterministic files."""

from __future__ import annotations

import json
import random
import re

import pytest

from d3d.errors import D3DError
from d3d.training import task_prompts
from tests.training.task_stubs import function_name, stub_code


def test_the_same_seed_gives_the_same_file_and_another_seed_another(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, seed in ((a, 0), (b, 0), (c, 1)):
        assert task_prompts.main(["--out", str(path), "--count", "80", "--seed", str(seed)]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_ids_unique_prompts_distinct_and_both_shapes_present():
    rows = task_prompts.build_tasks(400, seed=5, id_prefix="t5-")
    assert len(rows) == 400 and all(r["kind"] == "code" and r["id"].startswith("t5-") for r in rows)
    assert len({r["id"] for r in rows}) == len({r["prompt"] for r in rows}) == 400
    stubs = [r for r in rows if stub_code(r["prompt"])]
    assert 0.55 < len(stubs) / len(rows) < 0.85  # mostly stubs, some plain requests
    names = {re.search(r"def (\w+)\(", stub_code(r["prompt"])).group(1) for r in stubs}
    assert len(names) > 100  # many different tasks, not one task with different numbers


def test_descriptions_name_renamed_one_letter_arguments():
    task = next(t for t in task_prompts.all_tasks(3) if t.name == "largest_prime_factor")
    checked: set[str] = set()
    for seed in range(40):
        prompt = task_prompts.render(task, random.Random(seed))
        signature = re.search(r"largest_prime_factor\((\w+):", prompt)
        if signature is None:
            continue  # a request that names the function without its arguments
        arg = signature.group(1)
        checked.add(arg)
        assert re.search(rf"\b{arg}\b greater than 1", prompt), prompt
    assert len(checked) > 1  # the argument was renamed in some prompts


def test_a_count_below_one_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        task_prompts.main(["--out", "unused.jsonl", "--count", "0"])
    assert exit_info.value.code == 2
    assert "count must be at least 1" in capsys.readouterr().err


def test_skip_texts_leaves_out_an_earlier_files_prompts_and_still_meets_the_count(tmp_path):
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert task_prompts.main(["--out", str(first), "--count", "300", "--seed", "0", "--families", "all"]) == 0
    args = ["--out", str(second), "--count", "300", "--seed", "1", "--families", "all"]
    unskipped = task_prompts.build_tasks(300, seed=1, id_prefix="task2-", families="all")
    earlier = {json.loads(line)["prompt"] for line in first.read_text().splitlines()}
    assert earlier & {r["prompt"] for r in unskipped}  # the grammar repeats itself across seeds
    assert task_prompts.main(args + ["--skip-texts", str(first)]) == 0
    rows = [json.loads(line) for line in second.read_text().splitlines()]
    assert len(rows) == 300 and not earlier & {r["prompt"] for r in rows}


def test_a_missing_skip_texts_file_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        task_prompts.main(["--out", str(tmp_path / "o.jsonl"), "--skip-texts", str(tmp_path / "missing.jsonl")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "missing.jsonl" in err and "Traceback" not in err


def test_skip_functions_leaves_a_held_out_sets_functions_out_for_every_k(tmp_path, capsys):
    """Held out by function, not by text: no prompt of the new file asks for a held-out set's function
    under any constant k, while the rest of the catalogue is still drawn."""
    held_out, out = tmp_path / "held.jsonl", tmp_path / "out.jsonl"
    assert task_prompts.main(["--out", str(held_out), "--count", "48", "--seed", "14", "--families", "fourth"]) == 0
    texts = [json.loads(line)["prompt"] for line in held_out.read_text().splitlines()]
    every = [t for k in range(2, 8) for t in task_prompts.tasks_of("fourth", k)]
    held = task_prompts.functions_in(texts, "fourth")
    # every held-out prompt's function, read from each request format (`name(`, "called `name`")
    assert held == {task_prompts.base_name(function_name(text)) for text in texts}
    assert 10 < len(held) < len({task_prompts.base_name(t.name) for t in every})
    args = ["--out", str(out), "--count", "400", "--seed", "7", "--families", "fourth", "--skip-functions", str(held_out)]
    assert task_prompts.main(args) == 0
    assert f"{len(held)} held-out functions left out" in capsys.readouterr().out
    drawn = {task_prompts.base_name(function_name(json.loads(line)["prompt"])) for line in out.read_text().splitlines()}
    assert len(drawn) > 40 and not drawn & held, drawn & held


def test_holding_out_every_function_is_refused():
    every = [t for k in range(2, 8) for t in task_prompts.tasks_of("third", k)]
    with pytest.raises(D3DError, match="no third task is left"):
        task_prompts.build_tasks(10, seed=0, families="third",
                                 skip_functions=frozenset(task_prompts.base_name(t.name) for t in every))
