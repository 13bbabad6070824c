"""Tests for d3d.training.task_families5 and the `fifth` choice of `--families`.

test_task_families4.py makes of the fifth set the checks it makes of every later set (many names
apart from the earlier catalogues and HumanEval's, no 13-word n-gram shared with a HumanEval prompt,
imports downward only, a deterministic choice that draws from it alone), and test_task_families.py
those it makes of every catalogue (informative examples, doctest examples that pass against the
references, other formats that show what the reference returns). Here: its names that take the
constant k end with it, so a held-out set's functions stay out under every k, and the eighth task file asks for none of its held-out
prompts' functions. Every choice still lists exactly the catalogues it listed before, so the committed
files still come out of their seeds byte for byte.
"""

from __future__ import annotations

import ast
import inspect

from d3d.training import task_prompts, task_reference5
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
                                      assert_held_out_functions_stay_out)

SEED = 8  # of the prompts drawn to check the set, as the eighth file's


def test_a_name_with_the_constant_ends_with_it_so_holding_out_covers_every_k():
    """Task i has one base name under every k, and no two tasks share one."""
    bases = [[base_name(t.name) for t in fifth_tasks(k)] for k in K_VALUES]
    assert all(b == bases[0] for b in bases) and len(set(bases[0])) == len(bases[0])


def test_the_reference_module_imports_downward_only():
    source = inspect.getsource(task_reference5)
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert "d3d.training.task_families" in imported and "d3d.training.task_prompts" not in imported


def test_a_held_out_sets_fifth_functions_stay_out_under_every_k():
    assert_held_out_functions_stay_out("fifth", 15, SEED)


def test_the_eighth_file_asks_for_none_of_the_held_out_sets_functions():
    assert_file_asks_for_no_held_out_function(DATA / "task_dev5_prompts.jsonl", DATA / "task_prompts8.jsonl", "fifth",
                                              fifth_tasks)


def test_each_choice_lists_its_catalogues_in_order():
    """The fifth set is a choice of its own: every earlier choice draws exactly what it drew before."""
    expected = {"old": (all_tasks,), "new": (extra_tasks,), "all": (all_tasks, extra_tasks), "third": (third_tasks,),
                "every": (all_tasks, extra_tasks, third_tasks), "fourth": (fourth_tasks,), "fifth": (fifth_tasks,),
                "sixth": (sixth_tasks,), "seventh": (seventh_tasks,), "eighth": (eighth_tasks,),
                "ninth": (ninth_tasks,), "tenth": (tenth_tasks,)}
    assert set(expected) == set(task_prompts.FAMILIES)
    for families, makers in expected.items():
        for k in (2, 7):
            names = [t.name for t in task_prompts.tasks_of(families, k)]
            assert names == [t.name for make in makers for t in make(k)], families
