"""Tests for the sixth to the tenth task-family sets (task_families6/7/8/9/10.py) and their
`--families sixth` / `seventh` / `eighth` / `ninth` / `tenth` choices, one parametrized check per property.

Each set gets every check the earlier sets get: its doctest examples and other formats are checked
against the references with theirs in test_task_families.py; many names apart from the earlier
catalogues and HumanEval's, no 13-word n-gram shared with a HumanEval prompt and a deterministic choice
that draws from it alone with theirs in test_task_families4.py (its LATER_SETS); here, informative
examples, names apart from the earlier ones' with the constant taken off, every module imports downward
only, and (test_task_families5.py's checks) a name with the constant k ends with it, so a held-out
set's functions stay out under every k. And: no other choice draws from it, so the committed files
still come out of their seeds byte for byte, and its task file (the ninth to the thirteenth) asks for none of
its held-out prompts' functions. A later set joins by one more `FamilySet`.
"""

from __future__ import annotations

import ast
import inspect
import random
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

import pytest

from d3d.training import task_families6, task_families7, task_prompts, task_reference6, task_reference6b
from d3d.training import task_families8, task_reference7, task_reference7b, task_reference8, task_reference8b
from d3d.training import task_families9, task_reference9, task_reference9b
from d3d.training import task_families10, task_reference10, task_reference10b
from d3d.training.task_families import extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_families4 import fourth_tasks
from d3d.training.task_families5 import fifth_tasks
from d3d.training.task_families6 import sixth_tasks
from d3d.training.task_families7 import seventh_tasks
from d3d.training.task_families8 import eighth_tasks
from d3d.training.task_families9 import ninth_tasks
from d3d.training.task_families10 import tenth_tasks
from d3d.training.task_prompts import all_tasks, base_name
from tests.training.task_stubs import (DATA, K_VALUES, assert_file_asks_for_no_held_out_function,
                                      assert_held_out_functions_stay_out, names_of)


@dataclass(frozen=True)
class FamilySet:
    families: str  # its --families choice
    make: Callable  # k -> its tasks
    modules: tuple[ModuleType, ...]
    seed: int  # of the prompts drawn to check the set, as its task file's
    held_out_seed: int  # its held-out prompt file's
    earlier: tuple[Callable, ...]
    held_out_file: str
    task_file: str


FIRST_FIVE = (all_tasks, extra_tasks, third_tasks, fourth_tasks, fifth_tasks)
SETS = [
    FamilySet("sixth", sixth_tasks, (task_families6, task_reference6, task_reference6b), 9, 16, FIRST_FIVE,
              "task_dev6_prompts.jsonl", "task_prompts9.jsonl"),
    FamilySet("seventh", seventh_tasks, (task_families7, task_reference7, task_reference7b), 10, 17,
              FIRST_FIVE + (sixth_tasks,), "task_dev7_prompts.jsonl", "task_prompts10.jsonl"),
    FamilySet("eighth", eighth_tasks, (task_families8, task_reference8, task_reference8b), 11, 18,
              FIRST_FIVE + (sixth_tasks, seventh_tasks), "task_dev8_prompts.jsonl", "task_prompts11.jsonl"),
    FamilySet("ninth", ninth_tasks, (task_families9, task_reference9, task_reference9b), 12, 19,
              FIRST_FIVE + (sixth_tasks, seventh_tasks, eighth_tasks), "task_dev9_prompts.jsonl",
              "task_prompts12.jsonl"),
    FamilySet("tenth", tenth_tasks, (task_families10, task_reference10, task_reference10b), 13, 20,
              FIRST_FIVE + (sixth_tasks, seventh_tasks, eighth_tasks, ninth_tasks), "task_dev10_prompts.jsonl",
              "task_prompts13.jsonl"),
]
each_set = pytest.mark.parametrize("fs", SETS, ids=lambda fs: fs.families)


@each_set
def test_no_name_is_an_earlier_catalogues_with_its_constant_taken_off(fs):
    """Beyond test_task_families4's distinct names: apart from the earlier ones' base names too."""
    earlier_bases = {base_name(name) for name in set().union(*map(names_of, fs.earlier))}
    assert not {base_name(name) for name in names_of(fs.make)} & earlier_bases  # held out by name, apart


@each_set
def test_a_name_with_the_constant_ends_with_it_so_holding_out_covers_every_k(fs):
    """Task i has one base name under every k, and no two tasks share one."""
    bases = [[base_name(t.name) for t in fs.make(k)] for k in K_VALUES]
    assert all(b == bases[0] for b in bases) and len(set(bases[0])) == len(bases[0])


@pytest.mark.parametrize("module", [m for fs in SETS for m in fs.modules], ids=lambda m: m.__name__)
def test_the_modules_import_downward_only(module):
    source = inspect.getsource(module)
    assert ast.get_docstring(ast.parse(source))
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert "d3d.training.task_families" in imported and "d3d.training.task_prompts" not in imported


@each_set
@pytest.mark.parametrize("k", K_VALUES)
def test_every_tasks_examples_are_informative(fs, k):
    """Over 25 example inputs every task gives at least two answers, and no answer more than 22 times."""
    r = random.Random(k)
    for task in fs.make(k):
        answers = [repr(task.solve(*task.example(r))) for _ in range(25)]
        assert len(set(answers)) > 1 and max(map(answers.count, answers)) <= 22, (task.name, set(answers))


# Their doctest and other-format examples are checked against the references with every earlier
# set's, in tests/training/test_task_families.py (the "sixth" to "tenth" parameters).


@each_set
def test_only_its_own_choice_lists_the_set(fs):
    """Every other choice draws exactly what it drew before: none of them holds one of the set's tasks."""
    for k in (2, 7):
        assert [t.name for t in task_prompts.tasks_of(fs.families, k)] == [t.name for t in fs.make(k)]
        own = {t.name for t in fs.make(k)}
        for families in task_prompts.FAMILIES:
            if families != fs.families:
                assert not {t.name for t in task_prompts.tasks_of(families, k)} & own, families


@each_set
def test_a_held_out_sets_functions_stay_out_under_every_k(fs):
    assert_held_out_functions_stay_out(fs.families, fs.held_out_seed, fs.seed)


@each_set
def test_the_task_file_asks_for_none_of_the_held_out_sets_functions(fs):
    assert_file_asks_for_no_held_out_function(DATA / fs.held_out_file, DATA / fs.task_file, fs.families, fs.make)
